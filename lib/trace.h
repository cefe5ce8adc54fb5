/* SPDX-License-Identifier: MIT */
/*
 * lib/trace.h — USDT probes (provider "ursa") on the slow paths.
 *
 * URSA_TRACE(name, args...) marks a probe point. Built with <sys/sdt.h>
 * (systemtap-sdt-dev; configure defines HAVE_SYS_SDT_H unless
 * --disable-usdt) it is one nop plus a note in .note.stapsdt that perf,
 * bpftrace and systemtap attach to at run time, without a rebuild; without
 * it, nothing. Probes sit only where a thread is about to sleep, has slept,
 * hands a lock off or wakes others — never on a fast path — and their
 * arguments are values already at hand (pointers, counts, results).
 *
 *   perf probe -x libursa.so sdt_ursa:mutex_wait_begin
 *   perf stat -e sdt_ursa:mutex_wait_begin ./program
 *
 * Probes (arguments in order):
 *   mutex_wait_begin(m)  mutex_wait_end(m, rc)  mutex_handoff(m)
 *   rwlock_rdwait_begin(rw)  rwlock_rdwait_end(rw, rc)
 *   rwlock_wrwait_begin(rw)  rwlock_wrwait_end(rw, rc)
 *   sem_wait_begin(s)  sem_wait_end(s, rc)
 *   wake_batch(ring, n)         n FUTEX_WAKE SQEs submitted at once
 *   async_arm(op, addr, kind)   a ring wait queued on the futex word addr
 *   async_refused(op, rc)       no SQ room to re-arm even after a submit: rc
 *                               the submit's -errno (-EBUSY: it took nothing)
 *   async_complete(op, res)     the op is over, op->res = res
 * (_begin: entering the slow path, which may still take without sleeping;
 * _end: leaving it with rc, 0 or -errno.)
 */
#ifndef URSA_LIB_TRACE_H
#define URSA_LIB_TRACE_H

#include "config.h"

#ifdef HAVE_SYS_SDT_H
#define SDT_USE_VARIADIC 1 /* STAP_PROBEV: any number of arguments */
#include <sys/sdt.h>
#define URSA_TRACE(...) STAP_PROBEV(ursa, __VA_ARGS__)
#else
#define URSA_TRACE(...) ((void)0)
#endif

#endif
