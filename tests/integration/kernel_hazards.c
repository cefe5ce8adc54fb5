/* SPDX-License-Identifier: MIT */
/*
 * tests/integration/kernel_hazards.c — kernel defects reported in the field
 * that ursa must not turn into lost wakeups.
 *
 * Partial wakes of an io_uring FUTEX_WAITV: before the April 2026 fix
 * ("io_uring/futex: ensure partial wakes are appropriately dequeued") a
 * FUTEX_WAITV woken through one of its entries could leave its other
 * entries queued on their futexes. A later wake on another word of the
 * vector then went to that stale entry instead of to the next real waiter,
 * which slept on. Here a ring wait-any on {S1, S2} is woken through S1, then
 * S2 is posted once while a second waiter (a blocked thread, or a ring wait)
 * sleeps on S2: that waiter must get it.
 *
 * Time namespaces: io_uring's IORING_TIMEOUT_ABS reads a monotonic
 * deadline in the host's time, not in the submitter's time namespace (the
 * futex calls convert it; kernel/timens.c). An async op's deadline in a
 * namespace whose monotonic clock is behind the host's fired at once, and
 * ahead of it, that much late. Here an op waits with a deadline 200 ms
 * ahead, in a namespace shifted each way: it must end -ETIMEDOUT, neither
 * before the deadline nor seconds after it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <liburing.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <ursa.h>

#include "tests/helpers.h"

#include <criterion/parameterized.h>

TestSuite(kernel_hazards, .timeout = 120);

#define ROUNDS 40

/* Reap one CQE within ms milliseconds; returns the op it finished (NULL: none
 * finished, e.g. a re-armed wait). Fails on a timeout. */
static struct ursa_op *reap_one(struct io_uring *r, long ms)
{
	struct __kernel_timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	struct io_uring_cqe *cqe;
	io_uring_submit(r);
	int rc = io_uring_wait_cqe_timeout(r, &cqe, &ts);
	cr_assert_eq(rc, 0, "no completion within %ld ms (%d): a lost wakeup", ms, rc);
	struct ursa_op *done = NULL;
	cr_assert_eq(ursa_handle_cqe(r, cqe, &done), 1, "a CQE that is not ursa's");
	io_uring_cqe_seen(r, cqe);
	return done;
}

static void finish(struct io_uring *r, struct ursa_op *op, long ms)
{
	while (reap_one(r, ms) != op)
		;
}

/* The thread's scheduler state letter from /proc (S: asleep). */
static char task_state(pid_t tid)
{
	char path[64], buf[256];
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	FILE *f = fopen(path, "r");
	if (!f)
		return '?';
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	char *p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : '?';
}

struct next_waiter {
	ursa_sem_t *s2;
	atomic_int tid;
	int res;
};

static void *blocked_on_s2(void *arg)
{
	struct next_waiter *w = arg;
	atomic_store(&w->tid, (int)syscall(SYS_gettid));
	struct timespec dl = t_deadline(CLOCK_MONOTONIC, 5000);
	w->res = ursa_sem_timedwait(w->s2, CLOCK_MONOTONIC, &dl);
	return NULL;
}

static void partial_wake(unsigned flags, bool next_in_ring)
{
	t_require_uring_futex(true);
	struct io_uring r;
	cr_assert_eq(io_uring_queue_init(16, &r, 0), 0);
	for (int round = 0; round < ROUNDS; round++) {
		ursa_sem_t s1, s2;
		cr_assert_eq(ursa_sem_init(&s1, 0, flags), 0);
		cr_assert_eq(ursa_sem_init(&s2, 0, flags), 0);
		ursa_waitable_t v[2] = {{URSA_WAIT_SEM, &s1}, {URSA_WAIT_SEM, &s2}};
		struct ursa_op any = URSA_OP_INIT, next = URSA_OP_INIT;

		/* The wait-any: armed in the kernel once submit returns (no
		 * SQPOLL: io_uring_enter issues the FUTEX_WAITV inline). */
		cr_assert_eq(ursa_wait_any_async(&r, v, 2, &any), 0);
		cr_assert_geq(io_uring_submit(&r), 1);

		/* The next waiter on S2, asleep (or armed) behind it. */
		struct next_waiter w = {&s2, 0, -1};
		pthread_t t;
		if (next_in_ring) {
			cr_assert_eq(ursa_sem_wait_async(&r, &s2, &next), 0);
			cr_assert_geq(io_uring_submit(&r), 1);
		} else {
			cr_assert_eq(pthread_create(&t, NULL, blocked_on_s2, &w), 0);
			while (atomic_load(&w.tid) == 0 || task_state(atomic_load(&w.tid)) != 'S')
				sched_yield();
		}

		/* Wake the wait-any through its first entry: it takes S1. */
		cr_assert_eq(ursa_sem_post(&s1), 0);
		finish(&r, &any, 5000);
		cr_assert_eq(any.res, 0, "round %d: wait-any took %d, not S1", round, any.res);

		/* One post of S2 must reach the next waiter, not a stale entry
		 * of the finished wait-any. */
		cr_assert_eq(ursa_sem_post(&s2), 0);
		if (next_in_ring) {
			finish(&r, &next, 5000);
			cr_assert_eq(next.res, 0, "round %d: ring waiter on S2: %d", round, next.res);
		} else {
			cr_assert_eq(pthread_join(t, NULL), 0);
			cr_assert_eq(w.res, 0, "round %d: blocked waiter on S2: %d (lost wakeup)",
				     round, w.res);
		}
		cr_assert_eq(ursa_sem_value(&s1), 0);
		cr_assert_eq(ursa_sem_value(&s2), 0);
		cr_assert_eq(ursa_sem_destroy(&s1), 0);
		cr_assert_eq(ursa_sem_destroy(&s2), 0, "a waiter left registered on S2");
	}
	io_uring_queue_exit(&r);
}

