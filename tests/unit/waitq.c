/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/waitq.c — ursa_waitq_t: FIFO and keyed choice, wake before
 * wait, cancel 0 vs 1, timeouts dequeue, ring batches, exactly-once
 * accounting under deliberate races (threads and processes), bad input.
 */
#include "tests/helpers.h"
#include "tests/integration/common.h" /* t_after_us */

#include <errno.h>
#include <liburing.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

TestSuite(waitq, .timeout = 60);

/* A forked waiter must not outlive a test that failed or timed out (it
 * would sleep forever on a queue nobody wakes). */
static pid_t fork_waiter(void)
{
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(9);
	}
	return pid;
}

static ursa_waitq_t *q_new(uint32_t nslots, unsigned flags)
{
	size_t sz = ursa_waitq_size(nslots);
	cr_assert_gt(sz, 0);
	ursa_waitq_t *q = aligned_alloc(8, (sz + 7) & ~(size_t)7);
	cr_assert_not_null(q);
	memset(q, 0xA5, sz); /* init must not rely on zeroed memory */
	cr_assert_eq(ursa_waitq_init(q, nslots, flags), 0);
	return q;
}

/* Ring variants: 0 = syscalls, 1 = a ring (skipped without the futex ops). */
static struct io_uring *ring_for(int with_ring, struct io_uring *storage, unsigned entries)
{
	if (!with_ring)
		return NULL;
	t_require_uring_futex(false);
	cr_assert_eq(io_uring_queue_init(entries, storage, 0), 0);
	return storage;
}

/* Successful wakes post no CQE: nothing of ursa's may be left on the ring. */
static void ring_done(struct io_uring *ring)
{
	if (!ring)
		return;
	struct io_uring_cqe *cqe;
	cr_assert_eq(io_uring_peek_cqe(ring, &cqe), -EAGAIN, "unexpected CQE on the waker's ring");
	io_uring_queue_exit(ring);
}

/* ---- sizes and bad input --------------------------------------------- */

Test(waitq, sizes)
{
	cr_assert_eq(ursa_waitq_size(0), 0);
	cr_assert_eq(ursa_waitq_size(1), 32 + 24);
	cr_assert_eq(ursa_waitq_size(100), 32 + 2400);
	cr_assert_eq(ursa_waitq_size((uint32_t)INT_MAX + 1u), 0);
	cr_assert_eq(ursa_waitq_size(UINT32_MAX), 0);
}

