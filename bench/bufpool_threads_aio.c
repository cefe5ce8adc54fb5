/* SPDX-License-Identifier: MIT */
/*
 * bench/bufpool_threads_aio.c — engines `threads-aio` and
 * `threads-aio-timed`: a thread per worker, each with its own io_uring for
 * its page reads (as PostgreSQL 18's io_method=io_uring), and blocking page
 * locks (ursa's, taken the blocking way).
 *
 * A transaction starts the reads of all its pages first (a read stream:
 * pool_prefetch, then IORING_OP_READ on the worker's ring), then takes its
 * locks and consumes the pages. A buffer being read by a prefetch has IO
 * set until the worker that started the read reaps its CQE: only that
 * worker's ring holds the completion. That is the seed's deadlock:
 *
 *   worker 1 starts read A, then blocks on hot page B's lock (not yet
 *   having reaped A); worker 2 holds B's lock and needs page A: it waits
 *   for IO on A to clear, which only worker 1 would do.
 *
 * threads-aio      plain blocking lock and condvar waits. A watchdog thread
 *                  notices when no transaction commits for a second, reports
 *                  who waits for what (and whose un-reaped read), stops the
 *                  run, and, so that it ends instead of hanging, reaps the
 *                  stalled workers' rings on their behalf.
 * threads-aio-timed the workaround such a design must use: before every lock
 *                  or I/O wait, drain the worker's own completions; wait
 *                  with a timeout (200 us) and on timeout drain again. No
 *                  deadlock, at the price of the timed waits' wake-ups and a
 *                  ring check before every wait.
 *
 * `ring` (bufpool_ring.c) waits for the lock and the reads in one ring and
 * needs neither.
 *
 * The ring of a worker is touched under its ring_lock (a mutex the worker
 * holds only while reaping, never while waiting), so the watchdog can reap
 * it while the worker is blocked.
 */
#define BP_LOCKS_URSA 1
#include "bench/bufpool_pool.h"

#include <liburing.h>
#include <pthread.h>
#include <ursa/probe.h>

#define AIO_TIMED_WAIT_NS 200000ll	   /* threads-aio-timed: one wait, at most */
#define AIO_STALL_NS	  1000000000ull /* no commit for this long: stalled */

struct aworker;

struct apf {
	struct buf *b; /* NULL once reaped */
	int64_t page;
};

struct aio_shared {
	struct bp_run *run;
	struct pool *pool;
	bool timed;
	int n;
	struct aworker *w;
	int32_t *io_owner; /* per buffer: the worker whose ring holds its read, or -1 */
	int exited;	   /* workers that returned, atomic */
};

enum { AW_RUN, AW_LOCK, AW_IO };

struct aworker {
	struct aio_shared *sh;
	struct bp_stats *s;
	uint64_t rng;
	pthread_t tid;
	int id;
	struct io_uring ring;
	bp_mutex_t ring_lock;
	int pending;	    /* reads in its ring not yet reaped, atomic */
	uint64_t progress;  /* commits, atomic (the watchdog reads it) */
	int state;	    /* AW_*: what it waits for, for the report (atomic) */
	int64_t wait_page;  /* ... on which page */
	int wait_owner;	    /* AW_IO: whose ring holds that read (-1: a pread) */
	int64_t hot_held;   /* the hot page whose lock it holds, or -1 */
	int64_t *pages;	    /* the transaction's pages */
	struct apf *pf;	    /* its prefetches */
};

/* Complete one read: valid, waiters woken, the prefetch's pin dropped.
 * s: the stats to count it in (the reaper's own). */
