/* SPDX-License-Identifier: MIT */
/*
 * tests/fault/ring.c — ring faults at scale: many ops in flight on a ring
 * with a tiny SQ (starters and cancels meet -EBUSY and must change
 * nothing) and a tiny CQ (completions overflow into the kernel's overflow
 * list), cancel storms racing wakes, and 64 completions at once.
 *
 * Checked: every op finishes exactly once (a second finish, or a finish of
 * an op not in flight, fails), results are only those the contract allows,
 * and what the ops report matches the objects (each semaphore op that
 * reports 0 took exactly one unit; each mutex op that reports 0 holds the
 * mutex alone).
 */
#include "tests/helpers.h"

#include <errno.h>
#include <liburing.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

TestSuite(fault_ring, .timeout = 60);

#define NOPS 64

struct slot {
	struct ursa_op op;
	bool inflight;
	int finishes;
};

static void ring_small(struct io_uring *r, unsigned sq, unsigned cq)
{
	struct io_uring_params p;
	memset(&p, 0, sizeof(p));
	p.flags = IORING_SETUP_CQSIZE;
	p.cq_entries = cq;
	int rc = t_ring_init_params(sq, r, &p); /* with URSA_TEST_RING_SETUP's flags */
	cr_assert_eq(rc, 0, "io_uring_queue_init_params: %d", rc);
}

/* Reap what is there (waiting up to ms for the first); returns the ops
 * finished, each checked to have been in flight exactly once. */
static int reap(struct io_uring *r, struct slot *s, long ms, void (*on_done)(struct slot *))
{
	int n = 0;
	struct __kernel_timespec ts = {0, ms * 1000000L};
	struct io_uring_cqe *cqe;
	int rc = io_uring_submit_and_wait_timeout(r, &cqe, 1, &ts, NULL);
	if (rc < 0 && rc != -ETIME && rc != -EINTR)
		cr_assert_fail("submit_and_wait_timeout: %d", rc);
	while (io_uring_peek_cqe(r, &cqe) == 0) {
		struct ursa_op *done = NULL;
		int mine = ursa_handle_cqe(r, cqe, &done);
		cr_assert_eq(mine, 1, "a CQE on a ring only ursa uses was not ursa's");
		io_uring_cqe_seen(r, cqe);
		if (!done)
			continue;
		struct slot *x = (struct slot *)done; /* op is the first member */
		cr_assert(x >= s && x < s + NOPS, "unknown op finished");
		cr_assert(x->inflight, "op finished twice (or was never started)");
		x->inflight = false;
		x->finishes++;
		on_done(x);
		n++;
	}
	return n;
}

/* Start, retrying on -EBUSY (SQ full: submit and call again). */
static int start_retry(struct io_uring *r, int (*start)(struct io_uring *, void *, struct ursa_op *),
		       void *obj, struct slot *x)
{
	memset(&x->op, 0, sizeof(x->op));
	int rc;
	while ((rc = start(r, obj, &x->op)) == -EBUSY)
		cr_assert_geq(io_uring_submit(r), 0);
	cr_assert(rc == 0 || rc == 1, "starter: %d", rc);
	x->inflight = rc == 0;
	return rc;
}

static void cancel_retry(struct io_uring *r, struct slot *x)
{
	int rc;
	while ((rc = ursa_op_cancel(r, &x->op)) == -EBUSY)
		cr_assert_geq(io_uring_submit(r), 0);
	cr_assert_eq(rc, 0, "ursa_op_cancel: %d", rc);
}

/* A cancel storm over NOPS ops on one object. Each round starts every op
 * not in flight (one that finishes at once goes to at_once), submits,
 * cancels the in-flight ops the seed picks ((seed >> 16) % mod == pick),
 * and reaps for 1 ms. At least `rounds` rounds, and on while *until is
 * false (until may be NULL). */
struct storm {
	int (*start)(struct io_uring *, void *, struct ursa_op *);
	void *obj;
	void (*at_once)(void);
	void (*on_done)(struct slot *);
	uint32_t seed, mod, pick;
	int rounds;
	atomic_bool *until;
};

static void storm(struct io_uring *r, struct slot *s, struct storm *st)
{
	uint32_t seed = st->seed;
	for (int round = 0; round < st->rounds || (st->until && !atomic_load(st->until));
	     round++) {
		for (int i = 0; i < NOPS; i++) {
			if (!s[i].inflight && start_retry(r, st->start, st->obj, &s[i]) == 1) {
				s[i].finishes++;
				st->at_once();
			}
		}
		cr_assert_geq(io_uring_submit(r), 0);
		for (int i = 0; i < NOPS; i++) {
			seed = seed * 1103515245u + 12345u;
			if (s[i].inflight && (seed >> 16) % st->mod == st->pick)
				cancel_retry(r, &s[i]);
		}
		reap(r, s, 1, st->on_done);
	}
}