Test(waitq, bad_input)
{
	struct timespec ts = {0, 0};
	ursa_waitq_t *q = q_new(4, 0);

	/* NULL queue */
	cr_assert_eq(ursa_waitq_init(NULL, 4, 0), -EINVAL);
	cr_assert_eq(ursa_waitq_prepare(NULL, 0, 1), -EINVAL);
	cr_assert_eq(ursa_waitq_wait(NULL, 0, CLOCK_MONOTONIC, NULL), -EINVAL);
	cr_assert_eq(ursa_waitq_cancel(NULL, 0), -EINVAL);
	cr_assert_eq(ursa_waitq_wake(NULL, 1, NULL), -EINVAL);
	cr_assert_eq(ursa_waitq_wake_upto(NULL, 1, NULL), -EINVAL);
	cr_assert_eq(ursa_waitq_wake_slot(NULL, 0, NULL), -EINVAL);

	/* nslots 0, unknown flags */
	cr_assert_eq(ursa_waitq_init(q, 0, 0), -EINVAL);
	cr_assert_eq(ursa_waitq_init(q, 4, 0x100), -EINVAL);
	cr_assert_eq(ursa_waitq_init(q, (uint32_t)INT_MAX + 1u, 0), -EINVAL);

	/* slot out of range */
	cr_assert_eq(ursa_waitq_prepare(q, 4, 1), -EINVAL);
	cr_assert_eq(ursa_waitq_prepare(q, UINT32_MAX, 1), -EINVAL);
	cr_assert_eq(ursa_waitq_wait(q, 4, CLOCK_MONOTONIC, NULL), -EINVAL);
	cr_assert_eq(ursa_waitq_cancel(q, 4), -EINVAL);
	cr_assert_eq(ursa_waitq_wake_slot(q, 4, NULL), -EINVAL);

	/* never prepared */
	cr_assert_eq(ursa_waitq_wait(q, 0, CLOCK_MONOTONIC, NULL), -EINVAL);
	cr_assert_eq(ursa_waitq_cancel(q, 0), -EINVAL);

	/* already queued; woken but not reaped */
	cr_assert_eq(ursa_waitq_prepare(q, 1, 7), 0);
	cr_assert_eq(ursa_waitq_prepare(q, 1, 7), -EBUSY);
	cr_assert_eq(ursa_waitq_wake_slot(q, 1, NULL), 1);
	cr_assert_eq(ursa_waitq_prepare(q, 1, 7), -EBUSY);
	cr_assert_eq(ursa_waitq_wait(q, 1, CLOCK_MONOTONIC, NULL), 0);
	cr_assert_eq(ursa_waitq_wait(q, 1, CLOCK_MONOTONIC, NULL), -EINVAL, "reaped: not prepared");

	/* bad clock / malformed deadline on a queued slot: nothing changes */
	cr_assert_eq(ursa_waitq_prepare(q, 2, 9), 0);
	cr_assert_eq(ursa_waitq_wait(q, 2, CLOCK_PROCESS_CPUTIME_ID, &ts), -EINVAL);
	cr_assert_eq(ursa_waitq_wait(q, 2, CLOCK_PROCESS_CPUTIME_ID, NULL), -EINVAL);
	ts.tv_nsec = 1000000000L;
	cr_assert_eq(ursa_waitq_wait(q, 2, CLOCK_MONOTONIC, &ts), -EINVAL);
	ts.tv_nsec = -1;
	cr_assert_eq(ursa_waitq_wait(q, 2, CLOCK_REALTIME, &ts), -EINVAL);
	ts.tv_nsec = 0;
	ts.tv_sec = -1;
	cr_assert_eq(ursa_waitq_wait(q, 2, CLOCK_REALTIME, &ts), -EINVAL);
	cr_assert_eq(ursa_waitq_wake(q, 0, NULL), 0, "n == 0 wakes nobody");
	cr_assert_eq(ursa_waitq_wake(q, 5, NULL), 1, "slot 2 was still queued");
	cr_assert_eq(ursa_waitq_wait(q, 2, CLOCK_MONOTONIC, NULL), 0);

	/* The queue is still fully usable. */
	for (uint32_t i = 0; i < 4; i++)
		cr_assert_eq(ursa_waitq_prepare(q, i, i), 0);
	cr_assert_eq(ursa_waitq_wake_upto(q, UINT64_MAX, NULL), 4);
	for (uint32_t i = 0; i < 4; i++)
		cr_assert_eq(ursa_waitq_cancel(q, i), 1);
	free(q);
}

Test(waitq, uninitialised_is_einval)
{
	uint64_t mem[(32 + 24 * 2) / 8];
	memset(mem, 0, sizeof(mem));
	ursa_waitq_t *q = (ursa_waitq_t *)mem;
	cr_assert_eq(ursa_waitq_prepare(q, 0, 1), -EINVAL);
	cr_assert_eq(ursa_waitq_wait(q, 0, CLOCK_MONOTONIC, NULL), -EINVAL);
	cr_assert_eq(ursa_waitq_cancel(q, 0), -EINVAL);
	cr_assert_eq(ursa_waitq_wake(q, 1, NULL), -EINVAL);
	cr_assert_eq(ursa_waitq_wake_upto(q, 1, NULL), -EINVAL);
	cr_assert_eq(ursa_waitq_wake_slot(q, 0, NULL), -EINVAL);
	cr_assert_eq(ursa_waitq_init(q, 2, 0), 0);
	cr_assert_eq(ursa_waitq_prepare(q, 1, 1), 0);
	cr_assert_eq(ursa_waitq_cancel(q, 1), 0);
}

/* ---- single-threaded semantics ---------------------------------------- */

Test(waitq, wake_before_wait_returns_at_once)
{
	ursa_waitq_t *q = q_new(2, 0);
	for (int round = 0; round < 3; round++) {
		cr_assert_eq(ursa_waitq_prepare(q, 0, 5), 0);
		cr_assert_eq(ursa_waitq_wake_slot(q, 0, NULL), 1);
		if (round == 0) {
			/* No deadline: would hang if it slept. */
			cr_assert_eq(ursa_waitq_wait(q, 0, CLOCK_MONOTONIC, NULL), 0);
		} else {
			/* A past deadline still reports the wake: never -ETIMEDOUT. */
			clockid_t clk = round == 1 ? CLOCK_MONOTONIC : CLOCK_REALTIME;
			struct timespec past = t_deadline(clk, -10);
			cr_assert_eq(ursa_waitq_wait(q, 0, clk, &past), 0);
		}
	}
	free(q);
}

