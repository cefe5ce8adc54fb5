/* SPDX-License-Identifier: MIT */
/*
 * tests/integration/contended.c — every primitive's contended paths under
 * real threads: blocking callers alone, then with a thread that waits in a
 * ring among them; private and URSA_SHARED.
 *
 * Each test checks the property that matters: mutual exclusion through an
 * `inside` counter and plain (non-atomic) protected data — so that
 * ThreadSanitizer, which runs this suite in a --enable-sanitizers=thread
 * tree, also sees any missing happens-before edge — counts conserved, each
 * item or unit taken exactly once. A lost wakeup shows up as a hang, which
 * the test's timeout turns into a failure naming the test. The ring tests
 * skip, with the probe's reason, on kernels without the io_uring futex
 * operations (before 6.7) or with io_uring disabled.
 *
 * URSA_TEST_SCALE (a factor) scales the iteration counts.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <liburing.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <ursa.h>

#include "tests/helpers.h"
#include "tests/integration/common.h"

/* ---- checking and helpers ------------------------------------------- */

/* Iteration counts: t_iters(n) scales n by URSA_TEST_SCALE. */
#define ITERS(n) ((int)t_iters(n))

TestSuite(contended, .timeout = 240);

#define CHECK(cond, ...) cr_assert(cond, __VA_ARGS__)

#define MAXT 8
static pthread_t g_tids[MAXT];

struct targ {
	int id;
	void *ctx;
	void (*fn)(struct targ *);
	bool ring;
	struct io_uring *r; /* a ring thread's own ring, else NULL */
};

static void ring_open(struct io_uring *r);
static void ring_close(struct io_uring *r);

static void *thread_main(void *arg)
{
	struct targ *a = arg;
	struct io_uring r;
	if (a->ring) {
		ring_open(&r);
		a->r = &r;
	}
	a->fn(a);
	if (a->ring)
		ring_close(&r);
	return NULL;
}

/* Run n threads, fn(&targ) each, and join them. Thread ring_id (none:
 * -1) runs ring_fn instead, with a ring of its own (targ.r) that it opens
 * first and, when ring_fn returns, drains and closes. */
static void run_threads(int n, void (*fn)(struct targ *), int ring_id,
			void (*ring_fn)(struct targ *), void *ctx)
{
	static struct targ args[MAXT];
	CHECK(n <= MAXT, "too many threads");
	for (int i = 0; i < n; i++) {
		args[i] = (struct targ){i, ctx, i == ring_id ? ring_fn : fn, i == ring_id, NULL};
		CHECK(pthread_create(&g_tids[i], NULL, thread_main, &args[i]) == 0,
		      "pthread_create");
	}
	for (int i = 0; i < n; i++)
		CHECK(pthread_join(g_tids[i], NULL) == 0, "pthread_join");
}

/* ---- io_uring plumbing for the async sections -------------------------- */

static const char *async_unavailable(void)
{
	struct ursa_features f;
	if (ursa_probe(&f) != 0)
		return "ursa_probe failed";
	if (!f.uring)
		return "io_uring unavailable (disabled or blocked)";
	if (!f.uring_futex)
		return "kernel lacks IORING_OP_FUTEX_WAIT/WAKE (needs Linux 6.7+)";
	return NULL;
}

/* A ring thread that sets this is a slow owner: it yields before it
 * handles the CQEs it waited for, so a woken op steps late. */
static __thread bool ring_slow;

/* Submit and reap until `op` finishes; every CQE on this ring is ursa's.
 * An op that finishes is checked to be `op` (exactly once: a second
 * finish of anything would be caught here or by the caller's counts).
 * With cancel, the wait is submitted and then cancelled at once, racing
 * whatever wake is on its way. Returns op->res. */
static int ring_finish(struct io_uring *r, struct ursa_op *op, int started, bool cancel)
{
	if (started == 1)
		return op->res;
	CHECK(started == 0, "starter returned %d", started);
	if (cancel) {
		CHECK(io_uring_submit(r) >= 0, "submit");
		CHECK(ursa_op_cancel(r, op) == 0, "ursa_op_cancel");
	}
	for (;;) {
		struct io_uring_cqe *cqe;
		int rc = io_uring_submit_and_wait(r, 1);
		CHECK(rc >= 0 || rc == -EINTR, "submit_and_wait: %d", rc);
		if (ring_slow)
			sched_yield();
		bool finished = false;
		while (io_uring_peek_cqe(r, &cqe) == 0) {
			struct ursa_op *done = NULL;
			int mine = ursa_handle_cqe(r, cqe, &done);
			CHECK(mine == 1, "a CQE on a ring only ursa uses was not ursa's (%d)", mine);
			io_uring_cqe_seen(r, cqe);
			if (done) {
				CHECK(done == op, "an op finished that was not in flight");
				CHECK(!finished, "op finished twice");
				finished = true;
			}
		}
		if (finished)
			return op->res;
	}
}

/* Consume what is left on the ring (late timeout/cancel CQEs): none of it
 * may finish an op. */
static void ring_drain(struct io_uring *r)
{
	struct io_uring_cqe *cqe;
	struct __kernel_timespec ts = {0, 2 * 1000 * 1000};
	io_uring_submit(r);
	while (io_uring_wait_cqe_timeout(r, &cqe, &ts) == 0) {
		struct ursa_op *done = NULL;
		CHECK(ursa_handle_cqe(r, cqe, &done) == 1, "not ursa's");
		CHECK(done == NULL, "an op finished after it had finished");
		io_uring_cqe_seen(r, cqe);
	}
}

/* A ring thread's ring, and its end: what is left on it finishes
 * nothing. */
static void ring_open(struct io_uring *r)
{
	CHECK(io_uring_queue_init(8, r, 0) == 0, "io_uring_queue_init");
}