static void aio_complete(struct aio_shared *sh, struct apf *pf, int res, struct bp_stats *s)
{
	if (res != (int)BP_PAGE_SIZE)
		bp_die("bufpool threads-aio: read of page %lld: %s\n", (long long)pf->page,
		       res < 0 ? strerror(-res) : "short read");
	struct buf *b = pf->b;
	s->misses++;
	if (bp_page_verify(b->data, (uint64_t)pf->page))
		s->bad_pages++;
	__atomic_store_n(&sh->io_owner[b->id], -1, __ATOMIC_RELAXED);
	bp_lock(&b->hdr, s);
	b->flags = BUF_VALID;
	bp_cond_broadcast(&b->io_done);
	bp_mutex_unlock(&b->hdr);
	buf_unpin(b, s);
	__atomic_store_n(&pf->b, NULL, __ATOMIC_RELEASE);
}

/* Reap w's completed reads (wait: sleep for one if none is there and some
 * are pending). Returns how many. */
static int aio_drain(struct aworker *w, bool wait, struct bp_stats *s)
{
	int n = 0;
	bp_mutex_lock(&w->ring_lock);
	for (;;) {
		struct io_uring_cqe *cqe;
		int rc = io_uring_peek_cqe(&w->ring, &cqe);
		if (rc == -EAGAIN) {
			if (!wait || n || !__atomic_load_n(&w->pending, __ATOMIC_RELAXED))
				break;
			s->syscalls++;
			rc = io_uring_wait_cqe(&w->ring, &cqe);
			if (rc == -EINTR)
				continue;
		}
		if (rc)
			bp_die("bufpool threads-aio: reaping: %s\n", strerror(-rc));
		struct apf *pf = io_uring_cqe_get_data(cqe);
		int res = cqe->res;
		io_uring_cqe_seen(&w->ring, cqe);
		aio_complete(w->sh, pf, res, s);
		__atomic_fetch_sub(&w->pending, 1, __ATOMIC_RELAXED);
		n++;
	}
	bp_mutex_unlock(&w->ring_lock);
	return n;
}

static struct timespec aio_deadline(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_nsec += AIO_TIMED_WAIT_NS;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	return ts;
}

/* Take a content lock (exclusive or shared) the engine's way. */
static void aio_lock(struct aworker *w, bp_rwlock_t *l, bool excl, int64_t page)
{
	struct bp_stats *s = w->s;
	if (excl ? bp_rwlock_trywrlock(l) : bp_rwlock_tryrdlock(l))
		return;
	s->lock_waits++;
	w->wait_page = page;
	__atomic_store_n(&w->state, AW_LOCK, __ATOMIC_RELAXED);
	if (!w->sh->timed) {
		if (excl)
			bp_rwlock_wrlock(l);
		else
			bp_rwlock_rdlock(l);
	} else {
		for (;;) {
			aio_drain(w, false, s);
			struct timespec dl = aio_deadline();
			int rc = excl ? ursa_rwlock_timedwrlock(l, CLOCK_MONOTONIC, &dl)
				      : ursa_rwlock_timedrdlock(l, CLOCK_MONOTONIC, &dl);
			if (rc == 0)
				break;
			if (rc != -ETIMEDOUT)
				bp_die("bufpool threads-aio: timed lock: %s\n", strerror(-rc));
			s->lock_timeouts++;
		}
	}
	__atomic_store_n(&w->state, AW_RUN, __ATOMIC_RELAXED);
}

/* b is pinned and a read into it was in progress: wait until it is valid. */
static void aio_wait_valid(struct aworker *w, struct buf *b)
{
	struct aio_shared *sh = w->sh;
	struct bp_stats *s = w->s;
	s->io_waits++;
	w->wait_page = b->page;
	w->wait_owner = __atomic_load_n(&sh->io_owner[b->id], __ATOMIC_RELAXED);
	__atomic_store_n(&w->state, AW_IO, __ATOMIC_RELAXED);
	for (;;) {
		/* Our own read: reap our ring until it is done. */
		if (__atomic_load_n(&sh->io_owner[b->id], __ATOMIC_RELAXED) == w->id) {
			aio_drain(w, true, s);
			continue;
		}
		if (sh->timed)
			aio_drain(w, false, s);
		bp_lock(&b->hdr, s);
		bool done = !(b->flags & BUF_IO);
		if (!done && !sh->timed) {
			bp_cond_wait(&b->io_done, &b->hdr);
		} else if (!done) {
			struct timespec dl = aio_deadline();
			int rc = ursa_cond_timedwait(&b->io_done, &b->hdr, CLOCK_MONOTONIC, &dl);
			if (rc == -ETIMEDOUT)
				s->lock_timeouts++;
			else if (rc)
				bp_die("bufpool threads-aio: timed wait: %s\n", strerror(-rc));
		}
		done = !(b->flags & BUF_IO);
		bp_mutex_unlock(&b->hdr);
		if (done)
			break;
	}
	__atomic_store_n(&w->state, AW_RUN, __ATOMIC_RELAXED);
}