/* Cancel every op still in flight and wait until each has finished. */
static void cancel_all(struct io_uring *r, struct slot *s, void (*on_done)(struct slot *))
{
	for (int i = 0; i < NOPS; i++)
		if (s[i].inflight)
			cancel_retry(r, &s[i]);
	for (int tries = 0; tries < 10000; tries++) {
		int left = 0;
		for (int i = 0; i < NOPS; i++)
			left += s[i].inflight;
		if (!left)
			break;
		reap(r, s, 5, on_done);
	}
	for (int i = 0; i < NOPS; i++)
		cr_assert(!s[i].inflight, "op %d never finished", i);
}

/* ---- semaphore: cancel storms racing posts -------------------------------- */

static ursa_sem_t g_sem;
static atomic_long g_taken, g_cancelled;
static atomic_bool g_stop;

static int st_sem(struct io_uring *r, void *o, struct ursa_op *op)
{
	return ursa_sem_wait_async(r, o, op);
}

/* An op that cannot re-arm because the SQ ring has no room even after a
 * submit (or the submit fails) finishes with -EBUSY, holding and
 * registering nothing (ursa/async.h). Seen once in this storm, on a plain
 * 8-entry ring (before ring_small took URSA_TEST_RING_SETUP's flags) on a
 * loaded machine; not reproduced in 370 runs since. A submit into a full,
 * overflowing CQ is not the cause on Linux 6.18: it succeeds. The final
 * checks (units conserved, nothing registered, the mutex free) still hold
 * for such an op. */
static bool storm_res_ok(int res)
{
	return res == 0 || res == -ECANCELED || res == -EBUSY;
}

static void sem_done(struct slot *x)
{
	cr_assert(storm_res_ok(x->op.res), "sem op res %d", x->op.res);
	if (x->op.res == 0)
		atomic_fetch_add(&g_taken, 1);
	else
		atomic_fetch_add(&g_cancelled, 1);
}

static atomic_bool g_posted;

static void sem_at_once(void)
{
	atomic_fetch_add(&g_taken, 1); /* finished at once: took a unit */
}

static void *poster(void *arg)
{
	long n = (long)arg;
	for (long i = 0; i < n; i++) {
		/* Post into an empty semaphore, so that the units go to ops in
		 * flight (and race their cancels), not to new starters. */
		while (ursa_sem_value(&g_sem) > 0)
			sched_yield();
		cr_assert_eq(ursa_sem_post(&g_sem), 0);
	}
	atomic_store(&g_posted, true);
	return NULL;
}

static void sem_cancel_storm(unsigned flags)
{
	t_require_uring_futex(false);
	struct io_uring r;
	ring_small(&r, 8, 16); /* 64 ops on an 8-entry SQ and a 16-entry CQ */
	cr_assert_eq(ursa_sem_init(&g_sem, 0, flags), 0);
	atomic_store(&g_taken, 0);
	static struct slot s[NOPS];
	memset(s, 0, sizeof(s));
	const long posts = 1000;
	atomic_store(&g_posted, false);
	pthread_t t;
	cr_assert_eq(pthread_create(&t, NULL, poster, (void *)posts), 0);
	/* Storm for as long as the posts go on (and at least 300 rounds),
	 * cancelling a random half of what is in flight. */
	storm(&r, s,
	      &(struct storm){.start = st_sem, .obj = &g_sem, .at_once = sem_at_once,
			      .on_done = sem_done, .seed = 12345, .mod = 2, .pick = 1,
			      .rounds = 300, .until = &g_posted});
	cr_assert_eq(pthread_join(t, NULL), 0);
	cancel_all(&r, s, sem_done);
	/* Units conserved: taken by ops + left in the semaphore == posted. */
	long left = ursa_sem_value(&g_sem);
	cr_assert_eq(atomic_load(&g_taken) + left, posts, "taken %ld + left %ld != posted %ld",
		     (long)atomic_load(&g_taken), left, posts);
	cr_assert_eq(ursa_sem_destroy(&g_sem), 0, "a cancelled op left a registration");
	cr_log_info("sem storm: %ld units taken by ring ops, %ld ops cancelled, %ld left",
		    (long)atomic_load(&g_taken), (long)atomic_load(&g_cancelled), left);
	io_uring_queue_exit(&r);
}

