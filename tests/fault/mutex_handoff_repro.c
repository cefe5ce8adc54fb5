/* SPDX-License-Identifier: MIT */
/*
 * tests/fault/mutex_handoff_repro.c — reproduces, in C, the bug spin finds
 * in lib/mutex.c (tests/models/mutex.pml, "KNOWN BUG"): a ring newcomer
 * stranded on a HANDED mutex for good.
 *
 * Thread A builds a stale REQ: it holds m, starts a ring lock op W, makes W
 * lose two races with two spurious futex wakes (W steps, loses, sets REQ),
 * then cancels W (W abandons: COUNT 0, REQ stays). Then A unlocks, which
 * hands off (CONTENDED|REQ -> HANDED) to nobody, while thread B, after a
 * random delay, starts a ring lock op: a newcomer on HANDED, it registers
 * and arms FUTEX_WAIT; A's take-back then sees COUNT 1 and leaves it
 * HANDED. B's op never finishes (HANDED|COUNT 1 = 0xb for good).
 *
 * It reproduced the hang within milliseconds before the fix (commit
 * fd48f8a: ring lockers claim HANDED from their first step, requesters
 * withdraw REQ); kept as a regression check in make check: the test fails
 * when B's op does not finish within 2 s, and when the stale REQ (the
 * precondition) was never built, so that it cannot pass untested.
 * URSA_TEST_SCALE scales its 4000 iterations.
 *
 * handed_off_mutex_not_taken_by_newcomer (below) builds real hand-offs the
 * same way and checks that no newcomer takes one.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <liburing.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <ursa.h>

#include "tests/helpers.h"

TestSuite(fault_mutex_handoff, .timeout = 120);

static ursa_mutex_t m;
static atomic_int go, bdone, stop;
static atomic_uint bdelay;

static int reap(struct io_uring *r, struct ursa_op *op, long ms)
{
	for (;;) {
		struct io_uring_cqe *cqe;
		struct __kernel_timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
		io_uring_submit(r);
		int rc = io_uring_wait_cqe_timeout(r, &cqe, &ts);
		if (rc == -ETIME)
			return -ETIME;
		if (rc)
			continue;
		struct ursa_op *done = NULL;
		ursa_handle_cqe(r, cqe, &done);
		io_uring_cqe_seen(r, cqe);
		if (done == op)
			return op->res;
	}
}

/* The ring lock op in flight on *mx (held by the caller) loses races until
 * it asks for a hand-off: REQ, the word's bit M_REQ (lib/mutex.c; the
 * layout is lib's, so the callers' precondition checks keep the tests
 * honest when it moves). It asks after URSA_HANDOFF_AFTER lost races; each
 * spurious wake makes it step again (slept, loses) and re-arm. At most 8
 * tries. Returns how many completions finished an op (0: none took the
 * held mutex). */
static int lose_until_req(struct io_uring *r, ursa_mutex_t *mx)
{
	int finished = 0;
	for (int k = 0; k < 8 && !(mx->__word & 0x10u); k++) {
		while (syscall(SYS_futex, &mx->__word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0) != 1)
			sched_yield();
		struct io_uring_cqe *cqe;
		io_uring_wait_cqe(r, &cqe);
		struct ursa_op *done = NULL;
		ursa_handle_cqe(r, cqe, &done);
		io_uring_cqe_seen(r, cqe);
		finished += done != NULL;
		io_uring_submit(r);
	}
	return finished;
}

static void *thread_b(void *arg)
{
	struct io_uring r;
	io_uring_queue_init(8, &r, 0);
	for (;;) {
		while (!atomic_load(&go)) {
			if (atomic_load(&stop))
				return NULL;
			sched_yield(); /* on a shared CPU, let the main thread run */
		}
		atomic_store(&go, 0);
		unsigned d = atomic_load(&bdelay);
		for (volatile unsigned i = 0; i < d; i++)
			;
		struct ursa_op op;
		memset(&op, 0, sizeof(op));
		int st = ursa_mutex_lock_async(&r, &m, &op);
		int res = st == 1 ? op.res : reap(&r, &op, 2000);
		if (res == -ETIME) {
			cr_assert_fail("HANG: ring lock op not finished after 2 s; word %#x (delay %u)",
				       m.__word, d);
		}
		ursa_mutex_unlock(&m);
		atomic_store(&bdone, 1);
	}
}

