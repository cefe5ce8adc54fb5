/* SPDX-License-Identifier: MIT */
/* tests/unit/latch.c — the countdown latch: blocked threads, ring waiters
 * and processes on one latch; nobody released early, nobody left behind. */
#include "tests/helpers.h"

#include <criterion/criterion.h>
#include <liburing.h>
#include <stdatomic.h>
#include <string.h>
#include <ursa.h>

Test(latch, bad_input)
{
	ursa_latch_t l;
	char buf[16] __attribute__((aligned(8)));
	cr_assert_eq(ursa_latch_init(NULL, 1, 0), -EINVAL);
	cr_assert_eq(ursa_latch_init((ursa_latch_t *)(buf + 1), 1, 0), -EINVAL);
	cr_assert_eq(ursa_latch_init(&l, 1, 0x100), -EINVAL);
	cr_assert_eq(ursa_latch_init(&l, URSA_LATCH_COUNT_MAX + 1u, 0), -EINVAL);
	cr_assert_eq(ursa_latch_init(&l, 2, 0), 0);
	cr_assert_eq(ursa_latch_count_down(&l, 3), -EINVAL, "more than is left");
	cr_assert_eq(ursa_latch_trywait(&l), -EBUSY, "unchanged by the refused count_down");
	cr_assert_eq(ursa_latch_count_down(&l, 0), 0);
	cr_assert_eq(ursa_latch_count_down(&l, 2), 0);
	cr_assert_eq(ursa_latch_trywait(&l), 0);
	cr_assert_eq(ursa_latch_count_down(&l, 1), -EINVAL, "an open latch has nothing left");
	struct timespec bad = {0, 1000000000L};
	cr_assert_eq(ursa_latch_timedwait(&l, CLOCK_MONOTONIC, &bad), -EINVAL);
	cr_assert_eq(ursa_latch_timedwait(&l, CLOCK_PROCESS_CPUTIME_ID, NULL), -EINVAL);
	cr_assert_eq(ursa_latch_wait(NULL), -EINVAL);
	cr_assert_eq(ursa_latch_destroy(NULL), -EINVAL);
	ursa_latch_t zero = URSA_LATCH_INIT;
	cr_assert_eq(ursa_latch_wait(&zero), 0, "all-zero is an open latch");
	cr_assert_eq(ursa_latch_destroy(&zero), 0);
}

Test(latch, timeout_leaves_nothing_registered)
{
	ursa_latch_t l;
	ursa_latch_init(&l, 1, 0);
	struct timespec dl = t_deadline(CLOCK_MONOTONIC, 20);
	cr_assert_eq(ursa_latch_timedwait(&l, CLOCK_MONOTONIC, &dl), -ETIMEDOUT);
	dl = t_deadline(CLOCK_REALTIME, -1);
	cr_assert_eq(ursa_latch_timedwait(&l, CLOCK_REALTIME, &dl), -ETIMEDOUT);
	cr_assert_eq(ursa_latch_destroy(&l), 0);
	cr_assert_eq(ursa_latch_count_down(&l, 1), 0);
	cr_assert_eq(ursa_latch_timedwait(&l, CLOCK_REALTIME, &dl), 0, "open: no timeout");
}

/* N threads wait, M threads count down one each; no waiter returns before
 * the last count_down has started. Repeated, so the wake races every phase
 * of the waiters' step. */
enum { NWAIT = 6, NDOWN = 4 };
static ursa_latch_t tl;
static atomic_int downs_started, early;

static void *waiter(void *arg)
{
	(void)arg;
	cr_assert_eq(ursa_latch_wait(&tl), 0);
	if (atomic_load(&downs_started) < NDOWN)
		atomic_fetch_add(&early, 1);
	return NULL;
}

static void *downer(void *arg)
{
	(void)arg;
	atomic_fetch_add(&downs_started, 1);
	cr_assert_eq(ursa_latch_count_down(&tl, 1), 0);
	return NULL;
}

Test(latch, threads_released_only_at_zero)
{
	for (int round = 0; round < 200; round++) {
		ursa_latch_init(&tl, NDOWN, round & 1 ? URSA_SHARED : 0);
		atomic_store(&downs_started, 0);
		pthread_t w[NWAIT], d[NDOWN];
		t_spawn(w, NWAIT, waiter, NULL, 0);
		t_spawn(d, NDOWN, downer, NULL, 0);
		t_join_all(d, NDOWN);
		t_join_all(w, NWAIT);
		cr_assert_eq(ursa_latch_destroy(&tl), 0, "round %d: a registration left", round);
	}
	cr_assert_eq(atomic_load(&early), 0, "a waiter left before the last count_down");
}