Test(kernel_hazards, waitv_partial_wake_then_blocked_waiter)
{
	partial_wake(0, false);
}

Test(kernel_hazards, waitv_partial_wake_then_blocked_waiter_shared)
{
	partial_wake(URSA_SHARED, false);
}

Test(kernel_hazards, waitv_partial_wake_then_ring_waiter)
{
	partial_wake(0, true);
}

Test(kernel_hazards, waitv_partial_wake_then_ring_waiter_shared)
{
	partial_wake(URSA_SHARED, true);
}

/* ---- time namespaces --------------------------------------------------- */

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x80
#endif

/* In the namespace: 0 right; 3 an early end, 4 no end within 3 s, 5 a
 * wrong result, 6 the blocking timed lock wrong, 7 the wait re-armed over
 * and over (its timeout fired early each time and ursa, seeing its
 * deadline not passed, armed it again), 2 no ring. */
static int timens_waits(void)
{
	struct io_uring r;
	if (io_uring_queue_init(4, &r, 0))
		return 2;
	static ursa_mutex_t m;
	ursa_mutex_init(&m, 0);
	ursa_mutex_lock(&m);
	/* The blocking path (the futex calls convert the deadline). */
	uint64_t t0 = t_now_ns();
	struct timespec dl = t_deadline(CLOCK_MONOTONIC, 200);
	if (ursa_mutex_timedlock(&m, CLOCK_MONOTONIC, &dl) != -ETIMEDOUT ||
	    t_now_ns() - t0 < 190000000u)
		return 6;
	/* The ring. */
	struct ursa_op op = URSA_OP_INIT;
	dl = t_deadline(CLOCK_MONOTONIC, 200);
	t0 = t_now_ns();
	if (ursa_op_set_deadline(&op, CLOCK_MONOTONIC, &dl) || ursa_mutex_lock_async(&r, &m, &op))
		return 5;
	int cqes = 0;
	while (t_now_ns() - t0 < 3000000000u) {
		io_uring_submit(&r);
		struct io_uring_cqe *cqe;
		struct __kernel_timespec ts = {0, 20 * 1000000};
		if (io_uring_wait_cqe_timeout(&r, &cqe, &ts))
			continue;
		struct ursa_op *done = NULL;
		ursa_handle_cqe(&r, cqe, &done);
		io_uring_cqe_seen(&r, cqe);
		cqes++;
		if (!done)
			continue;
		uint64_t took = t_now_ns() - t0;
		fprintf(stderr, "timens child: the op ended %d after %.1f ms, %d CQEs\n", done->res,
			(double)took / 1e6, cqes);
		if (done->res != -ETIMEDOUT)
			return 5;
		/* One wait and its timeout; a spurious wake or two at most. */
		return took < 190000000u ? 3 : cqes > 8 ? 7 : 0;
	}
	return 4;
}

/* Fork a child that makes a time namespace for its own children, shifted
 * by off_s seconds, and runs timens_waits in a child of its own there.
 * Returns its exit status; 77: no time namespace here. */
static int in_timens(long off_s)
{
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		t_die_with_parent();
		alarm(30);
		if (unshare(CLONE_NEWTIME) != 0)
			_exit(77); /* no CONFIG_TIME_NS, or not privileged */
		FILE *f = fopen("/proc/self/timens_offsets", "w");
		if (!f)
			_exit(77);
		fprintf(f, "monotonic %ld 0", off_s);
		if (fclose(f) != 0)
			_exit(77);
		pid_t c = fork();
		if (c < 0)
			_exit(1);
		if (c == 0)
			_exit(timens_waits());
		int st;
		if (waitpid(c, &st, 0) != c || !WIFEXITED(st))
			_exit(1);
		_exit(WEXITSTATUS(st));
	}
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st), "killed by signal %d", WTERMSIG(st));
	return WEXITSTATUS(st);
}

ParameterizedTestParameters(kernel_hazards, async_deadline_in_time_namespace)
{
	/* Behind the host's clock by 10 s (at most half the time since boot:
	 * a namespace's clock may not go below 0), and ahead by 10 s. */
	static long behind[] = {-10, 10};
	return cr_make_param_array(long, behind, 2);
}

ParameterizedTest(long *off, kernel_hazards, async_deadline_in_time_namespace)
{
	t_require_uring_futex(false);
	long off_s = *off;
	if (off_s < 0) {
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec < 4)
			cr_skip_test("booted %lds ago: too soon for a clock behind the host's",
				     (long)now.tv_sec);
		if (-off_s > now.tv_sec / 2)
			off_s = -(now.tv_sec / 2);
	}
	int rc = in_timens(off_s);
	if (rc == 77)
		cr_skip_test("no time namespace here (CONFIG_TIME_NS, CAP_SYS_ADMIN)");
	cr_assert_neq(rc, 3, "shifted %+lds: the deadline fired early", off_s);
	cr_assert_neq(rc, 4, "shifted %+lds: no end within 3 s of a 200 ms deadline", off_s);
	cr_assert_neq(rc, 7, "shifted %+lds: the wait was re-armed over and over", off_s);
	cr_assert_eq(rc, 0, "shifted %+lds: child status %d (timens_waits)", off_s, rc);
}