/* A miss the prefetch did not take: read the page synchronously (as the
 * threads engine does), into a victim. NULL: start over. */
static struct buf *aio_load(struct aworker *w, int64_t page)
{
	struct pool *p = w->sh->pool;
	const struct bp_config *c = p->cfg;
	struct bp_stats *s = w->s;
	bool dirty;
	struct buf *v = pool_sweep(p, s, &dirty);
	if (dirty) {
		if (!bp_rwlock_tryrdlock(&v->content)) {
			buf_unpin(v, s);
			return NULL;
		}
		page_pwrite(c, v->data, v->page, s);
		bp_lock(&v->hdr, s);
		v->flags &= ~BUF_DIRTY;
		bp_mutex_unlock(&v->hdr);
		bp_rwlock_rdunlock(&v->content);
		s->writebacks++;
	}
	uint32_t lo, hi;
	map_parts(p, page, v->page, &lo, &hi);
	bp_wrlock(&p->parts[lo].lock, s);
	if (hi != lo)
		bp_wrlock(&p->parts[hi].lock, s);
	struct buf *b = map_lookup(p, page);
	bool io = false;
	if (b) {
		io = buf_pin(b, s);
	} else {
		struct buf *x = v;
		bp_lock(&x->hdr, s);
		if (x->pins == 1 && !(x->flags & BUF_DIRTY)) {
			if (x->page >= 0)
				map_remove(p, x->page, x);
			map_insert(p, page, x);
			x->page = page;
			x->flags = BUF_IO;
			x->usage = 1;
			b = x;
			v = NULL;
		}
		bp_mutex_unlock(&x->hdr);
	}
	if (hi != lo)
		bp_rwlock_wrunlock(&p->parts[hi].lock);
	bp_rwlock_wrunlock(&p->parts[lo].lock);
	if (v) {
		buf_unpin(v, s);
		if (b && io)
			aio_wait_valid(w, b);
		return b;
	}
	page_pread(c, b->data, page, s);
	s->misses++;
	if (bp_page_verify(b->data, (uint64_t)page))
		s->bad_pages++;
	bp_lock(&b->hdr, s);
	b->flags = BUF_VALID;
	bp_cond_broadcast(&b->io_done);
	bp_mutex_unlock(&b->hdr);
	return b;
}

static struct buf *aio_pin(struct aworker *w, int64_t page)
{
	struct pool *p = w->sh->pool;
	bp_rwlock_t *part = &p->parts[pool_part(p, page)].lock;
	for (;;) {
		bp_rdlock(part, w->s);
		struct buf *b = map_lookup(p, page);
		bool io = b && buf_pin(b, w->s);
		bp_rwlock_rdunlock(part);
		if (b) {
			if (io)
				aio_wait_valid(w, b);
			return b;
		}
		if ((b = aio_load(w, page)))
			return b;
	}
}

