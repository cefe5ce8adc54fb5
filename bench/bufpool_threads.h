/* SPDX-License-Identifier: MIT */
/*
 * bench/bufpool_threads.h — the thread-per-worker engine: the classic design.
 *
 * Each worker is a thread that runs transactions one after another. It takes
 * every lock blocking, reads and writes pages with pread/pwrite (blocking
 * the thread for the I/O), and when the page it wants is being read by
 * another worker it sleeps on the buffer's condition variable until that
 * read is done.
 *
 * Written once against the lock adapter; compiled twice:
 *   bufpool_threads_pthread.c  BP_LOCKS_PTHREAD -> bp_engine_threads_pthread
 *   bufpool_threads_ursa.c     BP_LOCKS_URSA    -> bp_engine_threads_ursa
 * Define BP_THREADS_ENTRY to the entry point's name before including.
 */
#ifndef URSA_BENCH_BUFPOOL_THREADS_H
#define URSA_BENCH_BUFPOOL_THREADS_H

#include "bench/bufpool_pool.h"

#include <pthread.h>

#ifndef BP_THREADS_ENTRY
#error "define BP_THREADS_ENTRY before including bench/bufpool_threads.h"
#endif

struct tworker {
	struct bp_run *run;
	struct pool *pool;
	struct bp_stats *s;
	uint64_t rng;
	pthread_t tid;
	int pid; /* --procs */
};

/* b is pinned; io: a read into it was in progress when it was pinned.
 * Sleep until that read is done. */
static struct buf *wait_valid(struct buf *b, bool io, struct bp_stats *s)
{
	if (io) {
		s->io_waits++;
		bp_lock(&b->hdr, s);
		while (b->flags & BUF_IO)
			bp_cond_wait(&b->io_done, &b->hdr);
		bp_mutex_unlock(&b->hdr);
	}
	return b;
}

/*
 * page is not in the pool: take a victim, write it back if dirty, remap it
 * to page and read page into it. NULL: the victim was taken by someone else
 * meanwhile (pinned or re-dirtied); the caller starts over.
 */
static struct buf *load_page(struct pool *p, int64_t page, struct bp_stats *s)
{
	const struct bp_config *c = p->cfg;
	bool dirty;
	struct buf *v = pool_sweep(p, s, &dirty);
	if (dirty) {
		/* Shared: no modification can run while the image is written.
		 * Conditional, as PostgreSQL's BufferAlloc: whoever holds it may
		 * be waiting for something we hold (a hot page's lock held to
		 * commit); then take another victim instead of waiting. */
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
		/* Another worker mapped page while we were choosing a victim. */
		io = buf_pin(b, s);
	} else {
		bp_lock(&v->hdr, s);
		if (v->pins != 1 || (v->flags & BUF_DIRTY)) {
			/* Someone pinned it through its old mapping and may be
			 * using (or has modified) it: choose another victim. */
			bp_mutex_unlock(&v->hdr);
		} else {
			if (v->page >= 0)
				map_remove(p, v->page, v);
			map_insert(p, page, v);
			v->page = page;
			v->flags = BUF_IO;
			v->usage = 1;
			bp_mutex_unlock(&v->hdr);
			b = v;
			v = NULL;
		}
	}
	if (hi != lo)
		bp_rwlock_wrunlock(&p->parts[hi].lock);
	bp_rwlock_wrunlock(&p->parts[lo].lock);

	if (v) {
		buf_unpin(v, s);
		return b ? wait_valid(b, io, s) : NULL;
	}

