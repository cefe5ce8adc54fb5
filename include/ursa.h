/* SPDX-License-Identifier: MIT */
/*
 * ursa.h — lock and sync primitives for Linux, waitable by blocking a
 * thread (futex) or inside an io_uring (IORING_OP_FUTEX_*), on the same
 * object. Include this one header.
 */
#ifndef URSA_H
#define URSA_H

#include <ursa/common.h>
#include <ursa/probe.h>
#include <ursa/mutex.h>
#include <ursa/rwlock.h>
#include <ursa/cond.h>
#include <ursa/sem.h>
#include <ursa/event.h>
#include <ursa/latch.h>
#include <ursa/waitq.h>
#include <ursa/wait_any.h>
#include <ursa/async.h>

#endif
