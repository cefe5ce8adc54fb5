/* SPDX-License-Identifier: MIT */
/*
 * bench/bench_async.c — async-lock: a server that must take contended
 * locks while it serves I/O.
 *
 * Requests arrive on a pipe from a producer thread at a fixed rate (open
 * loop: the producer never waits for the server, so a stalled server cannot
 * slow the arrivals down; each request carries the time it was written). Each request names one of
 * AL_LOCKS mutexes; serving it means taking that mutex, updating what it guards, a little work,
 * unlocking. Contender threads (the thread count of the point) keep taking random mutexes and
 * holding them for AL_HOLD_NS while "doing I/O" (sleeping), like buffer-pool code holding a page
 * lock across a read.
 *
 *   glibc      one server thread: read() the pipe, pthread_mutex_lock each
 *              request's mutex; while it waits for one lock every other
 *              request waits too
 *   ursa       the same with ursa_mutex_lock
 *   ursa-ring  one event loop: the pipe read and every lock wait are in the
 *              same io_uring (ursa_mutex_lock_async + ursa_handle_cqe);
 *              a request whose lock is held waits in the ring while the loop
 *              serves the others. Contenders lock with ursa_mutex_lock (ring
 *              and thread waiters on the same mutexes).
 *
 * Figures: req/s actually served (the offered rate when the server keeps
 * up), and the median and 99th percentile of written -> served latency.
 */
#include "bench/bench.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>
#include <ursa.h>

#include <liburing.h>
#include <ursa/async.h>

#define AL_LOCKS       8
#define AL_CONTENDERS  2
#define AL_INTERVAL_NS 10000u /* offered load: 100k requests/s */
#define AL_BATCH_NS    50000u /* the producer writes every 50 us */
#define AL_HOLD_NS     20000u /* contender holds a lock 20 us ... */
#define AL_GAP_NS      20000u /* ... then leaves it 20 us */
#define AL_WORK_NS     200    /* server's work per request, under the lock */
#define AL_READ_BYTES  4096
#define AL_OPS	       1024 /* ring: requests in flight at most */

enum al_kind { AL_GLIBC, AL_URSA, AL_RING };

struct al_req {
	uint64_t sent; /* CLOCK_MONOTONIC ns just before its write() */
	uint32_t lock;
	uint32_t pad;
};

struct al_slot {
	uint64_t guarded; /* under the slot's mutex */
} BENCH_ALIGNED;

struct al_shared {
	enum al_kind kind;
	int stop BENCH_ALIGNED;
	int rfd, wfd;
	uint64_t t_start;
	pthread_mutex_t pm[AL_LOCKS];
	ursa_mutex_t um[AL_LOCKS] BENCH_ALIGNED;
	struct al_slot slot[AL_LOCKS];
	uint32_t work_iters;
	/* server's */
	uint64_t served, t_end;
	uint64_t *lat;
	size_t nlat, cap;
	int err;
};

struct al_contender {
	struct al_shared *sh;
	uint64_t seed, ops;
} BENCH_ALIGNED;

static void al_lock(struct al_shared *sh, uint32_t i)
{
	int r =
	    sh->kind == AL_GLIBC ? -pthread_mutex_lock(&sh->pm[i]) : ursa_mutex_lock(&sh->um[i]);
	if (r) {
		bench_fail("async-lock: lock", r);
		exit(2);
	}
}

static void al_unlock(struct al_shared *sh, uint32_t i)
{
	int r = sh->kind == AL_GLIBC ? -pthread_mutex_unlock(&sh->pm[i])
				     : ursa_mutex_unlock(&sh->um[i]);
	if (r) {
		bench_fail("async-lock: unlock", r);
		exit(2);
	}
}

static void *al_contender(void *p)
{
	struct al_contender *c = p;
	struct al_shared *sh = c->sh;
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	while (!__atomic_load_n(&sh->stop, __ATOMIC_RELAXED)) {
		uint32_t i = (uint32_t)(bench_xorshift(&c->seed) % AL_LOCKS);
		al_lock(sh, i);
		sh->slot[i].guarded++;
		bench_sleep_ns(AL_HOLD_NS);
		al_unlock(sh, i);
		c->ops++;
		bench_sleep_ns(AL_GAP_NS);
	}
	return NULL;
}

