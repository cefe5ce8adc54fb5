/* SPDX-License-Identifier: MIT */
/* tests/helpers.h — small shared pieces of the Criterion suites. */
#ifndef URSA_TESTS_HELPERS_H
#define URSA_TESTS_HELPERS_H

#include <criterion/criterion.h>
#include <liburing.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
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
/* Whether thread tid is asleep now (state S); false once it has exited. */
bool t_is_sleeping(pid_t tid);
/* For a test that defines its own syscall() (which then comes before libc's
 * for the library too, as kernel/futex.c calls it): call libc's with the
 * interposer's arguments, read as six longs (any call takes at most six). */
typedef long (*t_syscall_fn)(long, ...);
long t_syscall_real(long n, const long a[6]);
#define T_SYSCALL_ARGS(n, a)                                                                      \
	do {                                                                                      \
		va_list ap_;                                                                      \
		va_start(ap_, n);                                                                 \
		for (int i_ = 0; i_ < 6; i_++)                                                    \
			(a)[i_] = va_arg(ap_, long);                                              \
		va_end(ap_);                                                                      \
	} while (0)
/* For such an interposer: whether syscall n (futex op op) is a futex wake
 * (futex2's futex_wake, or futex(2)'s FUTEX_WAKE / FUTEX_WAKE_BITSET); and
 * a hold of the calling thread, in 1 ms sleeps, until *flag is set or ms
 * milliseconds passed: true if *flag was set (errno is kept). */
bool t_is_futex_wake(long n, long op);
bool t_hold_until(const atomic_int *flag, int ms);
/* Confine this process's calling thread (and the threads it creates
 * after) to one of the CPUs it may run on: the one-CPU spin policy
 * (kernel/arch.h) is chosen by the count at the library's first lock. */
void t_pin_one_cpu(void);

/* A child left blocked by a failed test must not outlive it (t_fork_all
 * waits for every child; the runner kills only the test process): call
 * first thing in a forked child. */
void t_die_with_parent(void);

/* Skip the current test unless the kernel has the io_uring futex ops (and
 * WAITV when want_waitv). Prints the probe's reason. */
void t_require_uring_futex(bool want_waitv);

/* Skip the current test unless the kernel offers futex_waitv, which the
 * blocking ursa_wait_any needs (Linux 5.16+, and no seccomp filter that
 * refuses it: podman's default profile did). ursa_wait_any's -ENOSYS
 * there is checked by wait_any/bad_input and tests/fault/seccomp.c. */
void t_require_futex_waitv(void);
/* Whether it does (the probe's answer). */
bool t_have_futex_waitv(void);

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
/* A ring that must come up: t_ring_init asserting success (skipping the
 * test where the kernel has no io_uring for this process: ENOSYS, EPERM). */
void t_ring(struct io_uring *r, unsigned entries, unsigned flags);
/* Submit, then reap CQEs (waiting 10 ms at a time) until one of ursa's ops
 * finishes, and return it; CQEs that are not ursa's are counted in *app
 * (may be NULL). NULL when none finished within timeout_ms. */
struct ursa_op *t_reap(struct io_uring *r, int *app, long timeout_ms);
/* Submit and reap for ms, asserting that no op finishes (a second time):
 * returns the number of application CQEs seen; ursa's auxiliary CQEs are
 * handled and not counted. */
int t_drain(struct io_uring *r, long ms);

/* The exclusion checker, for threads or (in t_shared_alloc memory)
 * processes: a holder of the lock under test calls t_excl_enter after
 * taking it exclusively and t_excl_leave before releasing it; a shared
 * (read) holder t_excl_enter_shared / t_excl_leave_shared. Any overlap the
 * lock should have prevented (two exclusive holders, or shared and
 * exclusive ones together), and any torn data a shared holder reads,
 * counts in violations. The bookkeeping is relaxed atomics, adding no
 * ordering of its own; counter and data are plain, written only by
 * exclusive holders: only the lock orders them, so a lock that fails to
 * loses counts and shows as a data race under ThreadSanitizer. */
struct t_excl {
	int exclusive; /* exclusive holders inside now */
	int shared;    /* shared holders inside now */
	int violations;
	long counter; /* exclusive entries */
	long data[4]; /* t_excl_write adds one to all; all equal */
};
static inline void t_excl_violation(struct t_excl *x)
{
	__atomic_fetch_add(&x->violations, 1, __ATOMIC_RELAXED);
}
static inline void t_excl_enter(struct t_excl *x)
{
	if (__atomic_fetch_add(&x->exclusive, 1, __ATOMIC_RELAXED) != 0 ||
	    __atomic_load_n(&x->shared, __ATOMIC_RELAXED) != 0)
		t_excl_violation(x);
	x->counter++;
}
/* An exclusive holder writes the data (t_excl_enter_shared checks it). */
static inline void t_excl_write(struct t_excl *x)
{
	for (int k = 0; k < 4; k++)
		x->data[k]++;
}
static inline void t_excl_leave(struct t_excl *x)
{
	__atomic_fetch_sub(&x->exclusive, 1, __ATOMIC_RELAXED);
}
static inline void t_excl_enter_shared(struct t_excl *x)
{
	__atomic_fetch_add(&x->shared, 1, __ATOMIC_RELAXED);
	if (__atomic_load_n(&x->exclusive, __ATOMIC_RELAXED) != 0)
		t_excl_violation(x);
	for (int k = 1; k < 4; k++) /* torn by an exclusive holder? */
		if (x->data[k] != x->data[0])
			t_excl_violation(x);
}
static inline void t_excl_leave_shared(struct t_excl *x)
{
	__atomic_fetch_sub(&x->shared, 1, __ATOMIC_RELAXED);
}
/* No violation, exactly entries exclusive entries, and the data all
 * equal. */
void t_excl_check(struct t_excl *x, long entries);

/* Hogs: n threads (at most 4) that take and release *m in a loop, a spin
 * of spin iterations inside, until t_hogs_stop joins them; rounds counts
 * their acquisitions. */
struct t_hogs {
	ursa_mutex_t *m;
	int spin;
	int n;
	atomic_int stop;
	atomic_long rounds;
	pthread_t t[4];
};
void t_hogs_start(struct t_hogs *h, ursa_mutex_t *m, int n, int spin);
void t_hogs_stop(struct t_hogs *h);

/* A waiter thread: it publishes its thread id, then runs wait(arg), a
 * blocking call that returns 0 or -errno. t_waiter_start returns once the
 * thread sleeps (t_wait_sleeping) and asserts it has not returned;
 * t_waiter_join joins it and returns what wait returned. */
struct t_waiter {
	pthread_t thread;
	int (*wait)(void *arg);
	void *arg;
	pid_t tid;
	atomic_int ret;
	atomic_int done;
};
void t_waiter_start(struct t_waiter *w, int (*wait)(void *arg), void *arg);
/* n waiters, waiter i on (char *)args + i*stride; returns once all sleep. */
void t_waiters_start(struct t_waiter *w, int n, int (*wait)(void *arg), void *args,
		     size_t stride);
bool t_waiter_done(struct t_waiter *w);
/* How many of the n waiters have returned. */
int t_waiters_done(struct t_waiter *w, int n);
/* Join the n waiters, asserting that each wait returned 0. */
void t_waiters_join_ok(struct t_waiter *w, int n);
int t_waiter_join(struct t_waiter *w);

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