static void ring_close(struct io_uring *r)
{
	ring_drain(r);
	io_uring_queue_exit(r);
}

/* A fresh op; one time in n (returns k == 0) with a deadline us (plus up
 * to spread - 1) microseconds away. */
static uint32_t op_prepare(struct ursa_op *op, uint32_t *seed, uint32_t n, long us,
			   uint32_t spread)
{
	memset(op, 0, sizeof(*op));
	uint32_t k = t_rnd(seed) % n;
	if (k == 0) {
		struct timespec ts =
			t_after_us(CLOCK_MONOTONIC, us + (spread ? (long)(t_rnd(seed) % spread) : 0));
		CHECK(ursa_op_set_deadline(op, CLOCK_MONOTONIC, &ts) == 0, "set_deadline");
	}
	return k;
}

/* The ring waits the threads make, each on one object. */
enum wait_kind { W_MUTEX, W_RDLOCK, W_WRLOCK, W_SEM, W_EVENT, W_WAITQ_SLOT0 };

static int start(enum wait_kind kind, struct io_uring *r, void *obj, struct ursa_op *op)
{
	switch (kind) {
	case W_MUTEX:
		return ursa_mutex_lock_async(r, obj, op);
	case W_RDLOCK:
		return ursa_rwlock_rdlock_async(r, obj, op);
	case W_WRLOCK:
		return ursa_rwlock_wrlock_async(r, obj, op);
	case W_SEM:
		return ursa_sem_wait_async(r, obj, op);
	case W_EVENT:
		return ursa_event_wait_async(r, obj, op);
	case W_WAITQ_SLOT0:
		return ursa_waitq_wait_async(r, obj, 0, op);
	}
	return -EINVAL;
}

/* How a ring thread varies its ops: plain, with a short deadline, or
 * cancelled while in flight. Returns the op's result. */
static int ring_variant(struct io_uring *r, struct ursa_op *op, uint32_t *seed,
			enum wait_kind kind, void *obj)
{
	uint32_t k = op_prepare(op, seed, 8, 50, 200);
	int st = start(kind, r, obj, op);
	int res = ring_finish(r, op, st, k == 1);
	CHECK(res == 0 || (k == 0 && res == -ETIMEDOUT) || (k == 1 && res == -ECANCELED),
	      "async op result %d (variant %u)", res, k);
	return res;
}

/* ring_variant until an op succeeds (a timed-out or cancelled one took
 * nothing: try again). */
static void ring_take(struct io_uring *r, uint32_t *seed, enum wait_kind kind, void *obj)
{
	struct ursa_op op;
	while (ring_variant(r, &op, seed, kind, obj) != 0)
		;
}

/* A blocking take of obj, one of three ways by k: k == 0 spins on
 * ursa_<prim>_trywait, k == 1 waits with a deadline us away (then without
 * one if it expired), any other k waits. Returns the take's result. */