static void *al_producer(void *p)
{
	struct al_shared *sh = p;
	struct al_req buf[AL_READ_BYTES / sizeof(struct al_req)];
	uint64_t sent = 0, seed = 0x2545f4914f6cdd1dull;
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	while (!__atomic_load_n(&sh->stop, __ATOMIC_RELAXED)) {
		/* Stamped with the write time, not the due time: a producer that
		 * was itself scheduled late (a busy machine) is not the server's
		 * latency. The pipe (64 KiB, 40 ms of requests) blocks the
		 * producer only after a server stall longer than that. */
		uint64_t now = bench_now_ns();
		uint64_t due = (now - sh->t_start) / AL_INTERVAL_NS + 1;
		size_t n = 0;
		while (sent < due && n < sizeof(buf) / sizeof(buf[0])) {
			buf[n].sent = now;
			buf[n].lock = (uint32_t)(bench_xorshift(&seed) % AL_LOCKS);
			buf[n].pad = 0;
			n++;
			sent++;
		}
		if (n && write(sh->wfd, buf, n * sizeof(buf[0])) != (ssize_t)(n * sizeof(buf[0]))) {
			sh->err = errno ? -errno : -EIO;
			break;
		}
		uint64_t next =
		    sh->t_start + (sent * AL_INTERVAL_NS / AL_BATCH_NS + 1) * AL_BATCH_NS;
		now = bench_now_ns();
		if (next > now)
			bench_sleep_ns(next - now);
	}
	close(sh->wfd); /* EOF tells the server to finish */
	return NULL;
}

/* Serve one request whose lock the server now holds. */
static void al_serve(struct al_shared *sh, const struct al_req *rq)
{
	sh->slot[rq->lock].guarded++;
	bench_work_iters(sh->work_iters);
}

static void al_done(struct al_shared *sh, uint64_t sent)
{
	uint64_t now = bench_now_ns();
	if (sh->nlat < sh->cap)
		sh->lat[sh->nlat++] = now - sent;
	sh->served++;
}

/* The blocking server: read(), then each request in turn. */
static void *al_thread_server(void *p)
{
	struct al_shared *sh = p;
	char buf[AL_READ_BYTES];
	size_t have = 0;
	for (;;) {
		ssize_t n = read(sh->rfd, buf + have, sizeof(buf) - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n < 0)
				sh->err = -errno;
			break;
		}
		have += (size_t)n;
		size_t off = 0;
		for (; off + sizeof(struct al_req) <= have; off += sizeof(struct al_req)) {
			struct al_req rq;
			memcpy(&rq, buf + off, sizeof(rq));
			al_lock(sh, rq.lock);
			al_serve(sh, &rq);
			al_unlock(sh, rq.lock);
			al_done(sh, rq.sent);
		}
		memmove(buf, buf + off, have - off);
		have -= off;
	}
	sh->t_end = bench_now_ns();
	return NULL;
}

/* The ring server: one pipe read and any number of lock waits in flight. */
struct al_op {
	struct ursa_op op; /* first: &al_op->op is the op */
	struct al_req rq;
	int next_free;
};

#define AL_READ_TAG 1 /* our read's user_data (top byte zero: never ursa's) */

struct al_ring {
	struct al_shared *sh;
	struct io_uring ring;
	struct al_op ops[AL_OPS];
	int free_head, nfree, pending;
	char buf[AL_READ_BYTES];
	size_t have;
};

static void ring_finish(struct al_ring *R, struct al_op *o)
{
	al_serve(R->sh, &o->rq);
	al_unlock(R->sh, o->rq.lock);
	al_done(R->sh, o->rq.sent);
	o->next_free = R->free_head;
	R->free_head = (int)(o - R->ops);
	R->nfree++;
}

static int ring_start(struct al_ring *R, const struct al_req *rq)
{
	struct al_op *o = &R->ops[R->free_head];
	R->free_head = o->next_free;
	R->nfree--;
	memset(&o->op, 0, sizeof(o->op));
	o->rq = *rq;
	for (;;) {
		int r = ursa_mutex_lock_async(&R->ring, &R->sh->um[rq->lock], &o->op);
		if (r == 1) {
			if (o->op.res)
				return bench_fail("ursa_mutex_lock_async res", o->op.res);
			ring_finish(R, o);
			return 0;
		}
		if (r == 0) {
			R->pending++;
			return 0;
		}
		if (r != -EBUSY)
			return bench_fail("ursa_mutex_lock_async", r);
		r = io_uring_submit(&R->ring); /* SQ full: make room */
		if (r < 0)
			return bench_fail("io_uring_submit", r);
	}
}

