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

/* ---- checking and helpers ------------------------------------------- */

/* Iteration counts: t_iters(n) scales n by URSA_TEST_SCALE. */
#define ITERS(n) ((int)t_iters(n))

TestSuite(contended, .timeout = 240);

#define CHECK(cond, ...) cr_assert(cond, __VA_ARGS__)

static struct timespec after_us(clockid_t clk, long us)
{
	struct timespec ts;
	clock_gettime(clk, &ts);
	ts.tv_nsec += us * 1000;
	while (ts.tv_nsec >= 1000000000L) {
		ts.tv_nsec -= 1000000000L;
		ts.tv_sec++;
	}
	return ts;
}

/* A small per-thread PRNG (xorshift), so choices differ between threads
 * without sharing state. */
static uint32_t rnd(uint32_t *s)
{
	uint32_t x = *s;
	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return *s = x ? x : 0x9e3779b9u;
}

#define MAXT 8
static pthread_t g_tids[MAXT];

struct targ {
	int id;
	void *ctx;
};

static void run_threads(int n, void *(*fn)(void *), void *ctx)
{
	static struct targ args[MAXT];
	CHECK(n <= MAXT, "too many threads");
	for (int i = 0; i < n; i++) {
		args[i].id = i;
		args[i].ctx = ctx;
		CHECK(pthread_create(&g_tids[i], NULL, fn, &args[i]) == 0, "pthread_create");
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

/* How a ring thread varies its ops: plain, with a short deadline, or
 * cancelled while in flight. Returns the op's result. */
static int ring_variant(struct io_uring *r, struct ursa_op *op, uint32_t *seed,
			int (*start)(struct io_uring *, void *, struct ursa_op *), void *obj)
{
	memset(op, 0, sizeof(*op));
	uint32_t k = rnd(seed) % 8;
	if (k == 0) {
		struct timespec ts = after_us(CLOCK_MONOTONIC, 50 + rnd(seed) % 200);
		CHECK(ursa_op_set_deadline(op, CLOCK_MONOTONIC, &ts) == 0, "set_deadline");
	}
	int st = start(r, obj, op);
	int res = ring_finish(r, op, st, k == 1);
	CHECK(res == 0 || (k == 0 && res == -ETIMEDOUT) || (k == 1 && res == -ECANCELED),
	      "async op result %d (variant %u)", res, k);
	return res;
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
	CHECK(atomic_fetch_add(&c->inside, 1) == 0, "two holders of a mutex");
	c->counter++;
	CHECK(atomic_fetch_sub(&c->inside, 1) == 1, "two holders of a mutex");
}

static void *mutex_thread(void *arg)
{
	struct targ *a = arg;
	struct mutex_ctx *c = a->ctx;
	uint32_t seed = 0x1234u + (uint32_t)a->id * 7919u;
	for (int i = 0; i < c->iters; i++) {
		uint32_t k = rnd(&seed) % 10;
		int r;
		if (k < 6) {
			r = ursa_mutex_lock(&c->m);
		} else if (k < 8) {
			while ((r = ursa_mutex_trylock(&c->m)) == -EBUSY)
				sched_yield();
		} else {
			struct timespec ts = after_us(k == 8 ? CLOCK_MONOTONIC : CLOCK_REALTIME, 30);
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
	return NULL;
}

static int start_mutex(struct io_uring *r, void *obj, struct ursa_op *op)
{
	return ursa_mutex_lock_async(r, obj, op);
}

/* A ring thread locks the same mutex through the ring. */
static void *mutex_ring_thread(void *arg)
{
	struct targ *a = arg;
	struct mutex_ctx *c = a->ctx;
	struct io_uring r;
	uint32_t seed = 0x777u + (uint32_t)a->id;
	CHECK(io_uring_queue_init(8, &r, 0) == 0, "io_uring_queue_init");
	for (int i = 0; i < c->iters; i++) {
		struct ursa_op op;
		if (ring_variant(&r, &op, &seed, start_mutex, &c->m) != 0) {
			atomic_fetch_add(&c->timeouts, 1);
			CHECK(ursa_mutex_lock(&c->m) == 0, "lock");
		}
		mutex_cs(c);
		CHECK(ursa_mutex_unlock(&c->m) == 0, "unlock");
	}
	ring_drain(&r);
	io_uring_queue_exit(&r);
	atomic_fetch_add(&c->ring_ok, 1);
	return NULL;
}

static void *mutex_mixed_thread(void *arg)
{
	struct targ *a = arg;
	return a->id == 0 ? mutex_ring_thread(arg) : mutex_thread(arg);
}

static void test_mutex(unsigned flags, bool ring)
{
	static struct mutex_ctx c;
	memset(&c, 0, sizeof(c));
	CHECK(ursa_mutex_init(&c.m, flags) == 0, "init");
	c.iters = ITERS(ring ? 3000 : 20000);
	int n = 4;
	run_threads(n, ring ? mutex_mixed_thread : mutex_thread, &c);
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

static int rw_lock(struct rw_ctx *c, bool wr, uint32_t *seed)
{
	uint32_t k = rnd(seed) % 6;
	int r;
	if (k < 3)
		return wr ? ursa_rwlock_wrlock(&c->l) : ursa_rwlock_rdlock(&c->l);
	if (k < 5) {
		while ((r = wr ? ursa_rwlock_trywrlock(&c->l) : ursa_rwlock_tryrdlock(&c->l)) ==
		       -EBUSY)
			sched_yield();
		return r;
	}
	struct timespec ts = after_us(CLOCK_MONOTONIC, 40);
	r = wr ? ursa_rwlock_timedwrlock(&c->l, CLOCK_MONOTONIC, &ts)
	       : ursa_rwlock_timedrdlock(&c->l, CLOCK_MONOTONIC, &ts);
	if (r == -ETIMEDOUT)
		r = wr ? ursa_rwlock_wrlock(&c->l) : ursa_rwlock_rdlock(&c->l);
	return r;
}

static void *rw_thread(void *arg)
{
	struct targ *a = arg;
	struct rw_ctx *c = a->ctx;
	bool writer = a->id < 2;
	uint32_t seed = 0xabcdu + (uint32_t)a->id * 31u;
	for (int i = 0; i < c->iters; i++) {
		int r = rw_lock(c, writer, &seed);
		CHECK(r == 0, "rwlock lock: %d", r);
		if (writer) {
			rw_write_cs(c);
			CHECK(ursa_rwlock_wrunlock(&c->l) == 0, "wrunlock");
		} else {
			rw_read_cs(c);
			CHECK(ursa_rwlock_rdunlock(&c->l) == 0, "rdunlock");
		}
	}
	return NULL;
}

static int start_rd(struct io_uring *r, void *obj, struct ursa_op *op)
{
	return ursa_rwlock_rdlock_async(r, obj, op);
}

static int start_wr(struct io_uring *r, void *obj, struct ursa_op *op)
{
	return ursa_rwlock_wrlock_async(r, obj, op);
}

static void *rw_ring_thread(void *arg)
{
	struct targ *a = arg;
	struct rw_ctx *c = a->ctx;
	struct io_uring r;
	uint32_t seed = 0x4242u;
	CHECK(io_uring_queue_init(8, &r, 0) == 0, "io_uring_queue_init");
	for (int i = 0; i < c->iters; i++) {
		struct ursa_op op;
		bool wr = i & 1;
		if (ring_variant(&r, &op, &seed, wr ? start_wr : start_rd, &c->l) != 0)
			CHECK((wr ? ursa_rwlock_wrlock(&c->l) : ursa_rwlock_rdlock(&c->l)) == 0,
			      "lock");
		if (wr) {
			rw_write_cs(c);
			CHECK(ursa_rwlock_wrunlock(&c->l) == 0, "wrunlock");
		} else {
			rw_read_cs(c);
			CHECK(ursa_rwlock_rdunlock(&c->l) == 0, "rdunlock");
		}
	}
	ring_drain(&r);
	io_uring_queue_exit(&r);
	return NULL;
}

static void *rw_mixed_thread(void *arg)
{
	struct targ *a = arg;
	return a->id == 4 ? rw_ring_thread(arg) : rw_thread(arg);
}

static void test_rwlock(unsigned flags, bool ring)
{
	static struct rw_ctx c;
	memset(&c, 0, sizeof(c));
	CHECK(ursa_rwlock_init(&c.l, flags) == 0, "init");
	c.iters = ITERS(ring ? 2000 : 8000);
	int n = ring ? 5 : 4; /* 2 writers, 2 readers (+ a ring thread) */
	run_threads(n, ring ? rw_mixed_thread : rw_thread, &c);
	CHECK(c.writes == c.a && c.a == c.b, "writes %ld, a %ld, b %ld", (long)c.writes, c.a,
	      c.b);
	CHECK(c.reads + c.writes == (long)n * c.iters, "operations lost");
	CHECK(ursa_rwlock_destroy(&c.l) == 0, "destroy of a free rwlock");
	CHECK(ursa_rwlock_rdunlock(&c.l) == -EPERM, "rdunlock of a free rwlock");
	CHECK(ursa_rwlock_wrunlock(&c.l) == -EPERM, "wrunlock of a free rwlock");
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
	if (rnd(seed) % 4)
		return ursa_cond_wait(cv, m);
	struct timespec ts = after_us(CLOCK_MONOTONIC, 50);
	int r = ursa_cond_timedwait(cv, m, CLOCK_MONOTONIC, &ts);
	return r == -ETIMEDOUT ? 0 : r; /* m is held again either way */
}

static void *cond_producer(void *arg)
{
	struct targ *a = arg;
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
		uint32_t k = rnd(&seed) % 4;
		if (k == 0)
			CHECK(ursa_cond_broadcast(&c->not_empty) == 0, "broadcast");
		else if (k == 1)
			CHECK(ursa_cond_signal(&c->not_empty) == 0, "signal");
		CHECK(ursa_mutex_unlock(&c->m) == 0, "unlock");
		if (k >= 2)
			CHECK(ursa_cond_signal(&c->not_empty) == 0, "signal");
	}
	return NULL;
}

static void *cond_consumer(void *arg)
{
	struct targ *a = arg;
	struct cond_ctx *c = a->ctx;
	uint32_t seed = 0x6161u + (uint32_t)a->id;
	CHECK(ursa_mutex_lock(&c->m) == 0, "lock");
	for (;;) {
		while (c->count == 0 && c->consumed < c->total)
			CHECK(cwait(&c->not_empty, &c->m, &seed) == 0, "cond wait");
		if (c->consumed == c->total)
			break;
		long v = c->buf[c->head];
		c->head = (c->head + 1) % BUF;
		c->count--;
		c->consumed++;
		c->consumed_sum += v;
		if (c->consumed == c->total)
			CHECK(ursa_cond_broadcast(&c->not_empty) == 0, "broadcast");
		CHECK(ursa_cond_signal(&c->not_full) == 0, "signal");
	}
	CHECK(ursa_mutex_unlock(&c->m) == 0, "unlock");
	return NULL;
}

/* A ring consumer: locks m through the ring, waits on not_empty through
 * the ring (ursa_cond_wait_async finishes holding m). */
static void *cond_ring_consumer(void *arg)
{
	struct targ *a = arg;
	struct cond_ctx *c = a->ctx;
	struct io_uring r;
	uint32_t seed = 0x7171u;
	CHECK(io_uring_queue_init(8, &r, 0) == 0, "io_uring_queue_init");
	struct ursa_op op;
	if (ring_variant(&r, &op, &seed, start_mutex, &c->m) != 0)
		CHECK(ursa_mutex_lock(&c->m) == 0, "lock");
	for (;;) {
		while (c->count == 0 && c->consumed < c->total) {
			memset(&op, 0, sizeof(op));
			uint32_t k = rnd(&seed) % 4;
			if (k == 0) {
				struct timespec ts = after_us(CLOCK_MONOTONIC, 100);
				CHECK(ursa_op_set_deadline(&op, CLOCK_MONOTONIC, &ts) == 0, "dl");
			}
			int st = ursa_cond_wait_async(&r, &c->not_empty, &c->m, &op);
			int res = ring_finish(&r, &op, st, k == 1);
			CHECK(res == 0 || res == -ETIMEDOUT || res == -ECANCELED,
			      "cond_wait_async: %d", res);
			/* Finished holding m, whatever res is. */
			CHECK(ursa_mutex_trylock(&c->m) == -EBUSY, "m not held after cond op");
		}
		if (c->consumed == c->total)
			break;
		long v = c->buf[c->head];
		c->head = (c->head + 1) % BUF;
		c->count--;
		c->consumed++;
		c->consumed_sum += v;
		if (c->consumed == c->total)
			CHECK(ursa_cond_broadcast(&c->not_empty) == 0, "broadcast");
		CHECK(ursa_cond_signal(&c->not_full) == 0, "signal");
	}
	CHECK(ursa_mutex_unlock(&c->m) == 0, "unlock");
	ring_drain(&r);
	io_uring_queue_exit(&r);
	return NULL;
}

static bool g_cond_ring;

static void *cond_thread(void *arg)
{
	struct targ *a = arg;
	if (a->id < 2)
		return cond_producer(arg);
	if (g_cond_ring && a->id == 2)
		return cond_ring_consumer(arg);
	return cond_consumer(arg);
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
	g_cond_ring = ring;
	run_threads(4, cond_thread, &c); /* 2 producers, 2 consumers */
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

static void *sem_thread(void *arg)
{
	struct targ *a = arg;
	struct sem_ctx *c = a->ctx;
	uint32_t seed = 0x9191u + (uint32_t)a->id;
	if (a->id < 2) {
		/* Posters; they also use the binary semaphore as a lock. */
		for (int i = 0; i < c->per_poster; i++) {
			int r;
			while ((r = ursa_sem_post(&c->s)) == -EOVERFLOW)
				sched_yield();
			CHECK(r == 0, "post: %d", r);
			if (i % 8 == 0) {
				CHECK(ursa_sem_wait(&c->bin) == 0, "wait bin");
				CHECK(atomic_fetch_add(&c->inside, 1) == 0, "binary sem: two inside");
				c->counter++;
				atomic_fetch_sub(&c->inside, 1);
				CHECK(ursa_sem_post(&c->bin) == 0, "post bin");
			}
		}
		return NULL;
	}
	/* Consumers: claim a ticket, then take one unit however long it takes. */
	while (atomic_fetch_sub(&c->tickets, 1) > 0) {
		uint32_t k = rnd(&seed) % 4;
		int r;
		if (k == 0) {
			while ((r = ursa_sem_trywait(&c->s)) == -EBUSY)
				sched_yield();
		} else if (k == 1) {
			struct timespec ts = after_us(CLOCK_MONOTONIC, 30);
			r = ursa_sem_timedwait(&c->s, CLOCK_MONOTONIC, &ts);
			if (r == -ETIMEDOUT)
				r = ursa_sem_wait(&c->s);
		} else {
			r = ursa_sem_wait(&c->s);
		}
		CHECK(r == 0, "sem take: %d", r);
		atomic_fetch_add(&c->taken, 1);
		if (k == 3) {
			CHECK(ursa_sem_wait(&c->bin) == 0, "wait bin");
			CHECK(atomic_fetch_add(&c->inside, 1) == 0, "binary sem: two inside");
			c->counter++;
			atomic_fetch_sub(&c->inside, 1);
			CHECK(ursa_sem_post(&c->bin) == 0, "post bin");
		}
	}
	return NULL;
}

static int start_sem(struct io_uring *r, void *obj, struct ursa_op *op)
{
	return ursa_sem_wait_async(r, obj, op);
}

static void *sem_ring_thread(void *arg)
{
	struct targ *a = arg;
	struct sem_ctx *c = a->ctx;
	struct io_uring r;
	uint32_t seed = 0x3333u;
	CHECK(io_uring_queue_init(8, &r, 0) == 0, "io_uring_queue_init");
	while (atomic_fetch_sub(&c->tickets, 1) > 0) {
		struct ursa_op op;
		while (ring_variant(&r, &op, &seed, start_sem, &c->s) != 0)
			; /* timed out or cancelled: nothing taken; try again */
		atomic_fetch_add(&c->taken, 1);
	}
	ring_drain(&r);
	io_uring_queue_exit(&r);
	return NULL;
}

static void *sem_mixed_thread(void *arg)
{
	struct targ *a = arg;
	return a->id == 4 ? sem_ring_thread(arg) : sem_thread(arg);
}

static void test_sem(unsigned flags, bool ring)
{
	static struct sem_ctx c;
	memset(&c, 0, sizeof(c));
	CHECK(ursa_sem_init(&c.s, 0, flags) == 0, "init");
	CHECK(ursa_sem_init(&c.bin, 1, flags) == 0, "init");
	c.per_poster = ITERS(ring ? 3000 : 10000);
	atomic_store(&c.tickets, 2 * c.per_poster);
	run_threads(ring ? 5 : 4, ring ? sem_mixed_thread : sem_thread, &c);
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

static void *mev_worker(void *arg)
{
	struct targ *a = arg;
	struct mev_ctx *c = a->ctx;
	uint32_t seed = 0x2468u + (uint32_t)a->id;
	for (int r = 0; r < c->rounds; r++) {
		ursa_event_t *e = &c->ev[r % 2];
		int rc;
		uint32_t k = rnd(&seed) % 3;
		if (k == 0) {
			while ((rc = ursa_event_trywait(e)) == -EBUSY)
				sched_yield();
		} else if (k == 1) {
			struct timespec ts = after_us(CLOCK_MONOTONIC, 40);
			rc = ursa_event_timedwait(e, CLOCK_MONOTONIC, &ts);
			if (rc == -ETIMEDOUT)
				rc = ursa_event_wait(e);
		} else {
			rc = ursa_event_wait(e);
		}
		CHECK(rc == 0, "event wait: %d", rc);
		CHECK(c->data == r, "saw data %ld in round %d", c->data, r);
		if (atomic_fetch_add(&c->acks, 1) + 1 == c->workers)
			CHECK(ursa_event_set(&c->ack) == 0, "set ack");
	}
	return NULL;
}

static void *mev_thread(void *arg)
{
	struct targ *a = arg;
	struct mev_ctx *c = a->ctx;
	if (a->id > 0)
		return mev_worker(arg);
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
	return NULL;
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
	CHECK(atomic_fetch_add(&c->inside, 1) == 0, "auto-reset event released two waiters");
	c->counter++;
	atomic_fetch_sub(&c->inside, 1);
	CHECK(ursa_event_set(&c->e) == 0, "set");
}

static void *aev_thread(void *arg)
{
	struct targ *a = arg;
	struct aev_ctx *c = a->ctx;
	uint32_t seed = 0x1357u + (uint32_t)a->id;
	for (int i = 0; i < c->iters; i++) {
		int rc;
		uint32_t k = rnd(&seed) % 4;
		if (k == 0) {
			while ((rc = ursa_event_trywait(&c->e)) == -EBUSY)
				sched_yield();
		} else if (k == 1) {
			struct timespec ts = after_us(CLOCK_MONOTONIC, 40);
			rc = ursa_event_timedwait(&c->e, CLOCK_MONOTONIC, &ts);
			if (rc == -ETIMEDOUT)
				rc = ursa_event_wait(&c->e);
		} else {
			rc = ursa_event_wait(&c->e);
		}
		CHECK(rc == 0, "event wait: %d", rc);
		aev_cs(c);
	}
	return NULL;
}

static int start_event(struct io_uring *r, void *obj, struct ursa_op *op)
{
	return ursa_event_wait_async(r, obj, op);
}

static void *aev_ring_thread(void *arg)
{
	struct targ *a = arg;
	struct aev_ctx *c = a->ctx;
	struct io_uring r;
	uint32_t seed = 0x8888u;
	CHECK(io_uring_queue_init(8, &r, 0) == 0, "io_uring_queue_init");
	for (int i = 0; i < c->iters; i++) {
		struct ursa_op op;
		while (ring_variant(&r, &op, &seed, start_event, &c->e) != 0)
			;
		aev_cs(c);
	}
	ring_drain(&r);
	io_uring_queue_exit(&r);
	return NULL;
}

static bool g_aev_ring;

static void *aev_mixed(void *arg)
{
	struct targ *a = arg;
	return g_aev_ring && a->id == 0 ? aev_ring_thread(arg) : aev_thread(arg);
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
		run_threads(1 + m.workers, mev_thread, &m);
		CHECK(ursa_event_destroy(&m.ev[0]) == 0 && ursa_event_destroy(&m.ev[1]) == 0,
		      "destroy of an unwaited event");
	}
	static struct aev_ctx c;
	memset(&c, 0, sizeof(c));
	CHECK(ursa_event_init(&c.e, flags | URSA_EVENT_AUTO_RESET) == 0, "init");
	CHECK(ursa_event_set(&c.e) == 0, "set");
	c.iters = ITERS(ring ? 2000 : 8000);
	g_aev_ring = ring;
	run_threads(3, aev_mixed, &c);
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
	bool ring; /* waiter 0 waits in a ring */
};

static int start_waitq_slot0(struct io_uring *r, void *obj, struct ursa_op *op)
{
	return ursa_waitq_wait_async(r, obj, 0, op);
}

static void *wq_waiter(void *arg)
{
	struct targ *a = arg;
	struct wq_ctx *c = a->ctx;
	uint32_t slot = (uint32_t)a->id;
	uint32_t seed = 0x4321u + slot;
	struct io_uring r;
	bool ring = c->ring && slot == 0;
	if (ring)
		CHECK(io_uring_queue_init(8, &r, 0) == 0, "io_uring_queue_init");
	for (long target = 1 + slot; target <= c->target_max; target += 1 + rnd(&seed) % 3) {
		while (atomic_load(&c->flushed) < target) {
			CHECK(ursa_waitq_prepare(c->q, slot, (uint64_t)target) == 0, "prepare");
			if (atomic_load(&c->flushed) >= target) {
				int rc = ursa_waitq_cancel(c->q, slot);
				CHECK(rc == 0 || rc == 1, "cancel: %d", rc);
				atomic_fetch_add(rc ? &c->woken : &c->cancelled, 1);
				break;
			}
			int rc;
			if (ring) {
				struct ursa_op op;
				rc = ring_variant(&r, &op, &seed, start_waitq_slot0, c->q);
			} else if (rnd(&seed) % 4 == 0) {
				struct timespec ts = after_us(CLOCK_MONOTONIC, 50);
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
	if (ring) {
		ring_drain(&r);
		io_uring_queue_exit(&r);
	}
	atomic_fetch_add(&c->done_waiters, 1);
	return NULL;
}

static void *wq_waker(void *arg)
{
	struct targ *a = arg;
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
		uint32_t k = rnd(&seed) % 4;
		int rc;
		struct io_uring *use = (rnd(&seed) & 1) ? rp : NULL;
		if (k == 0)
			rc = ursa_waitq_wake(c->q, 1 + rnd(&seed) % 3, use);
		else if (k == 1)
			rc = ursa_waitq_wake_slot(c->q, rnd(&seed) % WQ_WAITERS, use);
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
	return NULL;
}

static void *wq_thread(void *arg)
{
	struct targ *a = arg;
	return a->id < WQ_WAITERS ? wq_waiter(arg) : wq_waker(arg);
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
	run_threads(WQ_WAITERS + 1, wq_thread, &c);
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
	bool ring; /* consumer 1 waits in a ring */
};

static void *any_thread(void *arg)
{
	struct targ *a = arg;
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
		return NULL;
	}
	/* Index order is preference order: stop first, so that the consumers
	 * leave once it is set (a free mutex would otherwise always win). */
	ursa_waitable_t v[3] = {
		{URSA_WAIT_EVENT, &c->stop}, {URSA_WAIT_SEM, &c->s}, {URSA_WAIT_MUTEX, &c->m}};
	uint32_t seed = 0x1111u * (uint32_t)a->id;
	struct io_uring r;
	bool ring = c->ring && a->id == 1;
	if (ring)
		CHECK(io_uring_queue_init(8, &r, 0) == 0, "io_uring_queue_init");
	for (;;) {
		int idx;
		if (ring) {
			/* The same wait in a ring (IORING_OP_FUTEX_WAITV): res is
			 * the index taken; a cancelled or timed-out op took
			 * nothing. */
			struct ursa_op op;
			memset(&op, 0, sizeof(op));
			uint32_t k = rnd(&seed) % 8;
			if (k == 0) {
				struct timespec ts = after_us(CLOCK_MONOTONIC, 40);
				CHECK(ursa_op_set_deadline(&op, CLOCK_MONOTONIC, &ts) == 0, "dl");
			}
			idx = ring_finish(&r, &op, ursa_wait_any_async(&r, v, 3, &op), k == 1);
			if ((k == 0 && idx == -ETIMEDOUT) || (k == 1 && idx == -ECANCELED))
				continue;
		} else if (rnd(&seed) % 4 == 0) {
			struct timespec ts = after_us(CLOCK_MONOTONIC, 40);
			idx = ursa_wait_any(v, 3, CLOCK_MONOTONIC, &ts);
			if (idx == -ETIMEDOUT)
				continue;
		} else {
			idx = ursa_wait_any(v, 3, CLOCK_MONOTONIC, NULL);
		}
		CHECK(idx >= 0 && idx < 3, "wait_any: %d", idx);
		if (idx == 2) {
			CHECK(atomic_fetch_add(&c->inside, 1) == 0, "wait_any took a held mutex");
			c->counter++;
			atomic_fetch_sub(&c->inside, 1);
			CHECK(ursa_mutex_unlock(&c->m) == 0, "unlock after wait_any");
			sched_yield();
		} else if (idx == 1) {
			atomic_fetch_add(&c->units, 1);
		} else {
			break;
		}
	}
	if (ring) {
		ring_drain(&r);
		io_uring_queue_exit(&r);
	}
	return NULL;
}

static void test_wait_any(unsigned flags, bool ring)
{
	struct ursa_features f;
	if (ring && (ursa_probe(&f) != 0 || !f.uring_futexv)) {
		cr_skip_test("%s", "kernel lacks IORING_OP_FUTEX_WAITV (needs Linux 6.7+)");
	}
	static struct any_ctx c;
	memset(&c, 0, sizeof(c));
	c.ring = ring;
	CHECK(ursa_mutex_init(&c.m, flags) == 0, "init");
	CHECK(ursa_sem_init(&c.s, 0, flags) == 0, "init");
	CHECK(ursa_event_init(&c.stop, flags) == 0, "init");
	ursa_waitable_t probe = {URSA_WAIT_SEM, &c.s};
	struct timespec past = {0, 0};
	int r = ursa_wait_any(&probe, 1, CLOCK_MONOTONIC, &past);
	if (r == -ENOSYS) {
		cr_skip_test("%s", "kernel lacks futex_waitv (needs Linux 5.16+)");
	}
	CHECK(r == -ETIMEDOUT, "wait_any with a past deadline on an empty sem: %d", r);
	c.posts = ITERS(6000);
	run_threads(4, any_thread, &c);
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