	/* b is ours, mapped, IO set: whoever pins it meanwhile waits. */
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

/* Return page's buffer, pinned and valid. */
static struct buf *pin_page(struct pool *p, int64_t page, struct bp_stats *s)
{
	bp_rwlock_t *part = &p->parts[pool_part(p, page)].lock;
	for (;;) {
		bp_rdlock(part, s);
		struct buf *b = map_lookup(p, page);
		bool io = b && buf_pin(b, s);
		bp_rwlock_rdunlock(part);
		if (b)
			return wait_valid(b, io, s);
		if ((b = load_page(p, page, s)))
			return b;
	}
}

static void *tworker_main(void *arg)
{
	struct tworker *w = arg;
	struct bp_run *r = w->run;
	const struct bp_config *c = r->cfg;
	struct pool *p = w->pool;
	struct bp_stats *s = w->s;

	while (bp_phase(r) != BP_STOP) {
		uint64_t t0 = bp_now_ns();
		bool wtxn = bp_rand(&w->rng) % 100 < (uint64_t)c->write_pct;
		struct buf *hot = NULL;
		if (c->hot_pages) {
			/* pgbench tpcb's branch: locked from the first access to the
			 * commit, like the row lock it stands for. */
			hot = pin_page(p, (int64_t)bp_hot_page(c, &w->rng), s);
			s->accesses++;
			if (c->unsafe)
				bp_rdlock(&hot->content, s);
			else
				bp_wrlock(&hot->content, s);
		}
		for (int k = 0; k < c->txn_pages; k++) {
			int64_t page = (int64_t)bp_account_page(c, &w->rng);
			bool write = wtxn && k == c->txn_pages - 1;
			bool excl = write && !c->unsafe;
			struct buf *b = pin_page(p, page, s);
			s->accesses++;
			if (excl)
				bp_wrlock(&b->content, s);
			else
				bp_rdlock(&b->content, s);
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
		}
		bp_commit(r, s, t0, (unsigned)wtxn + (hot != NULL));
	}
	return NULL;
}

static void tworker_proc(void *arg)
{
	tworker_main(arg);
}

int BP_THREADS_ENTRY(struct bp_run *r0)
{
	const struct bp_config *c = r0->cfg;
	/* --procs: the run (its phase) lives in the shared arena too. */
	struct bp_run *r = r0;
	if (c->procs) {
		r = bp_alloc(BP_CACHELINE, sizeof(*r));
		*r = *r0;
	}
	int n = c->workers;
	struct pool *p = pool_create(c);
	struct tworker *w = bp_alloc(BP_CACHELINE, (size_t)n * sizeof(*w));
	r->stats = bp_alloc(BP_CACHELINE, (size_t)n * sizeof(struct bp_stats));
	r->nstats = n;
	r->os_threads = n;

	int started = 0, rc = 0;
	for (int i = 0; i < n; i++)
		w[i] = (struct tworker){
		    .run = r,
		    .pool = p,
		    .s = &r->stats[i],
		    .rng = bp_mix64(0x5eed0000u + (uint64_t)i) | 1,
		};
	if (c->procs) {
		int *pids = bp_alloc(8, (size_t)n * sizeof(int));
		started = bp_fork_workers(n, tworker_proc, w, sizeof(*w), pids);
		if (started < n) {
			rc = EAGAIN;
			__atomic_store_n(&r->phase, BP_STOP, __ATOMIC_RELAXED);
		} else {
			bp_timeline(r);
		}
		if (bp_wait_workers(started, pids))
			bp_die("bufpool: a worker process failed\n");
		started = 0;
	}
	for (; started < n && !c->procs; started++) {
		rc = pthread_create(&w[started].tid, NULL, tworker_main, &w[started]);
		if (rc) {
			fprintf(stderr, "bufpool: pthread_create: %s\n", strerror(rc));
			__atomic_store_n(&r->phase, BP_STOP, __ATOMIC_RELAXED);
			break;
		}
	}
	if (!rc && !c->procs)
		bp_timeline(r);
	for (int i = 0; i < started; i++)
		pthread_join(w[i].tid, NULL);
	if (r->joined)
		r->joined(r);
	r->flushed = pool_flush(p);
	r->problems += pool_destroy(p);
	bp_free(w);
	if (r != r0)
		*r0 = *r;
	return rc ? -rc : 0;
}

#endif