static void aio_prefetch(struct aworker *w)
{
	struct aio_shared *sh = w->sh;
	const struct bp_config *c = sh->pool->cfg;
	int started = 0;
	for (int k = 0; k < c->txn_pages; k++) {
		struct buf *b = pool_prefetch(sh->pool, w->pages[k], w->s);
		if (!b)
			continue;
		struct apf *pf = &w->pf[k];
		pf->b = b;
		pf->page = w->pages[k];
		__atomic_store_n(&sh->io_owner[b->id], w->id, __ATOMIC_RELAXED);
		bp_mutex_lock(&w->ring_lock);
		struct io_uring_sqe *sqe = io_uring_get_sqe(&w->ring);
		if (!sqe)
			bp_die("bufpool threads-aio: SQ ring full\n");
		io_uring_prep_read(sqe, c->fd, b->data, BP_PAGE_SIZE,
				   (uint64_t)pf->page * BP_PAGE_SIZE);
		io_uring_sqe_set_data(sqe, pf);
		bp_mutex_unlock(&w->ring_lock);
		__atomic_fetch_add(&w->pending, 1, __ATOMIC_RELAXED);
		w->s->prefetches++;
		started++;
	}
	if (started) {
		bp_mutex_lock(&w->ring_lock);
		w->s->syscalls++;
		int rc = io_uring_submit(&w->ring);
		bp_mutex_unlock(&w->ring_lock);
		if (rc < 0)
			bp_die("bufpool threads-aio: io_uring_submit: %s\n", strerror(-rc));
	}
}