Test(waitq, wake_slot)
{
	ursa_waitq_t *q = q_new(3, 0);
	cr_assert_eq(ursa_waitq_wake_slot(q, 1, NULL), 0, "idle slot: not woken");
	cr_assert_eq(ursa_waitq_prepare(q, 0, 1), 0);
	cr_assert_eq(ursa_waitq_prepare(q, 1, 1), 0);
	cr_assert_eq(ursa_waitq_prepare(q, 2, 1), 0);
	cr_assert_eq(ursa_waitq_wake_slot(q, 1, NULL), 1);
	cr_assert_eq(ursa_waitq_wake_slot(q, 1, NULL), 0, "already woken: not counted twice");
	cr_assert_eq(ursa_waitq_cancel(q, 1), 1, "cancel after a wake consumes it");
	cr_assert_eq(ursa_waitq_cancel(q, 1), -EINVAL);
	/* The directed wake left the others queued, in order. */
	cr_assert_eq(ursa_waitq_wake(q, 1, NULL), 1);
	cr_assert_eq(ursa_waitq_cancel(q, 0), 1);
	cr_assert_eq(ursa_waitq_cancel(q, 2), 0);
	cr_assert_eq(ursa_waitq_wake(q, 10, NULL), 0, "empty");
	free(q);
}

Test(waitq, wake_n_oldest_fifo)
{
	ursa_waitq_t *q = q_new(8, 0);
	const uint32_t order[] = {5, 3, 7, 1, 0, 6};
	for (int i = 0; i < 6; i++)
		cr_assert_eq(ursa_waitq_prepare(q, order[i], 100 - i), 0);
	cr_assert_eq(ursa_waitq_cancel(q, 7), 0, "a cancelled middle slot leaves the list");
	cr_assert_eq(ursa_waitq_wake(q, 2, NULL), 2);
	/* 5 and 3 were the oldest: woken; 1, 0, 6 still queued. */
	cr_assert_eq(ursa_waitq_cancel(q, 5), 1);
	cr_assert_eq(ursa_waitq_cancel(q, 3), 1);
	cr_assert_eq(ursa_waitq_prepare(q, 5, 0), 0, "re-prepared: goes to the tail");
	cr_assert_eq(ursa_waitq_wake(q, 1, NULL), 1);
	cr_assert_eq(ursa_waitq_cancel(q, 1), 1);
	cr_assert_eq(ursa_waitq_wake(q, 2, NULL), 2);
	cr_assert_eq(ursa_waitq_cancel(q, 0), 1);
	cr_assert_eq(ursa_waitq_cancel(q, 6), 1);
	cr_assert_eq(ursa_waitq_wake(q, UINT32_MAX, NULL), 1);
	cr_assert_eq(ursa_waitq_cancel(q, 5), 1);
	free(q);
}

Test(waitq, wake_upto_key)
{
	ursa_waitq_t *q = q_new(6, 0);
	const uint64_t key[6] = {50, 10, 30, 10, 70, 20};
	for (uint32_t i = 0; i < 6; i++)
		cr_assert_eq(ursa_waitq_prepare(q, i, key[i]), 0);
	cr_assert_eq(ursa_waitq_wake_upto(q, 9, NULL), 0);
	cr_assert_eq(ursa_waitq_wake_upto(q, 25, NULL), 3);
	cr_assert_eq(ursa_waitq_wake_upto(q, 25, NULL), 0, "each slot counted once");
	for (uint32_t i = 0; i < 6; i++)
		if (key[i] <= 25)
			cr_assert_eq(ursa_waitq_wait(q, i, CLOCK_MONOTONIC, NULL), 0);
	cr_assert_eq(ursa_waitq_wake_upto(q, 50, NULL), 2);
	cr_assert_eq(ursa_waitq_cancel(q, 0), 1);
	cr_assert_eq(ursa_waitq_cancel(q, 2), 1);
	cr_assert_eq(ursa_waitq_cancel(q, 4), 0, "key 70 was never due");
	free(q);
}

