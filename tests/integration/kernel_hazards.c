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
 */
#define _GNU_SOURCE
#include <errno.h>
#include <liburing.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <ursa.h>

#include "tests/helpers.h"

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