static void *aworker_main(void *arg)
{
	struct aworker *w = arg;
	struct aio_shared *sh = w->sh;
	struct bp_run *r = sh->run;
	const struct bp_config *c = r->cfg;
	struct bp_stats *s = w->s;

	while (bp_phase(r) != BP_STOP) {
		uint64_t t0 = bp_now_ns();
		bool wtxn = bp_rand(&w->rng) % 100 < (uint64_t)c->write_pct;
		for (int k = 0; k < c->txn_pages; k++)
			w->pages[k] = (int64_t)bp_account_page(c, &w->rng);
		if (c->prefetch)
			aio_prefetch(w);
		struct buf *hot = NULL;
		if (c->hot_pages) {
			int64_t hp = (int64_t)bp_hot_page(c, &w->rng);
			hot = aio_pin(w, hp);
			s->accesses++;
			aio_lock(w, &hot->content, !c->unsafe, hp);
			__atomic_store_n(&w->hot_held, hp, __ATOMIC_RELAXED);
		}
		for (int k = 0; k < c->txn_pages; k++) {
			bool write = wtxn && k == c->txn_pages - 1;
			bool excl = write && !c->unsafe;
			struct buf *b = aio_pin(w, w->pages[k]);
			s->accesses++;
			aio_lock(w, &b->content, excl, w->pages[k]);
			txn_access(b, write, s);
			if (write) {
				bp_lock(&b->hdr, s);
				b->flags |= BUF_DIRTY;
				bp_mutex_unlock(&b->hdr);
			}
			if (excl)
				bp_rwlock_wrunlock(&b->content);
			else
				bp_rwlock_rdunlock(&b->content);
			buf_unpin(b, s);
		}
		if (hot) {
			txn_access(hot, true, s);
			bp_lock(&hot->hdr, s);
			hot->flags |= BUF_DIRTY;
			bp_mutex_unlock(&hot->hdr);
			if (c->unsafe)
				bp_rwlock_rdunlock(&hot->content);
			else
				bp_rwlock_wrunlock(&hot->content);
			buf_unpin(hot, s);
			__atomic_store_n(&w->hot_held, -1, __ATOMIC_RELAXED);
		}
		/* Every prefetched page was accessed, so every read is reaped. */
		bp_commit(r, s, t0, (unsigned)wtxn + (hot != NULL));
		__atomic_store_n(&w->progress, s->commits, __ATOMIC_RELAXED);
	}
	__atomic_fetch_add(&sh->exited, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* The watchdog: stall detection, the report, and the rescue. */
struct watchdog {
	struct aio_shared *sh;
	struct bp_stats *s; /* what it reaps for others is counted here */
	pthread_t tid;
};

static void watchdog_report(struct aio_shared *sh, double at_s)
{
	struct bp_run *r = sh->run;
	int nlock = 0, nio = 0, unreaped = 0, owners = 0;
	char ex[400] = "";
	for (int i = 0; i < sh->n; i++) {
		struct aworker *w = &sh->w[i];
		int st = __atomic_load_n(&w->state, __ATOMIC_RELAXED);
		int pend = __atomic_load_n(&w->pending, __ATOMIC_RELAXED);
		nlock += st == AW_LOCK;
		nio += st == AW_IO;
		unreaped += pend;
		if (st == AW_LOCK && pend)
			owners++;
		/* The chain from i: what each worker waits for, and who would
		 * end that wait (a lock's holder, a read's ring), until a worker
		 * comes round again (the cycle) or 6 hops. */
		if (st != AW_LOCK || !pend || ex[0])
			continue;
		int len = snprintf(ex, sizeof(ex), "; e.g. worker %d", i);
		int cur = i, seen[8], nseen = 0;
		for (int hop = 0; hop < 6 && len < (int)sizeof(ex) - 90; hop++) {
			seen[nseen++] = cur;
			struct aworker *c = &sh->w[cur];
			int cs = __atomic_load_n(&c->state, __ATOMIC_RELAXED);
			int next = -1;
			if (cs == AW_LOCK) {
				for (int x = 0; x < sh->n && next < 0; x++)
					if (__atomic_load_n(&sh->w[x].hot_held, __ATOMIC_RELAXED) ==
					    c->wait_page)
						next = x;
				len += snprintf(ex + len, sizeof(ex) - (size_t)len,
						" waits for hot page %lld's lock, held by worker %d;"
						" worker %d",
						(long long)c->wait_page, next, next);
			} else if (cs == AW_IO) {
				next = c->wait_owner;
				len += snprintf(ex + len, sizeof(ex) - (size_t)len,
						" waits for page %lld's read in worker %d's ring;"
						" worker %d",
						(long long)c->wait_page, next, next);
			}
			bool again = false;
			for (int x = 0; x < nseen; x++)
				again |= seen[x] == next;
			if (next < 0 || again) {
				if (again)
					len += snprintf(ex + len, sizeof(ex) - (size_t)len,
							" again: a cycle");
				break;
			}
			cur = next;
		}
	}
	r->stalls++;
	snprintf(r->stall, sizeof(r->stall),
		 "no commit for %.1f s at %.1f s into the round: %d workers blocked on a page "
		 "lock, %d waiting for a page's read; %d lock waiters have %d reads in "
		 "their own rings that nobody reaps%s",
		 AIO_STALL_NS / 1e9, at_s, nlock, nio, owners, unreaped, ex);
	fprintf(stderr, "ursa-bufpool: threads-aio WATCHDOG: deadlock: %s. Stopping the run; "
			"reaping the stalled rings from the watchdog so it ends.\n",
		r->stall);
}

static void *watchdog_main(void *arg)
{
	struct watchdog *wd = arg;
	struct aio_shared *sh = wd->sh;
	struct bp_run *r = sh->run;
	uint64_t t_start = bp_now_ns(), last = 0, t_last = t_start;
	bool rescuing = false;
	while (__atomic_load_n(&sh->exited, __ATOMIC_ACQUIRE) < sh->n) {
		struct timespec ts = {0, rescuing ? 1000000 : 50000000};
		nanosleep(&ts, NULL);
		if (rescuing) {
			for (int i = 0; i < sh->n; i++)
				aio_drain(&sh->w[i], false, wd->s);
			continue;
		}
		/* Progress: commits, and workers leaving once the run stops (a
		 * deadlock in the last transactions would hang the join too). */
		uint64_t sum = (uint64_t)__atomic_load_n(&sh->exited, __ATOMIC_ACQUIRE), now = bp_now_ns();
		for (int i = 0; i < sh->n; i++)
			sum += __atomic_load_n(&sh->w[i].progress, __ATOMIC_RELAXED);
		if (sum != last) {
			last = sum;
			t_last = now;
			continue;
		}
		if (now - t_last >= AIO_STALL_NS) {
			watchdog_report(sh, (double)(now - t_start) / 1e9);
			__atomic_store_n(&r->phase, BP_STOP, __ATOMIC_RELAXED);
			rescuing = true;
		}
	}
	return NULL;
}

static int aio_engine(struct bp_run *r, bool timed)
{
	const struct bp_config *c = r->cfg;
	struct ursa_features f;
	if (c->procs) {
		r->skip = "not with --procs (its watchdog reaps the stalled workers' rings, which "
			  "needs them to be threads of one process)";
		return 0;
	}
	if (ursa_probe(&f) || !f.uring) {
		r->skip = "io_uring is not available";
		return 0;
	}
	int n = c->workers;
	struct aio_shared sh = {.run = r, .pool = pool_create(c), .timed = timed, .n = n};
	sh.io_owner = bp_alloc(BP_CACHELINE, c->nbufs * sizeof(int32_t));
	for (uint32_t i = 0; i < c->nbufs; i++)
		sh.io_owner[i] = -1;
	sh.w = bp_alloc(BP_CACHELINE, (size_t)n * sizeof(*sh.w));
	r->stats = bp_alloc(BP_CACHELINE, (size_t)(n + 1) * sizeof(struct bp_stats));
	r->nstats = n + 1;
	r->os_threads = n;
	unsigned entries = 8;
	while (entries < 2u * (unsigned)c->txn_pages)
		entries <<= 1;

	int started = 0, rc = 0;
	for (; started < n; started++) {
		struct aworker *w = &sh.w[started];
		w->sh = &sh;
		w->id = started;
		w->s = &r->stats[started];
		w->rng = bp_mix64(0x5eed0000u + (uint64_t)started) | 1;
		w->hot_held = -1;
		w->pages = bp_alloc(8, (size_t)c->txn_pages * sizeof(*w->pages));
		w->pf = bp_alloc(8, (size_t)c->txn_pages * sizeof(*w->pf));
		bp_mutex_init(&w->ring_lock);
		if ((rc = -io_uring_queue_init(entries, &w->ring, 0))) {
			fprintf(stderr, "bufpool: io_uring_queue_init: %s\n", strerror(rc));
			break;
		}
		if ((rc = pthread_create(&w->tid, NULL, aworker_main, w))) {
			io_uring_queue_exit(&w->ring);
			fprintf(stderr, "bufpool: pthread_create: %s\n", strerror(rc));
			break;
		}
	}
	struct watchdog wd = {.sh = &sh, .s = &r->stats[n]};
	__atomic_store_n(&sh.exited, n - started, __ATOMIC_RELAXED); /* never started */
	bool wd_ok = pthread_create(&wd.tid, NULL, watchdog_main, &wd) == 0;
	if (!rc)
		bp_timeline(r);
	else
		__atomic_store_n(&r->phase, BP_STOP, __ATOMIC_RELAXED);
	for (int i = 0; i < started; i++)
		pthread_join(sh.w[i].tid, NULL);
	if (wd_ok)
		pthread_join(wd.tid, NULL);
	if (r->joined)
		r->joined(r);
	for (int i = 0; i < started; i++) {
		if (sh.w[i].pending)
			fprintf(stderr, "bufpool threads-aio: worker %d left %d reads\n", i,
				sh.w[i].pending);
		r->problems += sh.w[i].pending;
		io_uring_queue_exit(&sh.w[i].ring);
	}
	r->flushed = pool_flush(sh.pool);
	r->problems += pool_destroy(sh.pool);
	for (int i = 0; i < n; i++) {
		bp_free(sh.w[i].pages);
		bp_free(sh.w[i].pf);
	}
	bp_free(sh.w);
	bp_free(sh.io_owner);
	return rc ? -rc : 0;
}

int bp_engine_threads_aio(struct bp_run *r)
{
	return aio_engine(r, false);
}

int bp_engine_threads_aio_timed(struct bp_run *r)
{
	return aio_engine(r, true);
}