Test(waitq, timeout_dequeues)
{
	ursa_waitq_t *q = q_new(2, 0);
	clockid_t clks[] = {CLOCK_MONOTONIC, CLOCK_REALTIME};
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(ursa_waitq_prepare(q, 1, 3), 0);
		struct timespec dl = t_deadline(clks[i], 20);
		cr_assert_eq(ursa_waitq_wait(q, 1, clks[i], &dl), -ETIMEDOUT);
		struct timespec now;
		clock_gettime(clks[i], &now);
		cr_assert(now.tv_sec > dl.tv_sec ||
			      (now.tv_sec == dl.tv_sec && now.tv_nsec >= dl.tv_nsec),
			  "returned before the deadline");
		/* Dequeued: no wake finds it, and it is free again. */
		cr_assert_eq(ursa_waitq_wake(q, 1, NULL), 0);
		cr_assert_eq(ursa_waitq_wake_slot(q, 1, NULL), 0);
		cr_assert_eq(ursa_waitq_wait(q, 1, clks[i], NULL), -EINVAL);
		/* A past deadline: one try, no sleep, dequeued; and no spin,
		 * which would only end in the timeout and halve the slot's spin
		 * hint (white-box: slot 1's hint, stored as 15 - est, at byte
		 * 32 + 24 + 20 of the queue; lib/waitq.c). */
		cr_assert_eq(ursa_waitq_prepare(q, 1, 3), 0);
		uint32_t *hint = (uint32_t *)((char *)q + 32 + 24 + 20);
		uint32_t before = __atomic_load_n(hint, __ATOMIC_RELAXED);
		struct timespec past = t_deadline(clks[i], -5);
		cr_assert_eq(ursa_waitq_wait(q, 1, clks[i], &past), -ETIMEDOUT);
		cr_assert_eq(__atomic_load_n(hint, __ATOMIC_RELAXED), before,
			     "a wait past its deadline spun (the hint went %u -> %u)", before,
			     __atomic_load_n(hint, __ATOMIC_RELAXED));
		cr_assert_eq(ursa_waitq_wake_upto(q, UINT64_MAX, NULL), 0);
	}
	free(q);
}

/* ---- sleeping waiters: threads ---------------------------------------- */

struct sleeper {
	ursa_waitq_t *q;
	uint32_t slot;
	atomic_int *prepared;
	int res;
};

static void *sleeper_fn(void *arg)
{
	struct sleeper *s = arg;
	int r = ursa_waitq_prepare(s->q, s->slot, s->slot);
	atomic_fetch_add(s->prepared, 1);
	s->res = r ? r : ursa_waitq_wait(s->q, s->slot, CLOCK_MONOTONIC, NULL);
	return NULL;
}

/* n threads sleep on their own slots; one call wakes them all. */
static void wake_sleepers(int n, struct io_uring *ring)
{
	ursa_waitq_t *q = q_new((uint32_t)n, 0);
	atomic_int prepared = 0;
	struct sleeper *s = calloc((size_t)n, sizeof(*s));
	pthread_t *t = calloc((size_t)n, sizeof(*t));
	for (int i = 0; i < n; i++)
		s[i] = (struct sleeper){q, (uint32_t)i, &prepared, 1};
	t_spawn(t, n, sleeper_fn, s, sizeof(*s));
	while (atomic_load(&prepared) < n)
		sched_yield();
	cr_assert_eq(ursa_waitq_wake(q, (uint32_t)n, ring), n);
	t_join_all(t, n);
	for (int i = 0; i < n; i++)
		cr_assert_eq(s[i].res, 0, "sleeper %d", i);
	cr_assert_eq(ursa_waitq_wake(q, UINT32_MAX, ring), 0);
	free(s);
	free(t);
	free(q);
}

Test(waitq, wake_sleeping_threads_syscalls)
{
	wake_sleepers(40, NULL);
}

Test(waitq, wake_sleeping_threads_ring)
{
	struct io_uring r;
	struct io_uring *ring = ring_for(1, &r, 64);
	wake_sleepers(40, ring);
	ring_done(ring);
}

Test(waitq, ring_batch_larger_than_sq_ring)
{
	/* 300 wakes through a 4-entry SQ ring: submitted in chunks of the SQ
	 * ring's size, and more than one lock-hold's worth (256) of slots. */
	struct io_uring r;
	struct io_uring *ring = ring_for(1, &r, 4);
	wake_sleepers(300, ring);
	ring_done(ring);
}