Test(fault_ring, sem_cancel_storm_private)
{
	sem_cancel_storm(0);
}

Test(fault_ring, sem_cancel_storm_shared)
{
	sem_cancel_storm(URSA_SHARED);
}

/* ---- mutex: cancel storms racing a thread that locks and unlocks --------- */

static ursa_mutex_t g_m;
static atomic_int g_inside;
static atomic_long g_got;

static int st_mutex(struct io_uring *r, void *o, struct ursa_op *op)
{
	return ursa_mutex_lock_async(r, o, op);
}

static void hold_release(void)
{
	cr_assert_eq(atomic_fetch_add(&g_inside, 1), 0, "two holders");
	atomic_fetch_sub(&g_inside, 1);
	cr_assert_eq(ursa_mutex_unlock(&g_m), 0);
	atomic_fetch_add(&g_got, 1);
}

static void mutex_done(struct slot *x)
{
	cr_assert(storm_res_ok(x->op.res), "mutex op res %d", x->op.res);
	if (x->op.res == 0)
		hold_release();
}

static void *locker(void *arg)
{
	(void)arg;
	while (!atomic_load(&g_stop)) {
		cr_assert_eq(ursa_mutex_lock(&g_m), 0);
		cr_assert_eq(atomic_fetch_add(&g_inside, 1), 0, "two holders");
		sched_yield();
		atomic_fetch_sub(&g_inside, 1);
		cr_assert_eq(ursa_mutex_unlock(&g_m), 0);
	}
	return NULL;
}

Test(fault_ring, mutex_cancel_storm)
{
	t_require_uring_futex(false);
	struct io_uring r;
	ring_small(&r, 8, 16);
	cr_assert_eq(ursa_mutex_init(&g_m, 0), 0);
	atomic_store(&g_stop, false);
	static struct slot s[NOPS];
	memset(s, 0, sizeof(s));
	pthread_t t;
	cr_assert_eq(pthread_create(&t, NULL, locker, NULL), 0);
	/* 300 rounds cancelling a random third of what is in flight. */
	storm(&r, s,
	      &(struct storm){.start = st_mutex, .obj = &g_m, .at_once = hold_release,
			      .on_done = mutex_done, .seed = 777, .mod = 3, .pick = 0,
			      .rounds = 300});
	atomic_store(&g_stop, true);
	cr_assert_eq(pthread_join(t, NULL), 0);
	cancel_all(&r, s, mutex_done);
	cr_assert_gt(atomic_load(&g_got), 0, "no ring op ever got the mutex");
	cr_log_info("mutex storm: %ld ring acquisitions", (long)atomic_load(&g_got));
	cr_assert_eq(ursa_mutex_trylock(&g_m), 0, "mutex left held");
	cr_assert_eq(ursa_mutex_unlock(&g_m), 0);
	cr_assert_eq(ursa_mutex_destroy(&g_m), 0, "a cancelled op left a registration");
	io_uring_queue_exit(&r);
}

/* ---- 64 completions at once into a 16-entry CQ ----------------------------- */

static int st_event(struct io_uring *r, void *o, struct ursa_op *op)
{
	return ursa_event_wait_async(r, o, op);
}

static void event_done(struct slot *x)
{
	cr_assert_eq(x->op.res, 0, "event op res %d", x->op.res);
}

Test(fault_ring, cq_overflow_on_broadcast)
{
	t_require_uring_futex(false);
	struct io_uring r;
	ring_small(&r, 8, 16);
	ursa_event_t e;
	cr_assert_eq(ursa_event_init(&e, 0), 0);
	static struct slot s[NOPS];
	for (int round = 0; round < 20; round++) {
		memset(s, 0, sizeof(s));
		for (int i = 0; i < NOPS; i++)
			cr_assert_eq(start_retry(&r, st_event, &e, &s[i]), 0);
		cr_assert_geq(io_uring_submit(&r), 0);
		/* One set wakes all 64 ring waits: 64 CQEs into 16 places. */
		cr_assert_eq(ursa_event_set(&e), 0);
		int done = 0;
		for (int tries = 0; done < NOPS && tries < 10000; tries++)
			done += reap(&r, s, 5, event_done);
		cr_assert_eq(done, NOPS, "only %d of %d ops finished", done, NOPS);
		cr_assert_eq(ursa_event_reset(&e), 0);
	}
	cr_assert_eq(ursa_event_destroy(&e), 0);
	io_uring_queue_exit(&r);
}