static int ring_arm_read(struct al_ring *R)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&R->ring);
	if (!sqe) {
		int r = io_uring_submit(&R->ring);
		if (r < 0)
			return bench_fail("io_uring_submit", r);
		sqe = io_uring_get_sqe(&R->ring);
		if (!sqe)
			return bench_fail("io_uring_get_sqe", EBUSY);
	}
	io_uring_prep_read(sqe, R->sh->rfd, R->buf + R->have, (unsigned)(sizeof(R->buf) - R->have),
			   0);
	io_uring_sqe_set_data64(sqe, AL_READ_TAG);
	return 0;
}

static void *al_ring_server(void *p)
{
	struct al_ring *R = p;
	struct al_shared *sh = R->sh;
	bool armed = false, eof = false;
	int r;

	for (;;) {
		/* Keep room for a whole read's requests before reading more. */
		if (!armed && !eof && R->nfree >= (int)(AL_READ_BYTES / sizeof(struct al_req))) {
			if (ring_arm_read(R))
				goto fail;
			armed = true;
		}
		if (eof && !armed && !R->pending)
			break;
		r = io_uring_submit_and_wait(&R->ring, 1);
		if (r < 0 && r != -EINTR) {
			bench_fail("io_uring_submit_and_wait", r);
			goto fail;
		}
		struct io_uring_cqe *cqe;
		while (io_uring_peek_cqe(&R->ring, &cqe) == 0) {
			struct ursa_op *done = NULL;
			r = ursa_handle_cqe(&R->ring, cqe, &done);
			if (r < 0) {
				bench_fail("ursa_handle_cqe", r);
				goto fail;
			}
			if (r == 1) {
				io_uring_cqe_seen(&R->ring, cqe);
				if (done) {
					if (done->res) {
						bench_fail("async lock finished with", done->res);
						goto fail;
					}
					R->pending--;
					ring_finish(R, (struct al_op *)done);
				}
				continue;
			}
			/* Ours: the pipe read. */
			int res = cqe->res;
			uint64_t tag = io_uring_cqe_get_data64(cqe);
			io_uring_cqe_seen(&R->ring, cqe);
			if (tag != AL_READ_TAG) {
				bench_fail("async-lock: unknown CQE", EPROTO);
				goto fail;
			}
			armed = false;
			if (res == -EINTR || res == -EAGAIN)
				continue;
			if (res < 0) {
				bench_fail("async-lock: pipe read", res);
				goto fail;
			}
			if (res == 0) {
				eof = true;
				continue;
			}
			R->have += (size_t)res;
			size_t off = 0;
			for (; off + sizeof(struct al_req) <= R->have;
			     off += sizeof(struct al_req)) {
				struct al_req rq;
				memcpy(&rq, R->buf + off, sizeof(rq));
				if (ring_start(R, &rq))
					goto fail;
			}
			memmove(R->buf, R->buf + off, R->have - off);
			R->have -= off;
		}
	}
	sh->t_end = bench_now_ns();
	return NULL;
fail:
	sh->err = -EPROTO;
	exit(2); /* lock waits in flight cannot be abandoned safely here */
}