Test(waitq, ring_submits_pending_application_sqes)
{
	struct io_uring r;
	struct io_uring *ring = ring_for(1, &r, 8);
	ursa_waitq_t *q = q_new(2, 0);
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	io_uring_prep_nop(sqe);
	sqe->user_data = 42;
	/* A single wake is a syscall: the ring is left alone. */
	cr_assert_eq(ursa_waitq_prepare(q, 0, 1), 0);
	cr_assert_eq(ursa_waitq_wake(q, 1, ring), 1);
	cr_assert_eq(ursa_waitq_wait(q, 0, CLOCK_MONOTONIC, NULL), 0);
	cr_assert_eq(io_uring_sq_ready(ring), 1, "the application's SQE is still unsubmitted");
	/* A batch is submitted, and the application's NOP goes in with it. */
	cr_assert_eq(ursa_waitq_prepare(q, 0, 1), 0);
	cr_assert_eq(ursa_waitq_prepare(q, 1, 1), 0);
	cr_assert_eq(ursa_waitq_wake(q, 2, ring), 2);
	/* Under SQPOLL the kernel's poller takes the SQEs asynchronously. */
	for (int k = 0; k < 1000 && (ring->flags & IORING_SETUP_SQPOLL) && io_uring_sq_ready(ring);
	     k++)
		t_sleep_ms(1);
	cr_assert_eq(io_uring_sq_ready(ring), 0);
	cr_assert_eq(ursa_waitq_wait(q, 0, CLOCK_MONOTONIC, NULL), 0);
	cr_assert_eq(ursa_waitq_wait(q, 1, CLOCK_MONOTONIC, NULL), 0);
	/* The NOP's CQE is the application's; the wakes left none. */
	struct io_uring_cqe *cqe;
	cr_assert_eq(io_uring_wait_cqe(ring, &cqe), 0);
	cr_assert_eq(cqe->user_data, 42);
	struct ursa_op *done = (struct ursa_op *)1;
	cr_assert_eq(ursa_handle_cqe(ring, cqe, &done), 0, "not ursa's");
	io_uring_cqe_seen(ring, cqe);
	ring_done(ring);
	free(q);
}

/* A SINGLE_ISSUER ring used by a thread that does not own it: the kernel
 * refuses the submission (-EEXIST); the wake must still happen. */
struct foreign {
	ursa_waitq_t *q;
	struct io_uring *ring;
	atomic_int *prepared;
	int res;
};

static void *foreign_waker(void *arg)
{
	struct foreign *f = arg;
	while (atomic_load(f->prepared) < 2)
		sched_yield();
	f->res = ursa_waitq_wake(f->q, 2, f->ring); /* a batch: goes to the ring */
	return NULL;
}

Test(waitq, ring_refusing_submission_still_wakes)
{
	t_require_uring_futex(false);
	struct io_uring ring;
	struct io_uring_params p;
	memset(&p, 0, sizeof(p));
	p.flags = IORING_SETUP_SINGLE_ISSUER;
	int r = io_uring_queue_init_params(8, &ring, &p);
	if (r == -EINVAL)
		cr_skip_test("kernel lacks IORING_SETUP_SINGLE_ISSUER");
	cr_assert_eq(r, 0);
	ursa_waitq_t *q = q_new(2, 0);
	atomic_int prepared = 0;
	struct sleeper s[2] = {{q, 0, &prepared, 1}, {q, 1, &prepared, 1}};
	struct foreign f = {q, &ring, &prepared, -1};
	pthread_t ts[2], tw;
	t_spawn(ts, 2, sleeper_fn, s, sizeof(s[0]));
	cr_assert_eq(pthread_create(&tw, NULL, foreign_waker, &f), 0);
	t_join_all(ts, 2); /* hangs (suite timeout) if the refused wakes were lost */
	cr_assert_eq(pthread_join(tw, NULL), 0);
	cr_assert_eq(f.res, 2);
	cr_assert_eq(s[0].res, 0);
	cr_assert_eq(s[1].res, 0);
	/* The refused SQE was neutralised: the owner's next submission posts
	 * nothing (a NOP with its success CQE skipped). */
	cr_assert_geq(io_uring_submit(&ring), 0);
	ring_done(&ring);
	free(q);
}

/* ---- races on purpose: one slot, waiter vs waker ----------------------- */

enum race_kind { RACE_TIMEOUT, RACE_CANCEL };

struct race {
	ursa_waitq_t *q;
	struct io_uring *ring;
	enum race_kind kind;
	int iters;
	atomic_int ready; /* last iteration the waiter prepared */
	atomic_int kdone; /* last iteration the waker finished */
	atomic_int waking; /* last iteration the waker is about to wake */
	int *wres;	  /* waiter's result per iteration */
	int *kres;	  /* waker's result per iteration */
};