static struct ursa_op *reap(struct io_uring *r)
{
	for (;;) {
		struct io_uring_cqe *cqe;
		io_uring_submit_and_wait(r, 1);
		cr_assert_eq(io_uring_wait_cqe(r, &cqe), 0);
		struct ursa_op *done = NULL;
		cr_assert_eq(ursa_handle_cqe(r, cqe, &done), 1, "only ursa's CQEs here");
		io_uring_cqe_seen(r, cqe);
		if (done)
			return done;
	}
}

static void *count_down_later(void *arg)
{
	t_sleep_ms(5);
	cr_assert_eq(ursa_latch_count_down(arg, 1), 0);
	return NULL;
}

/* A ring waiter and a blocked thread on one latch; destroy says -EBUSY
 * while the ring op waits (queued, then submitted), 0 once its CQE is in. */
static void ring_and_thread(unsigned flags)
{
	t_require_uring_futex(false);
	struct io_uring r;
	cr_assert_eq(io_uring_queue_init(8, &r, 0), 0);
	ursa_latch_t l;
	ursa_latch_init(&l, 1, flags);
	struct ursa_op op = URSA_OP_INIT;
	cr_assert_eq(ursa_latch_wait_async(&r, &l, &op), 0);
	cr_assert_eq(ursa_latch_destroy(&l), -EBUSY, "a queued ring op waits");
	io_uring_submit(&r);
	cr_assert_eq(ursa_latch_destroy(&l), -EBUSY, "a submitted ring op waits");
	pthread_t t;
	t_spawn(&t, 1, count_down_later, &l, 0);
	cr_assert_eq(ursa_latch_wait(&l), 0);
	cr_assert_eq(reap(&r), &op);
	cr_assert_eq(op.res, 0);
	t_join_all(&t, 1);
	cr_assert_eq(ursa_latch_destroy(&l), 0);
	struct ursa_op op2 = URSA_OP_INIT;
	cr_assert_eq(ursa_latch_wait_async(&r, &l, &op2), 1, "open: finished at once");
	cr_assert_eq(op2.res, 0);
	io_uring_queue_exit(&r);
}

Test(latch, ring_and_thread_private)
{
	ring_and_thread(0);
}

Test(latch, ring_and_thread_shared)
{
	ring_and_thread(URSA_SHARED);
}

Test(latch, ring_deadline_and_cancel)
{
	t_require_uring_futex(false);
	struct io_uring r;
	cr_assert_eq(io_uring_queue_init(8, &r, 0), 0);
	ursa_latch_t l;
	ursa_latch_init(&l, 1, 0);
	struct ursa_op op = URSA_OP_INIT;
	struct timespec dl = t_deadline(CLOCK_MONOTONIC, 10);
	cr_assert_eq(ursa_op_set_deadline(&op, CLOCK_MONOTONIC, &dl), 0);
	cr_assert_eq(ursa_latch_wait_async(&r, &l, &op), 0);
	cr_assert_eq(reap(&r), &op);
	cr_assert_eq(op.res, -ETIMEDOUT);
	cr_assert_eq(ursa_latch_wait_async(&r, &l, &op), 0);
	io_uring_submit(&r);
	cr_assert_eq(ursa_op_cancel(&r, &op), 0);
	cr_assert_eq(reap(&r), &op);
	cr_assert_eq(op.res, -ECANCELED);
	cr_assert_eq(ursa_latch_destroy(&l), 0, "nothing left registered");
	io_uring_queue_exit(&r);
}

/* Processes: children wait on a URSA_SHARED latch in MAP_SHARED memory
 * until another child counts it down (no threads: fork copies none). */
static bool child(int i, void *arg)
{
	if (i == 0) {
		t_sleep_ms(50); /* the waiters are most likely asleep by then */
		for (int k = 0; k < 3; k++)
			if (ursa_latch_count_down(arg, 1) != 0)
				return false;
		return true;
	}
	return ursa_latch_wait(arg) == 0;
}

Test(latch, processes)
{
	ursa_latch_t *l = t_shared_alloc(sizeof(*l));
	ursa_latch_init(l, 3, URSA_SHARED);
	cr_assert(t_fork_all(5, child, l));
	cr_assert_eq(ursa_latch_trywait(l), 0);
	cr_assert_eq(ursa_latch_destroy(l), 0);
	t_shared_free(l, sizeof(*l));
}
