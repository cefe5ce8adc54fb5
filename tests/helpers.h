/* SPDX-License-Identifier: MIT */
/* tests/helpers.h — small shared pieces of the Criterion suites. */
#ifndef URSA_TESTS_HELPERS_H
#define URSA_TESTS_HELPERS_H

#include <criterion/criterion.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <ursa.h>

/* Absolute deadline ms milliseconds from now on clk (negative: in the past). */
struct timespec t_deadline(clockid_t clk, long ms);
/* Monotonic now in nanoseconds. */
uint64_t t_now_ns(void);
/* Sleep ms milliseconds. */
void t_sleep_ms(long ms);

/* Anonymous MAP_SHARED memory that survives fork(); zeroed. */
void *t_shared_alloc(size_t len);
void t_shared_free(void *p, size_t len);

/* Start n threads running fn(arg_i) where arg_i = (char *)args + i*stride;
 * t_join_all joins them. */
void t_spawn(pthread_t *tids, int n, void *(*fn)(void *), void *args, size_t stride);
void t_join_all(pthread_t *tids, int n);

/* fork() n children each running fn(i, arg) then _exit(0 on true, 1 on
 * false); returns true when all children exited 0. */
bool t_fork_all(int n, bool (*fn)(int i, void *arg), void *arg);

/* Skip the current test unless the kernel has the io_uring futex ops (and
 * WAITV when want_waitv). Prints the probe's reason. */
void t_require_uring_futex(bool want_waitv);

#endif