static void spin(unsigned n)
{
	for (volatile unsigned i = 0; i < n; i++)
		;
}

static void *race_waiter(void *arg)
{
	struct race *x = arg;
	for (int i = 1; i <= x->iters; i++) {
		while (atomic_load(&x->kdone) != i - 1)
			sched_yield();
		int r = ursa_waitq_prepare(x->q, 0, (uint64_t)i);
		if (r) {
			x->wres[i] = 1000 + r; /* flagged below */
			atomic_store(&x->ready, i);
			continue;
		}
		atomic_store(&x->ready, i);
		if (x->kind == RACE_TIMEOUT) {
			/* Deadlines from 10 us in the past to 40 us ahead. */
			struct timespec dl = t_deadline(CLOCK_MONOTONIC, 0);
			long ns = dl.tv_nsec + ((long)(i % 6) - 1) * 10000L;
			if (ns < 0) {
				ns += 1000000000L;
				dl.tv_sec--;
			} else if (ns >= 1000000000L) {
				ns -= 1000000000L;
				dl.tv_sec++;
			}
			dl.tv_nsec = ns;
			x->wres[i] = ursa_waitq_wait(x->q, 0, CLOCK_MONOTONIC, &dl);
		} else {
			/* Odd rounds cancel as the waker calls its wake (a
			 * tight race; on a shared CPU the wake mostly wins),
			 * even rounds after a spread wider than the waker's
			 * (the cancel mostly wins): both outcomes occur
			 * however the threads are scheduled, and run_race
			 * asserts that they did. */
			if (i & 1) {
				while (atomic_load(&x->waking) != i)
					sched_yield();
				spin((unsigned)(i * 7919) % 400);
			} else {
				spin((unsigned)(i * 7919) % 40000);
			}
			x->wres[i] = ursa_waitq_cancel(x->q, 0);
		}
	}
	return NULL;
}

static void *race_waker(void *arg)
{
	struct race *x = arg;
	for (int i = 1; i <= x->iters; i++) {
		while (atomic_load(&x->ready) != i)
			sched_yield();
		spin((unsigned)(i * 104729) % 4000);
		atomic_store(&x->waking, i);
		switch (i % 3) {
		case 0:
			x->kres[i] = ursa_waitq_wake_slot(x->q, 0, x->ring);
			break;
		case 1:
			x->kres[i] = ursa_waitq_wake(x->q, 1, x->ring);
			break;
		default:
			x->kres[i] = ursa_waitq_wake_upto(x->q, (uint64_t)i, x->ring);
			break;
		}
		/* The waiter's result is final before the next prepare: wait
		 * for it here (it may still be asleep until our wake lands). */
		atomic_store(&x->kdone, i);
	}
	return NULL;
}

/* One round of iters races; adds the outcomes to *won (the wake first) and
 * *lost (the waiter's timeout or cancel first). */
static void race_round(enum race_kind kind, int with_ring, unsigned qflags, int iters, int *n_won,
		       int *n_lost)
{
	static struct race x;
	struct io_uring r;
	memset(&x, 0, sizeof(x));
	x.ring = ring_for(with_ring, &r, 16);
	x.q = q_new(1, qflags);
	x.kind = kind;
	x.iters = iters;
	x.wres = calloc((size_t)x.iters + 1, sizeof(int));
	x.kres = calloc((size_t)x.iters + 1, sizeof(int));
	pthread_t tw, tk;
	cr_assert_eq(pthread_create(&tw, NULL, race_waiter, &x), 0);
	cr_assert_eq(pthread_create(&tk, NULL, race_waker, &x), 0);
	cr_assert_eq(pthread_join(tw, NULL), 0);
	cr_assert_eq(pthread_join(tk, NULL), 0);
	int won = 0, lost = 0;
	for (int i = 1; i <= x.iters; i++) {
		int w = x.wres[i], k = x.kres[i];
		cr_assert(k == 0 || k == 1, "iter %d: wake returned %d", i, k);
		if (kind == RACE_TIMEOUT) {
			cr_assert(w == 0 || w == -ETIMEDOUT, "iter %d: wait returned %d", i, w);
			cr_assert_eq(k == 1, w == 0, "iter %d: wake %d but wait %d", i, k, w);
		} else {
			cr_assert(w == 0 || w == 1, "iter %d: cancel returned %d", i, w);
			cr_assert_eq(k == 1, w == 1, "iter %d: wake %d but cancel %d", i, k, w);
		}
		if (k)
			won++;
		else
			lost++;
	}
	*n_won += won;
	*n_lost += lost;
	cr_assert_eq(ursa_waitq_wake(x.q, UINT32_MAX, x.ring), 0, "nothing left queued");
	ring_done(x.ring);
	free(x.wres);
	free(x.kres);
	free(x.q);
}