#define TAKE(prim, obj, k, us)                                                           \
	({                                                                               \
		uint32_t k_ = (k);                                                       \
		int rc_;                                                                 \
		if (k_ == 0) {                                                           \
			while ((rc_ = ursa_##prim##_trywait(obj)) == -EBUSY)             \
				sched_yield();                                           \
		} else if (k_ == 1) {                                                    \
			struct timespec ts_ = t_after_us(CLOCK_MONOTONIC, us);           \
			rc_ = ursa_##prim##_timedwait(obj, CLOCK_MONOTONIC, &ts_);       \
			if (rc_ == -ETIMEDOUT)                                           \
				rc_ = ursa_##prim##_wait(obj);                           \
		} else {                                                                 \
			rc_ = ursa_##prim##_wait(obj);                                   \
		}                                                                        \
		rc_;                                                                     \
	})

/* The mutual-exclusion check: the caller must be alone inside (inside
 * is 0 on entry, what names the failure) and bumps a plain counter, which
 * ThreadSanitizer would see race. Returns inside's value on the way out
 * (1 while the caller is still alone). */
static int alone(atomic_int *inside, long *counter, const char *what)
{
	CHECK(atomic_fetch_add(inside, 1) == 0, "%s", what);
	(*counter)++;
	return atomic_fetch_sub(inside, 1);
}

/* ====================================================================== */
/* mutex                                                                    */

struct mutex_ctx {
	ursa_mutex_t m;
	atomic_int inside;
	long counter; /* plain: protected by m */
	int iters;
	atomic_long timeouts;
	atomic_int ring_ok;
};

static void mutex_cs(struct mutex_ctx *c)
{
	CHECK(alone(&c->inside, &c->counter, "two holders of a mutex") == 1,
	      "two holders of a mutex");
}

static void mutex_thread(struct targ *a)
{
	struct mutex_ctx *c = a->ctx;
	uint32_t seed = 0x1234u + (uint32_t)a->id * 7919u;
	for (int i = 0; i < c->iters; i++) {
		uint32_t k = t_rnd(&seed) % 10;
		int r;
		if (k < 6) {
			r = ursa_mutex_lock(&c->m);
		} else if (k < 8) {
			while ((r = ursa_mutex_trylock(&c->m)) == -EBUSY)
				sched_yield();
		} else {
			struct timespec ts = t_after_us(k == 8 ? CLOCK_MONOTONIC : CLOCK_REALTIME, 30);
			r = ursa_mutex_timedlock(&c->m, k == 8 ? CLOCK_MONOTONIC : CLOCK_REALTIME,
						 &ts);
			if (r == -ETIMEDOUT) {
				atomic_fetch_add(&c->timeouts, 1);
				r = ursa_mutex_lock(&c->m);
			}
		}
		CHECK(r == 0, "mutex lock: %d", r);
		mutex_cs(c);
		CHECK(ursa_mutex_unlock(&c->m) == 0, "unlock");
	}
}

/* A ring thread locks the same mutex through the ring. */
static void mutex_ring_thread(struct targ *a)
{
	struct mutex_ctx *c = a->ctx;
	uint32_t seed = 0x777u + (uint32_t)a->id;
	for (int i = 0; i < c->iters; i++) {
		struct ursa_op op;
		if (ring_variant(a->r, &op, &seed, W_MUTEX, &c->m) != 0) {
			atomic_fetch_add(&c->timeouts, 1);
			CHECK(ursa_mutex_lock(&c->m) == 0, "lock");
		}
		mutex_cs(c);
		CHECK(ursa_mutex_unlock(&c->m) == 0, "unlock");
	}
	atomic_fetch_add(&c->ring_ok, 1);
}

static void test_mutex(unsigned flags, bool ring)
{
	static struct mutex_ctx c;
	memset(&c, 0, sizeof(c));
	CHECK(ursa_mutex_init(&c.m, flags) == 0, "init");
	c.iters = ITERS(ring ? 3000 : 20000);
	int n = 4;
	run_threads(n, mutex_thread, ring ? 0 : -1, mutex_ring_thread, &c);
	CHECK(c.counter == (long)n * c.iters, "counter %ld, expected %ld", c.counter,
	      (long)n * c.iters);
	CHECK(ursa_mutex_destroy(&c.m) == 0, "destroy of a free mutex");
	CHECK(ursa_mutex_unlock(&c.m) == -EPERM, "unlock of a free mutex");
	if (ring)
		CHECK(c.ring_ok == 1, "ring thread did not finish");
}

/* ====================================================================== */
/* rwlock                                                                   */

struct rw_ctx {
	ursa_rwlock_t l;
	atomic_int readers, writers;
	long a, b; /* plain: written by writers only, read by readers */
	int iters;
	atomic_long reads, writes;
};

static void rw_read_cs(struct rw_ctx *c)
{
	atomic_fetch_add(&c->readers, 1);
	CHECK(atomic_load(&c->writers) == 0, "a reader inside with a writer");
	long a = c->a, b = c->b;
	CHECK(a == b, "torn read: %ld != %ld", a, b);
	atomic_fetch_sub(&c->readers, 1);
	atomic_fetch_add(&c->reads, 1);
}

static void rw_write_cs(struct rw_ctx *c)
{
	CHECK(atomic_fetch_add(&c->writers, 1) == 0, "two writers inside");
	CHECK(atomic_load(&c->readers) == 0, "a writer inside with readers");
	c->a++;
	c->b++;
	CHECK(atomic_fetch_sub(&c->writers, 1) == 1, "two writers inside");
	atomic_fetch_add(&c->writes, 1);
}

/* The section of a holder (a writer when wr), then its unlock. */
static void rw_cs_unlock(struct rw_ctx *c, bool wr)
{
	if (wr) {
		rw_write_cs(c);
		CHECK(ursa_rwlock_wrunlock(&c->l) == 0, "wrunlock");
	} else {
		rw_read_cs(c);
		CHECK(ursa_rwlock_rdunlock(&c->l) == 0, "rdunlock");
	}
}

static int rw_lock(struct rw_ctx *c, bool wr, uint32_t *seed)
{
	uint32_t k = t_rnd(seed) % 6;
	int r;
	if (k < 3)
		return wr ? ursa_rwlock_wrlock(&c->l) : ursa_rwlock_rdlock(&c->l);
	if (k < 5) {
		while ((r = wr ? ursa_rwlock_trywrlock(&c->l) : ursa_rwlock_tryrdlock(&c->l)) ==
		       -EBUSY)
			sched_yield();
		return r;
	}
	struct timespec ts = t_after_us(CLOCK_MONOTONIC, 40);
	r = wr ? ursa_rwlock_timedwrlock(&c->l, CLOCK_MONOTONIC, &ts)
	       : ursa_rwlock_timedrdlock(&c->l, CLOCK_MONOTONIC, &ts);
	if (r == -ETIMEDOUT)
		r = wr ? ursa_rwlock_wrlock(&c->l) : ursa_rwlock_rdlock(&c->l);
	return r;
}

static void rw_thread(struct targ *a)
{
	struct rw_ctx *c = a->ctx;
	bool writer = a->id < 2;
	uint32_t seed = 0xabcdu + (uint32_t)a->id * 31u;
	for (int i = 0; i < c->iters; i++) {
		int r = rw_lock(c, writer, &seed);
		CHECK(r == 0, "rwlock lock: %d", r);
		rw_cs_unlock(c, writer);
	}
}

static void rw_ring_thread(struct targ *a)
{
	struct rw_ctx *c = a->ctx;
	uint32_t seed = 0x4242u;
	for (int i = 0; i < c->iters; i++) {
		struct ursa_op op;
		bool wr = i & 1;
		if (ring_variant(a->r, &op, &seed, wr ? W_WRLOCK : W_RDLOCK, &c->l) != 0)
			CHECK((wr ? ursa_rwlock_wrlock(&c->l) : ursa_rwlock_rdlock(&c->l)) == 0,
			      "lock");
		rw_cs_unlock(c, wr);
	}
}

static void test_rwlock(unsigned flags, bool ring)
{
	static struct rw_ctx c;
	memset(&c, 0, sizeof(c));
	CHECK(ursa_rwlock_init(&c.l, flags) == 0, "init");
	c.iters = ITERS(ring ? 2000 : 8000);
	int n = ring ? 5 : 4; /* 2 writers, 2 readers (+ a ring thread) */
	run_threads(n, rw_thread, ring ? 4 : -1, rw_ring_thread, &c);
	CHECK(c.writes == c.a && c.a == c.b, "writes %ld, a %ld, b %ld", (long)c.writes, c.a,
	      c.b);
	CHECK(c.reads + c.writes == (long)n * c.iters, "operations lost");
	CHECK(ursa_rwlock_destroy(&c.l) == 0, "destroy of a free rwlock");
	CHECK(ursa_rwlock_rdunlock(&c.l) == -EPERM, "rdunlock of a free rwlock");
	CHECK(ursa_rwlock_wrunlock(&c.l) == -EPERM, "wrunlock of a free rwlock");
}

/*
 * Every writer waits in a ring (its timed-out and cancelled waits retried
 * in the ring), beside readers that block: no writer's sleep is bounded,
 * so a writer wake lost behind WRITER_WOKEN (lib/rwlock.c: a woken writer
 * that never steps, a wake that found nobody and kept the bit) would leave
 * a ring writer asleep for good, and the suite's timeout fails the test.
 * A writer inside its section counts the times it saw WRITER_WOKEN set
 * (white-box: bit 28 of __state), so the test knows it ran the protocol's
 * new path: a woken writer still on its way while another holds the lock.
 */
#define T_RW_WRITER_WOKEN (1u << 28)

struct rw_rings {
	struct rw_ctx c;
	atomic_long woken_seen;
};

static void rw_rings_writer(struct targ *a)
{
	struct rw_rings *x = a->ctx;
	uint32_t seed = 0x9e37u + (uint32_t)a->id * 131u;
	ring_slow = true;
	for (int i = 0; i < x->c.iters; i++) {
		bool wr = (i % 4) != 3;
		ring_take(a->r, &seed, wr ? W_WRLOCK : W_RDLOCK, &x->c.l);
		if (wr) {
			/* Hold it across a reschedule: the others queue up and
			 * sleep, so the unlocks wake. */
			sched_yield();
			if (__atomic_load_n(&x->c.l.__state, __ATOMIC_RELAXED) & T_RW_WRITER_WOKEN)
				atomic_fetch_add(&x->woken_seen, 1);
		}
		rw_cs_unlock(&x->c, wr);
	}
}

static void rw_rings_reader(struct targ *a)
{
	struct rw_rings *x = a->ctx;
	for (int i = 0; i < x->c.iters; i++) {
		CHECK(ursa_rwlock_rdlock(&x->c.l) == 0, "rdlock");
		rw_cs_unlock(&x->c, false);
	}
}

static void test_rwlock_ring_writers(unsigned flags)
{
	enum { RINGS = 3, READERS = 2, N = RINGS + READERS };
	static struct rw_rings x;
	static struct targ args[N];
	pthread_t t[N];
	memset(&x, 0, sizeof(x));
	CHECK(ursa_rwlock_init(&x.c.l, flags) == 0, "init");
	x.c.iters = ITERS(3000);
	/* A ring writer that lost two races asks for a hand-off, and a handed
	 * lock is claimed by the woken writer, not overtaken: the path comes
	 * up less often than before the hand-off (under ThreadSanitizer one
	 * batch once saw it never). Run batches until it has come up, at
	 * most 20. */
	int rounds = 0;
	do {
		for (int i = 0; i < N; i++) {
			args[i] = (struct targ){i, &x, i < RINGS ? rw_rings_writer : rw_rings_reader,
						i < RINGS, NULL};
			CHECK(pthread_create(&t[i], NULL, thread_main, &args[i]) == 0,
			      "pthread_create");
		}
		for (int i = 0; i < N; i++)
			CHECK(pthread_join(t[i], NULL) == 0, "pthread_join");
		rounds++;
	} while (atomic_load(&x.woken_seen) == 0 && rounds < 20);
	struct rw_ctx *c = &x.c;
	CHECK(c->writes == c->a && c->a == c->b, "writes %ld, a %ld, b %ld", (long)c->writes, c->a,
	      c->b);
	CHECK(c->reads + c->writes == (long)rounds * N * c->iters, "operations lost");
	cr_log_info("a woken writer on its way seen %ld times in %d batch(es)",
		    (long)atomic_load(&x.woken_seen), rounds);
	CHECK(atomic_load(&x.woken_seen) > 0,
	      "no writer ever held the lock while a woken writer was on its way: the "
	      "test did not reach the path it is for");
	CHECK(ursa_rwlock_destroy(&c->l) == 0, "a bit left behind (WRITER_WOKEN?)");
}

/* ====================================================================== */
/* cond: a bounded buffer                                                   */

#define BUF 4
struct cond_ctx {
	ursa_mutex_t m;
	ursa_cond_t not_empty, not_full;
	long buf[BUF]; /* plain, under m */
	int head, count;
	long produced_sum, consumed_sum; /* under m */
	int consumed, total;
	int per_producer;
};

static int cwait(ursa_cond_t *cv, ursa_mutex_t *m, uint32_t *seed)
{
	if (t_rnd(seed) % 4)
		return ursa_cond_wait(cv, m);
	struct timespec ts = t_after_us(CLOCK_MONOTONIC, 50);
	int r = ursa_cond_timedwait(cv, m, CLOCK_MONOTONIC, &ts);
	return r == -ETIMEDOUT ? 0 : r; /* m is held again either way */
}

static void cond_producer(struct targ *a)
{
	struct cond_ctx *c = a->ctx;
	uint32_t seed = 0x5151u + (uint32_t)a->id;
	for (int i = 0; i < c->per_producer; i++) {
		long v = (long)a->id * 1000003L + i;
		CHECK(ursa_mutex_lock(&c->m) == 0, "lock");
		while (c->count == BUF)
			CHECK(cwait(&c->not_full, &c->m, &seed) == 0, "cond wait");
		c->buf[(c->head + c->count) % BUF] = v;
		c->count++;
		c->produced_sum += v;
		/* Signal inside or outside the lock, signal or broadcast. */
		uint32_t k = t_rnd(&seed) % 4;
		if (k == 0)
			CHECK(ursa_cond_broadcast(&c->not_empty) == 0, "broadcast");
		else if (k == 1)
			CHECK(ursa_cond_signal(&c->not_empty) == 0, "signal");
		CHECK(ursa_mutex_unlock(&c->m) == 0, "unlock");
		if (k >= 2)
			CHECK(ursa_cond_signal(&c->not_empty) == 0, "signal");
	}
}

/* A consumer holding m, woken with an item there or with every item
 * consumed: takes the item. Returns false once every item is consumed. */
static bool cond_take(struct cond_ctx *c)
{
	if (c->consumed == c->total)
		return false;
	long v = c->buf[c->head];
	c->head = (c->head + 1) % BUF;
	c->count--;
	c->consumed++;
	c->consumed_sum += v;
	if (c->consumed == c->total)
		CHECK(ursa_cond_broadcast(&c->not_empty) == 0, "broadcast");
	CHECK(ursa_cond_signal(&c->not_full) == 0, "signal");
	return true;
}

static void cond_consumer(struct targ *a)
{
	struct cond_ctx *c = a->ctx;
	uint32_t seed = 0x6161u + (uint32_t)a->id;
	CHECK(ursa_mutex_lock(&c->m) == 0, "lock");
	for (;;) {
		while (c->count == 0 && c->consumed < c->total)
			CHECK(cwait(&c->not_empty, &c->m, &seed) == 0, "cond wait");
		if (!cond_take(c))
			break;
	}
	CHECK(ursa_mutex_unlock(&c->m) == 0, "unlock");
}

/* A ring consumer: locks m through the ring, waits on not_empty through
 * the ring (ursa_cond_wait_async finishes holding m). */
static void cond_ring_consumer(struct targ *a)
{
	struct cond_ctx *c = a->ctx;
	struct io_uring *r = a->r;
	uint32_t seed = 0x7171u;
	struct ursa_op op;
	if (ring_variant(r, &op, &seed, W_MUTEX, &c->m) != 0)
		CHECK(ursa_mutex_lock(&c->m) == 0, "lock");
	for (;;) {
		while (c->count == 0 && c->consumed < c->total) {
			uint32_t k = op_prepare(&op, &seed, 4, 100, 0);
			int st = ursa_cond_wait_async(r, &c->not_empty, &c->m, &op);
			int res = ring_finish(r, &op, st, k == 1);
			CHECK(res == 0 || res == -ETIMEDOUT || res == -ECANCELED,
			      "cond_wait_async: %d", res);
			/* Finished holding m, whatever res is. */
			CHECK(ursa_mutex_trylock(&c->m) == -EBUSY, "m not held after cond op");
		}
		if (!cond_take(c))
			break;
	}
	CHECK(ursa_mutex_unlock(&c->m) == 0, "unlock");
}

static void cond_thread(struct targ *a)
{
	(a->id < 2 ? cond_producer : cond_consumer)(a);
}

static void test_cond(unsigned flags, bool ring)
{
	static struct cond_ctx c;
	memset(&c, 0, sizeof(c));
	CHECK(ursa_mutex_init(&c.m, flags) == 0, "init");
	CHECK(ursa_cond_init(&c.not_empty, flags) == 0, "init");
	CHECK(ursa_cond_init(&c.not_full, flags) == 0, "init");
	c.per_producer = ITERS(ring ? 2000 : 5000);
	c.total = 2 * c.per_producer;
	/* 2 producers, 2 consumers (one in a ring) */
	run_threads(4, cond_thread, ring ? 2 : -1, cond_ring_consumer, &c);
	CHECK(c.consumed == c.total && c.count == 0, "items lost: %d of %d", c.consumed, c.total);
	CHECK(c.consumed_sum == c.produced_sum, "sums differ");
	CHECK(ursa_cond_destroy(&c.not_empty) == 0 && ursa_cond_destroy(&c.not_full) == 0,
	      "destroy of an unwaited cond");
}

/* ====================================================================== */
/* sem                                                                      */

struct sem_ctx {
	ursa_sem_t s;     /* counting: producers -> consumers */
	ursa_sem_t bin;   /* binary: used as a lock */
	atomic_int tickets; /* units still to be taken */
	atomic_long taken;
	atomic_int inside;
	long counter; /* plain, under bin */
	int per_poster;
};

/* The binary semaphore used as a lock. */
static void bin_cs(struct sem_ctx *c)
{
	CHECK(ursa_sem_wait(&c->bin) == 0, "wait bin");
	alone(&c->inside, &c->counter, "binary sem: two inside");
	CHECK(ursa_sem_post(&c->bin) == 0, "post bin");
}

static void sem_thread(struct targ *a)
{
	struct sem_ctx *c = a->ctx;
	uint32_t seed = 0x9191u + (uint32_t)a->id;
	if (a->id < 2) {
		/* Posters; they also use the binary semaphore as a lock. */
		for (int i = 0; i < c->per_poster; i++) {
			int r;
			while ((r = ursa_sem_post(&c->s)) == -EOVERFLOW)
				sched_yield();
			CHECK(r == 0, "post: %d", r);
			if (i % 8 == 0)
				bin_cs(c);
		}
		return;
	}
	/* Consumers: claim a ticket, then take one unit however long it takes. */
	while (atomic_fetch_sub(&c->tickets, 1) > 0) {
		uint32_t k = t_rnd(&seed) % 4;
		int r = TAKE(sem, &c->s, k, 30);
		CHECK(r == 0, "sem take: %d", r);
		atomic_fetch_add(&c->taken, 1);
		if (k == 3)
			bin_cs(c);
	}
}

static void sem_ring_thread(struct targ *a)
{
	struct sem_ctx *c = a->ctx;
	uint32_t seed = 0x3333u;
	while (atomic_fetch_sub(&c->tickets, 1) > 0) {
		ring_take(a->r, &seed, W_SEM, &c->s);
		atomic_fetch_add(&c->taken, 1);
	}
}

static void test_sem(unsigned flags, bool ring)
{
	static struct sem_ctx c;
	memset(&c, 0, sizeof(c));
	CHECK(ursa_sem_init(&c.s, 0, flags) == 0, "init");
	CHECK(ursa_sem_init(&c.bin, 1, flags) == 0, "init");
	c.per_poster = ITERS(ring ? 3000 : 10000);
	atomic_store(&c.tickets, 2 * c.per_poster);
	run_threads(ring ? 5 : 4, sem_thread, ring ? 4 : -1, sem_ring_thread, &c);
	CHECK(c.taken == 2L * c.per_poster, "taken %ld of %d", (long)c.taken, 2 * c.per_poster);
	CHECK(ursa_sem_value(&c.s) == 0, "value %d left", ursa_sem_value(&c.s));
	CHECK(ursa_sem_value(&c.bin) == 1, "binary semaphore value %d", ursa_sem_value(&c.bin));
	CHECK(ursa_sem_destroy(&c.s) == 0 && ursa_sem_destroy(&c.bin) == 0, "destroy");
}

/* ====================================================================== */
/* event                                                                    */

/* Manual-reset: rounds. The coordinator writes `data`, sets ev[r % 2];
 * every worker waits for it, reads data (plain: TSan checks the set/wait
 * edge) and acknowledges through a semaphore-free counter. */
struct mev_ctx {
	ursa_event_t ev[2];
	ursa_event_t ack; /* auto-reset: the last worker to acknowledge sets it */
	atomic_int acks;
	long data; /* plain: written before set, read after wait */
	int rounds, workers;
};

static void mev_worker(struct targ *a)
{
	struct mev_ctx *c = a->ctx;
	uint32_t seed = 0x2468u + (uint32_t)a->id;
	for (int r = 0; r < c->rounds; r++) {
		ursa_event_t *e = &c->ev[r % 2];
		int rc = TAKE(event, e, t_rnd(&seed) % 3, 40);
		CHECK(rc == 0, "event wait: %d", rc);
		CHECK(c->data == r, "saw data %ld in round %d", c->data, r);
		if (atomic_fetch_add(&c->acks, 1) + 1 == c->workers)
			CHECK(ursa_event_set(&c->ack) == 0, "set ack");
	}
}

static void mev_thread(struct targ *a)
{
	struct mev_ctx *c = a->ctx;
	if (a->id > 0) {
		mev_worker(a);
		return;
	}
	for (int r = 0; r < c->rounds; r++) {
		/* Every worker acknowledged round r - 1, so all have passed
		 * ev[(r + 1) % 2]: it can be reset for round r + 1. */
		CHECK(ursa_event_reset(&c->ev[(r + 1) % 2]) == 0, "reset");
		atomic_store(&c->acks, 0);
		c->data = r;
		CHECK(ursa_event_set(&c->ev[r % 2]) == 0, "set");
		CHECK(ursa_event_wait(&c->ack) == 0, "wait ack");
		CHECK(atomic_load(&c->acks) == c->workers, "acks");
	}
}

/* Auto-reset: a token. One set; every thread waits (consumes it), works
 * alone, and sets it again: mutual exclusion proves exactly-once. */
struct aev_ctx {
	ursa_event_t e;
	atomic_int inside;
	long counter;
	int iters;
};

static void aev_cs(struct aev_ctx *c)
{
	alone(&c->inside, &c->counter, "auto-reset event released two waiters");
	CHECK(ursa_event_set(&c->e) == 0, "set");
}

static void aev_thread(struct targ *a)
{
	struct aev_ctx *c = a->ctx;
	uint32_t seed = 0x1357u + (uint32_t)a->id;
	for (int i = 0; i < c->iters; i++) {
		int rc = TAKE(event, &c->e, t_rnd(&seed) % 4, 40);
		CHECK(rc == 0, "event wait: %d", rc);
		aev_cs(c);
	}
}

static void aev_ring_thread(struct targ *a)
{
	struct aev_ctx *c = a->ctx;
	uint32_t seed = 0x8888u;
	for (int i = 0; i < c->iters; i++) {
		ring_take(a->r, &seed, W_EVENT, &c->e);
		aev_cs(c);
	}
}

static void test_event(unsigned flags, bool ring)
{
	if (!ring) {
		static struct mev_ctx m;
		memset(&m, 0, sizeof(m));
		CHECK(ursa_event_init(&m.ev[0], flags) == 0, "init");
		CHECK(ursa_event_init(&m.ev[1], flags) == 0, "init");
		CHECK(ursa_event_init(&m.ack, flags | URSA_EVENT_AUTO_RESET) == 0, "init");
		m.rounds = ITERS(2000);
		m.workers = 3;
		run_threads(1 + m.workers, mev_thread, -1, NULL, &m);
		CHECK(ursa_event_destroy(&m.ev[0]) == 0 && ursa_event_destroy(&m.ev[1]) == 0,
		      "destroy of an unwaited event");
	}
	static struct aev_ctx c;
	memset(&c, 0, sizeof(c));
	CHECK(ursa_event_init(&c.e, flags | URSA_EVENT_AUTO_RESET) == 0, "init");
	CHECK(ursa_event_set(&c.e) == 0, "set");
	c.iters = ITERS(ring ? 2000 : 8000);
	run_threads(3, aev_thread, ring ? 0 : -1, aev_ring_thread, &c);
	CHECK(c.counter == 3L * c.iters, "counter %ld", c.counter);
	CHECK(ursa_event_trywait(&c.e) == 0, "the token is left set at the end");
	CHECK(ursa_event_trywait(&c.e) == -EBUSY, "auto-reset: consumed once");
	CHECK(ursa_event_destroy(&c.e) == 0, "destroy");
}

/* ====================================================================== */
/* waitq: prepare / re-check / wait or cancel, against every wake kind     */

#define WQ_WAITERS 3
struct wq_ctx {
	ursa_waitq_t *q;
	atomic_long flushed; /* the condition: "flushed up to" */
	atomic_int done_waiters;
	atomic_long woken, cancelled, timedout;
	long target_max;
	bool ring; /* waiter 0 waits in a ring; the waker wakes through one */
};

static void wq_waiter(struct targ *a)
{
	struct wq_ctx *c = a->ctx;
	uint32_t slot = (uint32_t)a->id;
	uint32_t seed = 0x4321u + slot;
	for (long target = 1 + slot; target <= c->target_max; target += 1 + t_rnd(&seed) % 3) {
		while (atomic_load(&c->flushed) < target) {
			CHECK(ursa_waitq_prepare(c->q, slot, (uint64_t)target) == 0, "prepare");
			if (atomic_load(&c->flushed) >= target) {
				int rc = ursa_waitq_cancel(c->q, slot);
				CHECK(rc == 0 || rc == 1, "cancel: %d", rc);
				atomic_fetch_add(rc ? &c->woken : &c->cancelled, 1);
				break;
			}
			int rc;
			if (a->r) { /* waiter 0, when it waits in a ring */
				struct ursa_op op;
				rc = ring_variant(a->r, &op, &seed, W_WAITQ_SLOT0, c->q);
			} else if (t_rnd(&seed) % 4 == 0) {
				struct timespec ts = t_after_us(CLOCK_MONOTONIC, 50);
				rc = ursa_waitq_wait(c->q, slot, CLOCK_MONOTONIC, &ts);
			} else {
				rc = ursa_waitq_wait(c->q, slot, CLOCK_MONOTONIC, NULL);
			}
			if (rc == 0) {
				atomic_fetch_add(&c->woken, 1);
			} else {
				CHECK(rc == -ETIMEDOUT || rc == -ECANCELED, "waitq wait: %d", rc);
				atomic_fetch_add(&c->timedout, 1);
				/* The slot was dequeued: free for the next prepare. */
			}
		}
	}
	atomic_fetch_add(&c->done_waiters, 1);
}

static void wq_waker(struct targ *a)
{
	struct wq_ctx *c = a->ctx;
	uint32_t seed = 0x8765u;
	struct io_uring r;
	struct io_uring *rp = NULL;
	if (c->ring) {
		CHECK(io_uring_queue_init(16, &r, 0) == 0, "io_uring_queue_init");
		rp = &r;
	}
	while (atomic_load(&c->done_waiters) < WQ_WAITERS) {
		long f = atomic_load(&c->flushed);
		if (f < c->target_max + 3)
			atomic_store(&c->flushed, f + 1); /* make the condition true first */
		uint32_t k = t_rnd(&seed) % 4;
		int rc;
		struct io_uring *use = (t_rnd(&seed) & 1) ? rp : NULL;
		if (k == 0)
			rc = ursa_waitq_wake(c->q, 1 + t_rnd(&seed) % 3, use);
		else if (k == 1)
			rc = ursa_waitq_wake_slot(c->q, t_rnd(&seed) % WQ_WAITERS, use);
		else
			rc = ursa_waitq_wake_upto(c->q, (uint64_t)atomic_load(&c->flushed), use);
		CHECK(rc >= 0, "wake: %d", rc);
		if (k < 2) /* wake and wake_slot may leave satisfied waiters: catch up */
			CHECK(ursa_waitq_wake_upto(c->q, (uint64_t)atomic_load(&c->flushed), use) >= 0,
			      "wake_upto");
		if (use) {
			struct io_uring_cqe *cqe;
			/* Successful wakes post no CQE; an error one is ursa's. */
			while (io_uring_peek_cqe(&r, &cqe) == 0) {
				CHECK(cqe->res >= 0, "FUTEX_WAKE CQE res %d", cqe->res);
				io_uring_cqe_seen(&r, cqe);
			}
		}
		sched_yield();
	}
	if (rp)
		io_uring_queue_exit(&r);
}

static void wq_thread(struct targ *a)
{
	(a->id < WQ_WAITERS ? wq_waiter : wq_waker)(a);
}

static void test_waitq(unsigned flags, bool ring)
{
	static struct wq_ctx c;
	memset(&c, 0, sizeof(c));
	size_t sz = ursa_waitq_size(WQ_WAITERS);
	c.q = aligned_alloc(8, (sz + 7) & ~(size_t)7);
	CHECK(c.q && ursa_waitq_init(c.q, WQ_WAITERS, flags) == 0, "init");
	c.target_max = ITERS(3000L);
	c.ring = ring;
	run_threads(WQ_WAITERS + 1, wq_thread, ring ? 0 : -1, wq_thread, &c);
	for (uint32_t s = 0; s < WQ_WAITERS; s++) {
		/* Every slot is idle again: prepare works, cancel dequeues. */
		CHECK(ursa_waitq_prepare(c.q, s, 0) == 0, "slot %u left busy", s);
		CHECK(ursa_waitq_cancel(c.q, s) == 0, "cancel");
	}
	CHECK(ursa_waitq_wake(c.q, 10, NULL) == 0, "queue not empty");
	cr_log_info("woken %ld cancelled %ld timed out %ld", (long)c.woken, (long)c.cancelled,
		    (long)c.timedout);
	free(c.q);
}

/* ====================================================================== */
/* wait_any: {mutex, semaphore, stop event}                                 */

struct any_ctx {
	ursa_mutex_t m;
	ursa_sem_t s;
	ursa_event_t stop; /* manual-reset */
	atomic_int inside;
	long counter;	    /* plain, under m */
	atomic_long units; /* semaphore units taken by wait_any */
	int posts;
};

static void any_thread(struct targ *a)
{
	struct any_ctx *c = a->ctx;
	if (a->id == 0) {
		/* Feeder: posts units in bursts while holding m, so that the
		 * consumers find both objects busy and sleep on both. */
		for (int i = 0; i < c->posts; i += 4) {
			CHECK(ursa_mutex_lock(&c->m) == 0, "lock");
			CHECK(atomic_fetch_add(&c->inside, 1) == 0, "two holders");
			c->counter++;
			for (int j = i; j < i + 4 && j < c->posts; j++)
				CHECK(ursa_sem_post(&c->s) == 0, "post");
			atomic_fetch_sub(&c->inside, 1);
			CHECK(ursa_mutex_unlock(&c->m) == 0, "unlock");
			sched_yield();
		}
		CHECK(ursa_event_set(&c->stop) == 0, "set stop");
		return;
	}
	/* Index order is preference order: stop first, so that the consumers
	 * leave once it is set (a free mutex would otherwise always win). */
	ursa_waitable_t v[3] = {
		{URSA_WAIT_EVENT, &c->stop}, {URSA_WAIT_SEM, &c->s}, {URSA_WAIT_MUTEX, &c->m}};
	uint32_t seed = 0x1111u * (uint32_t)a->id;
	struct io_uring *r = a->r; /* consumer 1, when it waits in a ring */
	for (;;) {
		int idx;
		if (r) {
			/* The same wait in a ring (IORING_OP_FUTEX_WAITV): res is
			 * the index taken; a cancelled or timed-out op took
			 * nothing. */
			struct ursa_op op;
			uint32_t k = op_prepare(&op, &seed, 8, 40, 0);
			idx = ring_finish(r, &op, ursa_wait_any_async(r, v, 3, &op), k == 1);
			if ((k == 0 && idx == -ETIMEDOUT) || (k == 1 && idx == -ECANCELED))
				continue;
		} else if (t_rnd(&seed) % 4 == 0) {
			struct timespec ts = t_after_us(CLOCK_MONOTONIC, 40);
			idx = ursa_wait_any(v, 3, CLOCK_MONOTONIC, &ts);
			if (idx == -ETIMEDOUT)
				continue;
		} else {
			idx = ursa_wait_any(v, 3, CLOCK_MONOTONIC, NULL);
		}
		CHECK(idx >= 0 && idx < 3, "wait_any: %d", idx);
		if (idx == 2) {
			alone(&c->inside, &c->counter, "wait_any took a held mutex");
			CHECK(ursa_mutex_unlock(&c->m) == 0, "unlock after wait_any");
			sched_yield();
		} else if (idx == 1) {
			atomic_fetch_add(&c->units, 1);
		} else {
			break;
		}
	}
}

static void test_wait_any(unsigned flags, bool ring)
{
	t_require_futex_waitv();
	if (ring)
		t_require_uring_futex(true);
	static struct any_ctx c;
	memset(&c, 0, sizeof(c));
	CHECK(ursa_mutex_init(&c.m, flags) == 0, "init");
	CHECK(ursa_sem_init(&c.s, 0, flags) == 0, "init");
	CHECK(ursa_event_init(&c.stop, flags) == 0, "init");
	ursa_waitable_t probe = {URSA_WAIT_SEM, &c.s};
	struct timespec past = {0, 0};
	int r = ursa_wait_any(&probe, 1, CLOCK_MONOTONIC, &past);
	CHECK(r == -ETIMEDOUT, "wait_any with a past deadline on an empty sem: %d", r);
	c.posts = ITERS(6000);
	run_threads(4, any_thread, ring ? 1 : -1, any_thread, &c);
	long left = 0;
	while (ursa_sem_trywait(&c.s) == 0)
		left++;
	CHECK(c.units + left == c.posts, "units: %ld taken + %ld left != %d posted",
	      (long)c.units, left, c.posts);
	CHECK(ursa_mutex_destroy(&c.m) == 0, "mutex left held");
	CHECK(ursa_sem_destroy(&c.s) == 0, "sem waiters left registered");
}

/* ====================================================================== */

static void require_async(void)
{
	const char *why = async_unavailable();
	if (why)
		cr_skip_test("%s", why);
}

#define CONTENDED(prim)                                                                   \
	Test(contended, prim##_private) { test_##prim(0, false); }                         \
	Test(contended, prim##_shared) { test_##prim(URSA_SHARED, false); }                \
	Test(contended, prim##_ring_private, .init = require_async) { test_##prim(0, true); } \
	Test(contended, prim##_ring_shared, .init = require_async)                         \
	{                                                                                 \
		test_##prim(URSA_SHARED, true);                                           \
	}

CONTENDED(mutex)
CONTENDED(rwlock)
CONTENDED(cond)
CONTENDED(sem)
CONTENDED(event)
CONTENDED(waitq)
CONTENDED(wait_any)

Test(contended, rwlock_ring_writers_private, .init = require_async)
{
	test_rwlock_ring_writers(0);
}

Test(contended, rwlock_ring_writers_shared, .init = require_async)
{
	test_rwlock_ring_writers(URSA_SHARED);
}
