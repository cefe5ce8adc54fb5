/* SPDX-License-Identifier: MIT */
/*
 * tests/fault/cond_rt.c — a condvar signal's wake taken by a real-time
 * waiter that came after it. The kernel's futex queue is FIFO only among
 * waiters of one priority: it queues real-time (SCHED_FIFO/RR/DEADLINE)
 * waiters ahead of the others. A waiter that registered after a signal's
 * increment of the sequence but before its wake could therefore take the
 * wake meant for an older waiter, find no signal since its own snapshot and
 * sleep again; the older waiter slept on, counted as signalled, and every
 * later signal and broadcast saw "every waiter's wake on its way" and did
 * nothing (found by review; lib/cond.c now passes such a wake on).
 *
 * A waits (an ordinary thread). The main thread signals once; this
 * program's syscall() comes before libc's for the library too (kernel/
 * futex.c wakes through it), so the signal's wake is held up until B, a
 * SCHED_FIFO thread, is asleep on the condvar with a 300 ms deadline. Then
 * the wake goes to B (the kernel's choice), and A must still wake, with no
 * other signal: it fails if A is still asleep 5 s later. Skips where this
 * process may not make a SCHED_FIFO thread.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "tests/helpers.h"

#include <ursa/async.h>

TestSuite(fault_cond_rt, .timeout = 60);

#ifndef SYS_futex_wake
#define SYS_futex_wake 454
#endif

static ursa_cond_t c;
static ursa_mutex_t m;
static atomic_int hook_armed, in_window, b_in, b_tid, a_done, b_done;
static int a_res = 99, b_res = 99;

__attribute__((no_sanitize("address", "thread", "undefined"))) long syscall(long n, ...)
{
	long a[6];
	T_SYSCALL_ARGS(n, a);
	if ((n == SYS_futex_wake || n == SYS_futex) && a[0] == (long)&c.__seq &&
	    atomic_exchange(&hook_armed, 0)) {
		/* The signaller, preempted between its increment and its
		 * wake: B comes and sleeps meanwhile. */
		int e = errno;
		atomic_store(&in_window, 1);
		while (!atomic_load(&b_in))
			usleep(1000);
		while (!atomic_load(&b_tid))
			usleep(1000);
		t_wait_sleeping((pid_t)atomic_load(&b_tid));
		errno = e;
	}
	return t_syscall_real(n, a);
}

static void *thr_a(void *x)
{
	(void)x;
	ursa_mutex_lock(&m);
	a_res = ursa_cond_wait(&c, &m);
	ursa_mutex_unlock(&m);
	atomic_store(&a_done, 1);
	return NULL;
}

static bool b_ring; /* B waits in its own ring (ursa_cond_wait_async) */

/* B starts its wait only once the signal has moved the sequence (it is in
 * the window before the signal's wake). A ring wait is queued by the thread
 * that submits it, at its priority. */
static void *thr_b(void *x)
{
	(void)x;
	struct io_uring r;
	if (b_ring)
		cr_assert_eq(io_uring_queue_init(8, &r, 0), 0);
	atomic_store(&b_tid, (int)gettid());
	while (!atomic_load(&in_window))
		usleep(200);
	ursa_mutex_lock(&m);
	struct timespec dl = t_deadline(CLOCK_MONOTONIC, 300);
	if (!b_ring) {
		atomic_store(&b_in, 1);
		b_res = ursa_cond_timedwait(&c, &m, CLOCK_MONOTONIC, &dl);
	} else {
		struct ursa_op op = URSA_OP_INIT;
		cr_assert_eq(ursa_op_set_deadline(&op, CLOCK_MONOTONIC, &dl), 0);
		cr_assert_eq(ursa_cond_wait_async(&r, &c, &m, &op), 0);
		atomic_store(&b_in, 1);
		cr_assert_eq(t_reap(&r, NULL, 5000), &op, "B's ring wait never finished");
		b_res = op.res;
		io_uring_queue_exit(&r);
	}
	ursa_mutex_unlock(&m);
	atomic_store(&b_done, 1);
	return NULL;
}

static void *nothing(void *x)
{
	return x;
}

static void run(bool ring)
{
	b_ring = ring;
	for (int shared = 0; shared < 2; shared++) {
		cr_assert_eq(ursa_cond_init(&c, shared ? URSA_SHARED : 0), 0);
		cr_assert_eq(ursa_mutex_init(&m, shared ? URSA_SHARED : 0), 0);
		atomic_store(&a_done, 0);
		atomic_store(&b_done, 0);
		atomic_store(&b_in, 0);
		atomic_store(&b_tid, 0);
		pthread_attr_t at;
		cr_assert_eq(pthread_attr_init(&at), 0);
		struct sched_param sp = {.sched_priority = 1};
		pthread_attr_setinheritsched(&at, PTHREAD_EXPLICIT_SCHED);
		pthread_attr_setschedpolicy(&at, SCHED_FIFO);
		pthread_attr_setschedparam(&at, &sp);
		pthread_t a, b;
		/* May this process make a SCHED_FIFO thread? */
		int r = pthread_create(&b, &at, nothing, NULL);
		if (r == EPERM)
			cr_skip_test("no SCHED_FIFO thread allowed here (EPERM): needs root or "
				     "RLIMIT_RTPRIO");
		cr_assert_eq(r, 0);
		cr_assert_eq(pthread_join(b, NULL), 0);
		atomic_store(&in_window, 0);

		cr_assert_eq(pthread_create(&a, NULL, thr_a, NULL), 0);
		while ((__atomic_load_n(&c.__waiters, __ATOMIC_ACQUIRE) & 0xffffu) != 1)
			usleep(1000);
		/* A registered holding m; once m is free again it is in its
		 * wait: let it reach its sleep. */
		cr_assert_eq(ursa_mutex_lock(&m), 0);
		cr_assert_eq(ursa_mutex_unlock(&m), 0);
		usleep(20000);
		cr_assert_eq(pthread_create(&b, &at, thr_b, NULL), 0);
		atomic_store(&hook_armed, 1);
		cr_assert_eq(ursa_cond_signal(&c), 0); /* for A, the only waiter */
		for (int i = 0; i < 5000 && !atomic_load(&a_done); i++)
			usleep(1000);
		cr_assert(atomic_load(&a_done),
			  "A sleeps on, its signal's wake taken by the later SCHED_FIFO waiter "
			  "(__waiters %#x)",
			  c.__waiters);
		cr_assert_eq(pthread_join(a, NULL), 0);
		cr_assert_eq(a_res, 0);
		cr_assert_eq(pthread_join(b, NULL), 0);
		cr_assert(b_res == 0 || b_res == -ETIMEDOUT, "B: %d", b_res);
		cr_assert_eq(ursa_cond_destroy(&c), 0);
		pthread_attr_destroy(&at);
	}
}

Test(fault_cond_rt, signal_taken_by_a_later_realtime_waiter_is_passed_on)
{
	run(false);
}

/* The same with B's wait in a ring of its own, submitted from the SCHED_FIFO
 * thread: its CQE (a wake) makes the op step and pass the wake on. */
Test(fault_cond_rt, signal_taken_by_a_later_realtime_ring_waiter_is_passed_on)
{
	t_require_uring_futex(false);
	run(true);
}