/* Rounds, bounded, until each side of the race won RACE_MIN times: a
 * change that makes one side unreachable fails instead of passing. */
#define RACE_MIN 20
#define RACE_ROUNDS 10

static void run_race(enum race_kind kind, int with_ring, unsigned qflags)
{
	int won = 0, lost = 0, round;
	for (round = 0; round < RACE_ROUNDS && (won < RACE_MIN || lost < RACE_MIN); round++)
		race_round(kind, with_ring, qflags, 2000, &won, &lost);
	cr_log_info("%s%s: wake first %d, waiter first %d in %d rounds",
		    kind == RACE_TIMEOUT ? "timeout" : "cancel", with_ring ? " (ring)" : "", won,
		    lost, round);
	cr_assert(won >= RACE_MIN && lost >= RACE_MIN,
		  "race not exercised: wake first %d, waiter first %d in %d rounds of 2000", won,
		  lost, round);
}

Test(waitq, race_wake_vs_timeout)
{
	run_race(RACE_TIMEOUT, 0, 0);
}

Test(waitq, race_wake_vs_timeout_shared_ring)
{
	run_race(RACE_TIMEOUT, 1, URSA_SHARED);
}

Test(waitq, race_wake_vs_cancel)
{
	run_race(RACE_CANCEL, 0, URSA_SHARED);
}

Test(waitq, race_wake_vs_cancel_ring)
{
	run_race(RACE_CANCEL, 1, 0);
}

/* ---- many slots, many wakers: exactly-once accounting ----------------- */

#define ACC_WAITERS 4 /* each owns ACC_PER slots */
#define ACC_PER	    3
#define ACC_ROUNDS  1500

struct acc {
	ursa_waitq_t *q;
	atomic_int done;       /* waiters finished */
	atomic_long woken;     /* waits that returned 0 + cancels that returned 1 */
	atomic_long wakes;     /* sum of wake returns */
	atomic_long timeouts;  /* waits that returned -ETIMEDOUT */
	atomic_long cancelled; /* cancels that returned 0 */
	atomic_int errors;
};

static unsigned rnd(unsigned *s)
{
	*s = *s * 1103515245u + 12345u;
	return *s >> 8;
}

static bool acc_waiter(int id, void *arg)
{
	struct acc *a = arg;
	unsigned seed = 77u + (unsigned)id;
	for (int r = 0; r < ACC_ROUNDS; r++) {
		uint32_t slot = (uint32_t)(id * ACC_PER + r % ACC_PER);
		uint64_t key = rnd(&seed) % 100;
		if (ursa_waitq_prepare(a->q, slot, key) != 0) {
			atomic_fetch_add(&a->errors, 1);
			continue;
		}
		int res;
		switch (rnd(&seed) % 4) {
		case 0:
			res = ursa_waitq_cancel(a->q, slot);
			if (res == 1)
				atomic_fetch_add(&a->woken, 1);
			else if (res == 0)
				atomic_fetch_add(&a->cancelled, 1);
			else
				atomic_fetch_add(&a->errors, 1);
			break;
		case 1:
			res = ursa_waitq_wait(a->q, slot, CLOCK_MONOTONIC, NULL);
			if (res == 0)
				atomic_fetch_add(&a->woken, 1);
			else
				atomic_fetch_add(&a->errors, 1);
			break;
		default: {
			/* 0..49 us from now */
			struct timespec dl = t_after_us(CLOCK_MONOTONIC, (long)(rnd(&seed) % 50));
			res = ursa_waitq_wait(a->q, slot, CLOCK_MONOTONIC, &dl);
			if (res == 0)
				atomic_fetch_add(&a->woken, 1);
			else if (res == -ETIMEDOUT)
				atomic_fetch_add(&a->timeouts, 1);
			else
				atomic_fetch_add(&a->errors, 1);
			break;
		}
		}
	}
	atomic_fetch_add(&a->done, 1);
	return atomic_load(&a->errors) == 0;
}

static void *acc_waiter_thread(void *arg)
{
	struct acc *a = *(struct acc **)arg;
	static atomic_int next_id;
	acc_waiter(atomic_fetch_add(&next_id, 1) % ACC_WAITERS, a);
	return NULL;
}