Test(fault_mutex_handoff, ring_newcomer_not_stranded_on_handed)
{
	int iters = (int)t_iters(4000);
	t_require_uring_futex(false);
	struct io_uring r;
	cr_assert_eq(io_uring_queue_init(8, &r, 0), 0);
	pthread_t t;
	pthread_create(&t, NULL, thread_b, NULL);
	int req_ok = 0;
	for (int i = 0; i < iters; i++) {
		ursa_mutex_lock(&m);
		struct ursa_op w;
		memset(&w, 0, sizeof(w));
		cr_assert_eq(ursa_mutex_lock_async(&r, &m, &w), 0, "start");
		io_uring_submit(&r);
		lose_until_req(&r, &m);
		if (m.__word & 0x10u)
			req_ok++;
		ursa_op_cancel(&r, &w);
		int res = reap(&r, &w, 2000);
		cr_assert_eq(res, -ECANCELED, "cancel res %d", res);
		/* stale REQ: word CONTENDED|REQ, COUNT 0 */
		atomic_store(&bdelay, (unsigned)(rand() % 3000));
		atomic_store(&bdone, 0);
		atomic_store(&go, 1);
		ursa_mutex_unlock(&m);
		while (!atomic_load(&bdone))
			sched_yield();
	}
	atomic_store(&stop, 1);
	pthread_join(t, NULL);
	io_uring_queue_exit(&r);
	cr_log_info("no hang in %d iterations (stale REQ built in %d)", iters, req_ok);
	cr_assert_gt(req_ok, 0, "the stale REQ this test needs was never built in %d iterations",
		     iters);
}

/* A hand-off is not taken by a newcomer. A holds m, starts a ring lock op
 * W and makes it lose races (spurious wakes) until W asks for a hand-off
 * (REQ); A's unlock then hands m to W (HANDED, bit 0 still set: URSA_0.2).
 * Before W's completion is handled, the inline trylock (a bit-test-and-set
 * of bit 0), the exported one, a timed lock with a past deadline and a new
 * ring lock op must all find m held (the ring op's first step claimed it
 * before: an event loop that unlocks and locks again took every hand-off
 * a starving waiter asked for); W's completion then reports m taken, and m is W's to
 * unlock. With the hand-off leaving bit 0 clear (the layout before
 * URSA_0.2), the inline trylock took m here, and W's claim made two
 * holders. The test fails if no hand-off was ever made. */
Test(fault_mutex_handoff, handed_off_mutex_not_taken_by_newcomer)
{
	int iters = (int)t_iters(200);
	t_require_uring_futex(false);
	struct io_uring r;
	cr_assert_eq(io_uring_queue_init(8, &r, 0), 0);
	int (*trylock)(ursa_mutex_t *) = &ursa_mutex_trylock;
	ursa_mutex_t hm = URSA_MUTEX_INIT;
	int handed = 0;
	for (int i = 0; i < iters; i++) {
		cr_assert_eq(ursa_mutex_lock(&hm), 0);
		struct ursa_op w;
		memset(&w, 0, sizeof(w));
		cr_assert_eq(ursa_mutex_lock_async(&r, &hm, &w), 0, "start");
		io_uring_submit(&r);
		cr_assert_eq(lose_until_req(&r, &hm), 0, "W took a held mutex");
		cr_assert(hm.__word & 0x10u, "W never asked for a hand-off: word %#x", hm.__word);
		cr_assert_eq(ursa_mutex_unlock(&hm), 0);
		/* Handed to W, whose completion is not handled yet. */
		uint32_t v = hm.__word;
		if ((v & 0x9u) == 0x9u)
			handed++;
		struct timespec past = {0, 0};
		cr_assert_eq(ursa_mutex_trylock(&hm), -EBUSY, "inline trylock took %#x", v);
		cr_assert_eq(trylock(&hm), -EBUSY, "trylock took %#x", v);
		cr_assert_eq(ursa_mutex_timedlock(&hm, CLOCK_MONOTONIC, &past), -ETIMEDOUT);
		/* Nor a ring newcomer: it queues (before, its first step
		 * claimed the hand-off: rc 1, res 0). */
		struct ursa_op n;
		memset(&n, 0, sizeof(n));
		int st = ursa_mutex_lock_async(&r, &hm, &n);
		cr_assert_eq(st, 0, "a ring newcomer: start %d, res %d, word %#x", st, n.res, v);
		int res = reap(&r, &w, 2000);
		cr_assert_eq(res, 0, "W: res %d", res);
		cr_assert_eq(ursa_mutex_trylock(&hm), -EBUSY, "W holds it");
		cr_assert_eq(ursa_mutex_unlock(&hm), 0);
		res = reap(&r, &n, 2000);
		cr_assert_eq(res, 0, "the ring newcomer: res %d", res);
		cr_assert_eq(ursa_mutex_unlock(&hm), 0);
		cr_assert_eq(ursa_mutex_unlock(&hm), -EPERM);
		cr_assert_eq(ursa_mutex_destroy(&hm), 0, "word %#x", hm.__word);
	}
	io_uring_queue_exit(&r);
	cr_log_info("%d of %d unlocks handed off", handed, iters);
	cr_assert_gt(handed, 0, "no unlock handed the mutex off in %d iterations", iters);
}