static int al_measure(enum al_kind kind, const struct bench_point *pt, double *v)
{
	int nc = pt->threads;
	struct al_shared *sh = aligned_alloc(BENCH_CACHELINE, sizeof(*sh));
	struct al_contender *cs = aligned_alloc(BENCH_CACHELINE, sizeof(*cs) * (size_t)nc);
	pthread_t *ctids = calloc((size_t)nc, sizeof(*ctids));
	pthread_t server, producer;
	int fds[2] = {-1, -1}, ret = -1;
	void *ring_state = NULL;

	if (!sh || !cs || !ctids) {
		bench_fail("malloc", ENOMEM);
		goto out;
	}
	memset(sh, 0, sizeof(*sh));
	sh->kind = kind;
	double secs = bench_opt.duration_s * (pt->warmup ? 0.2 : 1.0);
	sh->cap = (size_t)(secs * 1e9 / AL_INTERVAL_NS * 1.2) + 4096;
	sh->lat = malloc(sh->cap * sizeof(*sh->lat));
	if (!sh->lat) {
		bench_fail("malloc", ENOMEM);
		goto out;
	}
	if (pipe2(fds, O_CLOEXEC)) {
		bench_fail("pipe2", errno);
		goto out;
	}
	sh->rfd = fds[0];
	sh->wfd = fds[1];
	sh->work_iters = bench_iters(AL_WORK_NS);
	for (int i = 0; i < AL_LOCKS; i++) {
		pthread_mutex_init(&sh->pm[i], NULL);
		ursa_mutex_init(&sh->um[i], 0);
	}

	void *(*server_fn)(void *) = al_thread_server;
	void *server_arg = sh;
	if (kind == AL_RING) {
		struct al_ring *R = calloc(1, sizeof(*R));
		if (!R) {
			bench_fail("malloc", ENOMEM);
			goto out;
		}
		R->sh = sh;
		int r = io_uring_queue_init(256, &R->ring, 0);
		if (r) {
			free(R);
			bench_fail("io_uring_queue_init", r);
			goto out;
		}
		for (int i = 0; i < AL_OPS; i++)
			R->ops[i].next_free = i + 1;
		R->nfree = AL_OPS;
		ring_state = R;
		server_fn = al_ring_server;
		server_arg = R;
	}

	sh->t_start = bench_now_ns();
	for (int i = 0; i < nc; i++)
		cs[i] = (struct al_contender){.sh = sh,
					      .seed = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 7)};
	if (bench_spawn_on(&server, 0, server_fn, server_arg))
		exit(2);
	if (bench_spawn_on(&producer, 1, al_producer, sh))
		exit(2);
	if (bench_spawn(ctids, nc, al_contender, cs, sizeof(*cs)))
		exit(2);
	bench_sleep_ns((uint64_t)(secs * 1e9));
	__atomic_store_n(&sh->stop, 1, __ATOMIC_RELAXED);
	pthread_join(producer, NULL);
	pthread_join(server, NULL);
	bench_join(ctids, nc);
	if (sh->err) {
		bench_fail("async-lock", sh->err);
		goto out;
	}

	uint64_t guarded = 0, cops = 0;
	for (int i = 0; i < AL_LOCKS; i++)
		guarded += sh->slot[i].guarded;
	for (int i = 0; i < nc; i++)
		cops += cs[i].ops;
	if (guarded != sh->served + cops) {
		bench_fail("async-lock: lost updates (no exclusion)", EPROTO);
		goto out;
	}
	v[0] = (double)sh->served / ((double)(sh->t_end - sh->t_start) / 1e9);
	v[1] = (double)bench_quantile_u64(sh->lat, sh->nlat, 0.5) / 1e3;
	v[2] = (double)bench_quantile_u64(sh->lat, sh->nlat, 0.99) / 1e3;
	ret = 0;
out:
	if (ring_state) {
		io_uring_queue_exit(&((struct al_ring *)ring_state)->ring);
		free(ring_state);
	}
	if (fds[0] >= 0)
		close(fds[0]);
	if (sh)
		free(sh->lat);
	free(sh);
	free(cs);
	free(ctids);
	return ret;
}

static int al_glibc(const struct bench_point *pt, double *v)
{
	return al_measure(AL_GLIBC, pt, v);
}

static int al_ursa(const struct bench_point *pt, double *v)
{
	return al_measure(AL_URSA, pt, v);
}

static int al_ring(const struct bench_point *pt, double *v)
{
	return al_measure(AL_RING, pt, v);
}

void bench_async_register(struct bench_scenario *s)
{
	*s = (struct bench_scenario){
	    .name = "async-lock",
	    .what =
		"serve pipe requests that take contended locks: blocking thread vs io_uring loop",
	    .axis = "threads",
	    .npoints = 1,
	    .points = {AL_CONTENDERS},
	    .nvariants = 1,
	    .variants = {""},
	    .nmetrics = 3,
	    .metrics = {{"served", "req/s", true}, {"p50", "us", false}, {"p99", "us", false}},
	};
	bench_add_impl(s, "glibc", "server thread: read() + pthread_mutex_lock", al_glibc);
	bench_add_impl(s, "ursa", "server thread: read() + ursa_mutex_lock", al_ursa);
	struct ursa_features f;
	if (ursa_probe(&f) == 0 && f.uring_futex)
		bench_add_impl(s, "ursa-ring",
			       "event loop: pipe read + ursa_mutex_lock_async in one io_uring",
			       al_ring);
	else
		s->missing = "ursa-ring: this kernel has no io_uring FUTEX_WAIT (6.7+)";
}