struct acc_waker_arg {
	struct acc *a;
	int with_ring;
	unsigned seed;
};

static void *acc_waker(void *arg)
{
	struct acc_waker_arg *w = arg;
	struct acc *a = w->a;
	struct io_uring r, *ring = NULL;
	if (w->with_ring && io_uring_queue_init(8, &r, 0) == 0)
		ring = &r;
	unsigned seed = w->seed;
	while (atomic_load(&a->done) < ACC_WAITERS) {
		int n;
		switch (rnd(&seed) % 3) {
		case 0:
			n = ursa_waitq_wake(a->q, 1 + rnd(&seed) % 4, ring);
			break;
		case 1:
			n = ursa_waitq_wake_upto(a->q, rnd(&seed) % 100, ring);
			break;
		default:
			n = ursa_waitq_wake_slot(a->q, rnd(&seed) % (ACC_WAITERS * ACC_PER), ring);
			break;
		}
		if (n < 0)
			atomic_fetch_add(&a->errors, 1);
		else
			atomic_fetch_add(&a->wakes, n);
		if (n == 0)
			sched_yield();
	}
	if (ring) {
		struct io_uring_cqe *cqe;
		if (io_uring_peek_cqe(ring, &cqe) != -EAGAIN)
			atomic_fetch_add(&a->errors, 1);
		io_uring_queue_exit(ring);
	}
	return NULL;
}

static void acc_check(struct acc *a)
{
	cr_assert_eq(atomic_load(&a->errors), 0);
	cr_assert_eq(atomic_load(&a->wakes), atomic_load(&a->woken),
		     "wakes counted %ld, wakeups received %ld", atomic_load(&a->wakes),
		     atomic_load(&a->woken));
	cr_log_info("accounting: %ld woken, %ld timed out, %ld cancelled", atomic_load(&a->woken),
		    atomic_load(&a->timeouts), atomic_load(&a->cancelled));
	cr_assert_eq(ursa_waitq_wake(a->q, UINT32_MAX, NULL), 0, "nothing left queued");
}

Test(waitq, accounting_threads)
{
	static struct acc a;
	memset(&a, 0, sizeof(a));
	a.q = q_new(ACC_WAITERS * ACC_PER, 0);
	struct acc *pa[ACC_WAITERS];
	for (int i = 0; i < ACC_WAITERS; i++)
		pa[i] = &a;
	struct acc_waker_arg wa[2] = {{&a, 0, 1}, {&a, 1, 2}};
	pthread_t tw[ACC_WAITERS], tk[2];
	t_spawn(tw, ACC_WAITERS, acc_waiter_thread, pa, sizeof(pa[0]));
	t_spawn(tk, 2, acc_waker, wa, sizeof(wa[0]));
	t_join_all(tw, ACC_WAITERS);
	t_join_all(tk, 2);
	acc_check(&a);
	free(a.q);
}

Test(waitq, accounting_processes_shared)
{
	size_t qsz = ursa_waitq_size(ACC_WAITERS * ACC_PER);
	size_t len = sizeof(struct acc) + 64 + qsz;
	struct acc *a = t_shared_alloc(len);
	a->q = (ursa_waitq_t *)((char *)a + ((sizeof(struct acc) + 63) & ~(size_t)63));
	cr_assert_eq(ursa_waitq_init(a->q, ACC_WAITERS * ACC_PER, URSA_SHARED), 0);
	/* Waiters are processes (forked before any thread exists here), the
	 * wakers are threads of this one: syscall and ring wakes cross over. */
	pid_t pids[ACC_WAITERS];
	for (int i = 0; i < ACC_WAITERS; i++) {
		pids[i] = fork_waiter();
		cr_assert_geq(pids[i], 0);
		if (pids[i] == 0)
			_exit(acc_waiter(i, a) ? 0 : 1);
	}
	struct acc_waker_arg wa[2] = {{a, 0, 3}, {a, 1, 4}};
	pthread_t tk[2];
	t_spawn(tk, 2, acc_waker, wa, sizeof(wa[0]));
	for (int i = 0; i < ACC_WAITERS; i++) {
		int st;
		cr_assert_eq(waitpid(pids[i], &st, 0), pids[i]);
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "waiter process %d failed", i);
	}
	t_join_all(tk, 2);
	acc_check(a);
	t_shared_free(a, len);
}
