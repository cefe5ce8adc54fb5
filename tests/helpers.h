/* SPDX-License-Identifier: MIT */
/* tests/helpers.h — small shared pieces of the Criterion suites. */
#ifndef URSA_TESTS_HELPERS_H
#define URSA_TESTS_HELPERS_H

#include <criterion/criterion.h>
#include <liburing.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>
#include <ursa.h>

/* Absolute deadline ms milliseconds from now on clk (negative: in the past). */
struct timespec t_deadline(clockid_t clk, long ms);
/* Monotonic now in nanoseconds. */
uint64_t t_now_ns(void);
/* Sleep ms milliseconds. */
void t_sleep_ms(long ms);
/* n scaled by URSA_TEST_SCALE (a factor, default 1), at least 1: the
 * iteration count of a long contention loop. The ThreadSanitizer tree runs
 * with a smaller factor (tests/local.mk). */
long t_iters(long n);

/* The calling thread's voluntary context switches so far
 * (getrusage(RUSAGE_THREAD).ru_nvcsw): every sleep in the kernel — a
 * futex wait that blocked — adds one, a preemption does not. A call that
 * must not sleep leaves it unchanged. */
long t_nvcsw(void);

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

/* Wait until thread tid is asleep (state S: in these tests only a futex
 * wait puts a waiter thread there; it yields while it is not). */
void t_wait_sleeping(pid_t tid);
/* A child left blocked by a failed test must not outlive it (t_fork_all
 * waits for every child; the runner kills only the test process): call
 * first thing in a forked child. */
void t_die_with_parent(void);

/* Skip the current test unless the kernel has the io_uring futex ops (and
 * WAITV when want_waitv). Prints the probe's reason. */
void t_require_uring_futex(bool want_waitv);

/* Ring setups. Every ring a suite creates goes through t_ring_init*, which
 * adds the setup named by URSA_TEST_RING_SETUP — "default" (none, the
 * default), "sqpoll" (IORING_SETUP_SQPOLL), "coop" (COOP_TASKRUN) or
 * "defer" (SINGLE_ISSUER|DEFER_TASKRUN) — to the caller's flags, and skips
 * the test when the kernel refuses that setup; so each suite runs
 * unchanged over every setup, as liburing's tests loop over setup flags
 * (make check-ring-setups). The suites keep calling io_uring_queue_init*:
 * the macros below route them here. */
const char *t_ring_setup_name(void);
unsigned t_ring_setup_flags(void);
int t_ring_init(unsigned entries, struct io_uring *r, unsigned flags);
int t_ring_init_params(unsigned entries, struct io_uring *r, struct io_uring_params *p);
#ifndef URSA_TESTS_HELPERS_C
#define io_uring_queue_init(entries, r, flags) t_ring_init(entries, r, flags)
#define io_uring_queue_init_params(entries, r, p) t_ring_init_params(entries, r, p)
#endif

#if !defined(URSA_CRITERION_PLAIN) && !defined(URSA_TESTS_HELPERS_C)
#include <criterion/hooks.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
/* A suite whose every test skipped (no io_uring futex operations, say)
 * exits 77, automake's SKIP, not 0 (PASS) — as the plain runner does. The
 * status is replaced at exit, after Criterion's summary. */
static void t_exit_skipped(void)
{
	fflush(NULL);
	_exit(77);
}
ReportHook(POST_ALL)(struct criterion_global_stats *stats)
{
	if (stats->nb_tests > 0 && stats->tests_skipped == stats->nb_tests)
		atexit(t_exit_skipped);
}
#endif

#endif
