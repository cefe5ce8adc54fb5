/* SPDX-License-Identifier: MIT */
/*
 * bench/bufpool_ring.c — engine `ring`: event loops on io_uring and ursa's
 * async API.
 *
 * One event loop (thread) per core, each with its own io_uring, and
 * cfg->inflight transactions in flight spread over the loops. A transaction is a small state
 * machine (enum tstate below) over the same pool as the thread engines
 * (bufpool_pool.h, on ursa's locks). Wherever a thread would block, the
 * transaction instead queues something on its loop's ring and yields:
 *
 *   a mapping partition or a content lock that is held
 *       -> ursa_rwlock_{rd,wr}lock_async: an IORING_OP_FUTEX_WAIT on the
 *          lock word; the CQE comes back through ursa_handle_cqe, which
 *          finishes the op holding the lock (or re-arms after a lost race);
 *   a page read or a dirty victim's write-back
 *       -> IORING_OP_READ / IORING_OP_WRITE on the same ring;
 *   a page another transaction (of any loop) is reading
 *       -> directed wakeup: the transaction's slot (unique across the loops) is
 *          linked into the buffer's waiter list and prepared in a wait queue
 *          (ursa_waitq_prepare, under the buffer's header lock, so the
 *          reader cannot miss it), then ursa_waitq_wait_async. The reader,
 *          when its READ completes, clears IO under the header lock, takes
 *          the list, and wakes exactly those slots with
 *          ursa_waitq_wake_slot(..., its ring): a FUTEX_WAKE SQE on the
 *          slot's own futex word, so only the transactions waiting for that
 *          page wake, in whichever loop they are.
 *
 * So one thread waits for lock handovers and disk I/O together, in one
 * io_uring_enter per loop iteration at most (the SQEs of a round are held
 * for one more round while transactions are still ready, so that two
 * rounds' reads share one submission), and a lock held by a transaction
 * that is itself waiting for I/O stalls only the transactions that need it.
 *
 * Buffer header locks are held for a few instructions and never across a
 * wait, so, as in PostgreSQL (a spinlock there), the loop takes them with
 * the blocking ursa_mutex_lock (which spins briefly before it would sleep);
 * a transaction never yields while it holds one, so no other transaction of
 * the same loop can be the holder. The lock order of bufpool_pool.h holds
 * here too: a transaction that waits for a partition lock holds at most a
 * lower-numbered partition lock, and one that waits for a content lock or
 * I/O holds no partition lock, so the waits-for graph has no cycle.
 *
 * Wait queues: NWQ queues, each with a slot for every transaction of every
 * loop; a buffer's waiters use queue (buffer id % NWQ), which spreads the
 * queues' internal locks. A slot waits for one buffer at a time.
 */
#define BP_LOCKS_URSA 1
#include "bench/bufpool_pool.h"

#include <liburing.h>
#include <pthread.h>
#include <ursa/async.h>
#include <ursa/probe.h>
#include <ursa/waitq.h>

#define NWQ 16u
#define HOLD_MAX 16u /* a round's SQEs are submitted at once from this many on */

enum tstate {
	T_BEGIN,       /* start a transaction (or go idle when stopping) */
	T_PAGE,	       /* choose the next page; lock its mapping partition shared */
	T_LOOKED,      /* partition held: look up, pin */
	T_IOWAIT,      /* pinned a buffer being read: wait for the reader's wake */
	T_IOWOKEN,     /* the reader woke us: the page is valid */
	T_PFWAIT,      /* pinned a buffer our own prefetch is reading: its CQE readies us */
	T_VICTIM,      /* miss: choose a victim */
	T_FLUSH_LOCK,  /* dirty victim: lock its content shared (conditionally) */
	T_FLUSH_DONE,  /* write-back completed */
	T_MAP_LOCK,    /* lock the lower partition of (new page, victim's page) */
	T_MAP_LOCK2,   /* ... and the higher one, if different */
	T_MAPPED,      /* both held: remap the victim, start the read */
	T_READ_DONE,   /* read completed: validate, wake the waiters */
	T_CONTENT,     /* lock the page's content (shared, or exclusive to write) */
	T_ACCESS,      /* content held: read or modify the page */
	T_IDLE,
};

struct loop;

/* A read started ahead by a transaction's prefetch. Its CQE's user_data
 * is the record's address with bit 0 set (a transaction's is clear). */
struct rpf {
	struct buf *b; /* NULL once completed */
	int64_t page;
	struct txn *t;
};

struct txn {
	struct ursa_op op; /* the one lock or wait-queue wait in flight */
	struct loop *l;
	enum tstate st;
	uint32_t slot; /* wait-queue slot, unique across loops */
	int k;	       /* pages done in this transaction (-1: the hot page first) */
	bool wtxn;     /* this transaction modifies its last page */
	bool write;    /* ... and this access is that one */
	int io_res;    /* result of the READ/WRITE */
	int64_t page;
	struct buf *b; /* the page's buffer, pinned */
	struct buf *v; /* the victim being evicted, pinned */
	struct buf *hot; /* the hot page, pinned and locked exclusive to commit */
	uint32_t lo, hi;
	uint64_t t0;
	int64_t *pages;	 /* the transaction's pages, chosen at its start */
	struct rpf *pf;	 /* its prefetches, one per page */
	struct rpf *waiting_pf; /* T_PFWAIT: the prefetch whose read we wait for */
	struct txn *next_ready;
};

struct ring_shared {
	struct bp_run *run;
	struct pool *pool;
	ursa_waitq_t *wq[NWQ];
	int32_t *wait_next; /* per slot: next in its buffer's waiter list */
};

struct loop {
	struct ring_shared *sh;
	struct io_uring ring;
	struct txn *txns;
	int ntxn;
	int active; /* transactions not idle */
	struct bp_stats *s;
	uint64_t rng;
	struct txn *ready, **ready_tail;
	bool fixed; /* the pool's pages are registered with the ring (buffer 0) */
	bool held;  /* SQEs queued by the last round are held back (see loop_main) */
	pthread_t tid;
	int id;
};

static ursa_waitq_t *wq_of(struct ring_shared *sh, const struct buf *b)
{
	return sh->wq[b->id % NWQ];
}

/* ---- the loop's ring ------------------------------------------------------- */

static void make_ready(struct loop *l, struct txn *t)
{
	t->next_ready = NULL;
	*l->ready_tail = t;
	l->ready_tail = &t->next_ready;
}

/* One io_uring_enter: submit what is queued, and wait for a completion when
 * wait is set. Counted as the one syscall it is. */
static void loop_enter(struct loop *l, bool wait)
{
	l->s->syscalls++;
	int rc = wait ? io_uring_submit_and_wait(&l->ring, 1) : io_uring_submit(&l->ring);
	if (rc < 0 && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY)
		bp_die("bufpool ring: io_uring_enter: %s\n", strerror(-rc));
}

static struct io_uring_sqe *loop_sqe(struct loop *l)
{
	struct io_uring_sqe *sqe;
	while (!(sqe = io_uring_get_sqe(&l->ring)))
		loop_enter(l, false);
	return sqe;
}

static void prefetch_done(struct loop *l, struct rpf *pf, int res);

/* Pass every CQE to ursa first; the rest are our READs and WRITEs, whose
 * user_data is the transaction (a pointer: top byte zero, never ursa's). */
static void loop_reap(struct loop *l)
{
	struct io_uring_cqe *cqe;
	unsigned head, n = 0;
	io_uring_for_each_cqe(&l->ring, head, cqe)
	{
		struct ursa_op *done = NULL;
		if (ursa_handle_cqe(&l->ring, cqe, &done)) {
			if (done)
				make_ready(l, done->user_data);
		} else if (cqe->user_data & 1) {
			prefetch_done(l, (struct rpf *)(uintptr_t)(cqe->user_data & ~1ull),
				      cqe->res);
		} else {
			struct txn *t = io_uring_cqe_get_data(cqe);
			t->io_res = cqe->res;
			make_ready(l, t);
		}
		n++;
	}
	io_uring_cq_advance(&l->ring, n);
}

/*
 * Start an async lock or wait with the starter expression `call`: true if
 * it finished at once (the transaction goes on), false if it is in flight
 * (the transaction yields; ursa_handle_cqe hands its op back). -EBUSY: the
 * SQ ring was full; submit and try again. count: a counter to add a wait to,
 * or NULL.
 */
#define TXN_ASYNC(l, call, count)                                                                  \
	({                                                                                         \
		int rc_;                                                                           \
		uint64_t *cnt_ = (count);                                                          \
		while ((rc_ = (call)) == -EBUSY)                                                   \
			loop_enter(l, false);                                                      \
		if (rc_ < 0)                                                                       \
			bp_die("bufpool ring: %s: %s\n", #call, strerror(-rc_));                   \
		if (rc_ == 0 && cnt_)                                                              \
			(*cnt_)++;                                                                 \
		rc_ == 1;                                                                          \
	})

static void txn_check_op(struct txn *t)
{
	if (t->op.res != 0)
		bp_die("bufpool ring: async op finished with %s\n", strerror(-t->op.res));
}

/* A page read or write, into or from b's frame: a fixed-buffer op when the
 * pool's pages are registered with the ring (no page pinning per I/O: with
 * --procs the frames are shared memory, whose per-I/O pinning is slow),
 * else a plain one. */
static void loop_prep_io(struct loop *l, struct io_uring_sqe *sqe, bool write, struct buf *b,
			 int64_t page)
{
	const struct bp_config *c = l->sh->pool->cfg;
	uint64_t off = (uint64_t)page * BP_PAGE_SIZE;
	if (l->fixed && write)
		io_uring_prep_write_fixed(sqe, c->fd, b->data, BP_PAGE_SIZE, off, 0);
	else if (l->fixed)
		io_uring_prep_read_fixed(sqe, c->fd, b->data, BP_PAGE_SIZE, off, 0);
	else if (write)
		io_uring_prep_write(sqe, c->fd, b->data, BP_PAGE_SIZE, off);
	else
		io_uring_prep_read(sqe, c->fd, b->data, BP_PAGE_SIZE, off);
}

static void txn_io(struct loop *l, struct txn *t, bool write, struct buf *b, int64_t page)
{
	struct io_uring_sqe *sqe = loop_sqe(l);
	loop_prep_io(l, sqe, write, b, page);
	io_uring_sqe_set_data(sqe, t);
}

static void txn_check_io(struct txn *t, const char *what, int64_t page)
{
	if (t->io_res != (int)BP_PAGE_SIZE)
		bp_die("bufpool ring: %s page %lld: %s\n", what, (long long)page,
		       t->io_res < 0 ? strerror(-t->io_res) : "short transfer");
}

/* ---- pins with directed wakeups ---------------------------------------------- */

/* Pin b found through the mapping (its partition held). If a read into b is
 * in progress, enqueue t as its waiter, before the header lock is dropped:
 * the reader clears IO and takes the waiter list under that same lock, so
 * it either sees t queued or t sees IO clear. Returns whether t must wait. */
static bool txn_pin(struct loop *l, struct txn *t, struct buf *b)
{
	struct ring_shared *sh = l->sh;
	bp_lock(&b->hdr, l->s);
	buf_set_pins(b, b->pins + 1);
	if (b->usage < BP_MAX_USAGE)
		b->usage++;
	bool io = b->flags & BUF_IO;
	if (io) {
		int rc = ursa_waitq_prepare(wq_of(sh, b), t->slot, (uint64_t)b->page);
		if (rc)
			bp_die("bufpool ring: ursa_waitq_prepare: %s\n", strerror(-rc));
		sh->wait_next[t->slot] = b->waiters;
		b->waiters = (int32_t)t->slot;
	}
	bp_mutex_unlock(&b->hdr);
	t->b = b;
	return io;
}

/* The read into b completed: mark it valid and wake exactly its waiters. */
static void buf_read_done(struct loop *l, struct buf *b)
{
	struct ring_shared *sh = l->sh;
	bp_lock(&b->hdr, l->s);
	b->flags = BUF_VALID;
	int32_t w = b->waiters;
	b->waiters = BP_NIL;
	bp_mutex_unlock(&b->hdr);
	while (w != BP_NIL) {
		/* Read the link first: once woken, the slot may wait elsewhere. */
		int32_t next = sh->wait_next[w];
		int rc = ursa_waitq_wake_slot(wq_of(sh, b), (uint32_t)w, &l->ring);
		if (rc != 1)
			bp_die("bufpool ring: ursa_waitq_wake_slot(%d) = %d: waiter lost\n", w, rc);
		l->s->syscalls++; /* the call submits its FUTEX_WAKE in one io_uring_enter */
		w = next;
	}
}

/* A prefetch's read completed: the page is valid; wake its waiters, drop
 * the prefetch's pin. */
static void prefetch_done(struct loop *l, struct rpf *pf, int res)
{
	if (res != (int)BP_PAGE_SIZE)
		bp_die("bufpool ring: prefetch read of page %lld: %s\n", (long long)pf->page,
		       res < 0 ? strerror(-res) : "short read");
	struct buf *b = pf->b;
	l->s->misses++;
	if (bp_page_verify(b->data, (uint64_t)pf->page))
		l->s->bad_pages++;
	pf->b = NULL;
	buf_read_done(l, b);
	buf_unpin(b, l->s);
	/* Its own transaction waiting for it: ready it directly, no futex. */
	if (pf->t->waiting_pf == pf) {
		pf->t->waiting_pf = NULL;
		make_ready(l, pf->t);
	}
}

/* Start the reads of the transaction's pages that are not in the pool. */
static void txn_prefetch(struct loop *l, struct txn *t)
{
	const struct bp_config *c = l->sh->pool->cfg;
	for (int k = 0; k < c->txn_pages; k++) {
		struct buf *b = pool_prefetch(l->sh->pool, t->pages[k], l->s);
		if (!b)
			continue;
		struct rpf *pf = &t->pf[k];
		pf->b = b;
		pf->page = t->pages[k];
		pf->t = t;
		struct io_uring_sqe *sqe = loop_sqe(l);
		loop_prep_io(l, sqe, false, b, pf->page);
		io_uring_sqe_set_data64(sqe, (uint64_t)(uintptr_t)pf | 1);
		l->s->prefetches++;
	}
}

/* ---- the transaction state machine ------------------------------------------- */

/* Run t until it must wait (returns; its CQE makes it ready again) or it
 * commits (returns after queueing itself to start the next transaction, so
 * that the loop reaps completions between transactions). */
static void txn_run(struct loop *l, struct txn *t)
{
	struct ring_shared *sh = l->sh;
	struct pool *p = sh->pool;
	const struct bp_config *c = p->cfg;
	struct bp_stats *s = l->s;
	struct io_uring *ring = &l->ring;

	for (;;) {
		switch (t->st) {
		case T_BEGIN:
			if (bp_phase(sh->run) == BP_STOP) {
				t->st = T_IDLE;
				l->active--;
				return;
			}
			t->t0 = bp_now_ns();
			t->k = c->hot_pages ? -1 : 0;
			t->wtxn = bp_rand(&l->rng) % 100 < (uint64_t)c->write_pct;
			for (int k = 0; k < c->txn_pages; k++)
				t->pages[k] = (int64_t)bp_account_page(c, &l->rng);
			if (c->prefetch)
				txn_prefetch(l, t);
			t->st = T_PAGE;
			continue;

		case T_PAGE:
			if (t->k < 0) {
				t->page = (int64_t)bp_hot_page(c, &l->rng);
				t->write = true;
			} else {
				t->page = t->pages[t->k];
				t->write = t->wtxn && t->k == c->txn_pages - 1;
			}
			s->accesses++;
			t->st = T_LOOKED;
			if (!TXN_ASYNC(l,
				       ursa_rwlock_rdlock_async(
					   ring, &p->parts[pool_part(p, t->page)].lock, &t->op),
				       &s->lock_waits))
				return;
			continue;

		case T_LOOKED: {
			txn_check_op(t);
			struct buf *b = map_lookup(p, t->page);
			if (b && t->k >= 0 && t->pf[t->k].b == b) {
				/* Our own prefetch is reading it (its CQE, handled by
				 * this loop only, has not come yet, so IO is still
				 * set): wait for that CQE, not for a wake. */
				buf_pin(b, s);
				bp_rwlock_rdunlock(&p->parts[pool_part(p, t->page)].lock);
				t->b = b;
				t->waiting_pf = &t->pf[t->k];
				t->st = T_PFWAIT;
				return;
			}
			bool io = b && txn_pin(l, t, b);
			bp_rwlock_rdunlock(&p->parts[pool_part(p, t->page)].lock);
			t->st = !b ? T_VICTIM : io ? T_IOWAIT : T_CONTENT;
			continue;
		}

		case T_IOWAIT:
			s->io_waits++;
			t->st = T_IOWOKEN;
			if (!TXN_ASYNC(
				l, ursa_waitq_wait_async(ring, wq_of(sh, t->b), t->slot, &t->op),
				NULL))
				return;
			continue;

		case T_IOWOKEN:
			txn_check_op(t);
			t->st = T_CONTENT;
			continue;

		case T_PFWAIT:
			t->st = T_CONTENT;
			continue;

		case T_VICTIM: {
			bool dirty;
			t->v = pool_sweep(p, s, &dirty);
			t->st = dirty ? T_FLUSH_LOCK : T_MAP_LOCK;
			continue;
		}

		case T_FLUSH_LOCK:
			/* Shared: no modification can run while the image is written.
			 * Conditional, as PostgreSQL's BufferAlloc: its holder may
			 * be waiting for something we hold (a hot page locked to
			 * commit); then take another victim instead of waiting. */
		{
			struct buf *v = t->v;
			if (ursa_rwlock_tryrdlock(&v->content)) {
				t->v = NULL;
				t->st = T_VICTIM;
				buf_unpin(v, s);
				continue;
			}
			txn_io(l, t, true, v, v->page);
		}
			t->st = T_FLUSH_DONE;
			return;

		case T_FLUSH_DONE:
			txn_check_io(t, "write", t->v->page);
			bp_lock(&t->v->hdr, s);
			t->v->flags &= ~BUF_DIRTY;
			bp_mutex_unlock(&t->v->hdr);
			bp_rwlock_rdunlock(&t->v->content);
			s->writebacks++;
			t->st = T_MAP_LOCK;
			continue;

		case T_MAP_LOCK:
			map_parts(p, t->page, t->v->page, &t->lo, &t->hi);
			t->st = T_MAP_LOCK2;
			if (!TXN_ASYNC(
				l, ursa_rwlock_wrlock_async(ring, &p->parts[t->lo].lock, &t->op),
				&s->lock_waits))
				return;
			continue;

		case T_MAP_LOCK2:
			txn_check_op(t);
			t->st = T_MAPPED;
			if (t->hi != t->lo &&
			    !TXN_ASYNC(
				l, ursa_rwlock_wrlock_async(ring, &p->parts[t->hi].lock, &t->op),
				&s->lock_waits))
				return;
			continue;

		case T_MAPPED: {
			txn_check_op(t);
			struct buf *v = t->v, *b = map_lookup(p, t->page);
			bool io = false, remapped = false;
			if (!v)
				bp_die("bufpool ring: no victim in T_MAPPED\n");
			if (b) {
				/* Another transaction mapped the page meanwhile. */
				io = txn_pin(l, t, b);
			} else {
				bp_lock(&v->hdr, s);
				if (v->pins == 1 && !(v->flags & BUF_DIRTY)) {
					if (v->page >= 0)
						map_remove(p, v->page, v);
					map_insert(p, t->page, v);
					v->page = t->page;
					v->flags = BUF_IO;
					v->usage = 1;
					remapped = true;
				}
				/* else: pinned or re-dirtied through its old mapping */
				bp_mutex_unlock(&v->hdr);
			}
			if (t->hi != t->lo)
				bp_rwlock_wrunlock(&p->parts[t->hi].lock);
			bp_rwlock_wrunlock(&p->parts[t->lo].lock);
			if (remapped) {
				txn_io(l, t, false, v, t->page);
				t->st = T_READ_DONE;
				return;
			}
			buf_unpin(v, s);
			t->v = NULL;
			t->st = !b ? T_VICTIM : io ? T_IOWAIT : T_CONTENT;
			continue;
		}

		case T_READ_DONE:
			txn_check_io(t, "read", t->page);
			s->misses++;
			if (bp_page_verify(t->v->data, (uint64_t)t->page))
				s->bad_pages++;
			buf_read_done(l, t->v);
			t->b = t->v;
			t->v = NULL;
			t->st = T_CONTENT;
			continue;

		case T_CONTENT: {
			bp_rwlock_t *cl = &t->b->content;
			t->st = T_ACCESS;
			if (t->write && !c->unsafe) {
				if (!TXN_ASYNC(l, ursa_rwlock_wrlock_async(ring, cl, &t->op),
					       &s->lock_waits))
					return;
			} else if (!TXN_ASYNC(l, ursa_rwlock_rdlock_async(ring, cl, &t->op),
					      &s->lock_waits)) {
				return;
			}
			continue;
		}

		case T_ACCESS: {
			txn_check_op(t);
			struct buf *b = t->b;
			if (t->k < 0) {
				/* The hot page: keep it locked until the commit. */
				t->hot = b;
				t->b = NULL;
				t->k = 0;
				t->st = T_PAGE;
				continue;
			}
			txn_access(b, t->write, s);
			if (t->write) {
				bp_lock(&b->hdr, s);
				b->flags |= BUF_DIRTY;
				bp_mutex_unlock(&b->hdr);
			}
			if (t->write && !c->unsafe)
				bp_rwlock_wrunlock(&b->content);
			else
				bp_rwlock_rdunlock(&b->content);
			buf_unpin(b, s);
			t->b = NULL;
			if (++t->k < c->txn_pages) {
				t->st = T_PAGE;
				continue;
			}
			unsigned mods = t->wtxn;
			if (t->hot) {
				struct buf *h = t->hot;
				txn_access(h, true, s);
				bp_lock(&h->hdr, s);
				h->flags |= BUF_DIRTY;
				bp_mutex_unlock(&h->hdr);
				if (c->unsafe)
					bp_rwlock_rdunlock(&h->content);
				else
					bp_rwlock_wrunlock(&h->content);
				buf_unpin(h, s);
				t->hot = NULL;
				mods++;
			}
			bp_commit(sh->run, s, t->t0, mods);
			t->st = T_BEGIN;
			make_ready(l, t);
			return;
		}

		case T_IDLE:
			return;
		}
	}
}

static void *loop_main(void *arg)
{
	struct loop *l = arg;
	/* The ring is made by the thread that uses it. 2 SQEs per transaction
	 * at most are queued between two submits (a wait and its re-arm). */
	unsigned entries = 64;
	while (entries < 4u * (unsigned)l->ntxn)
		entries <<= 1;
	int rc = io_uring_queue_init(entries, &l->ring, 0);
	if (rc)
		bp_die("bufpool ring: io_uring_queue_init: %s\n", strerror(-rc));
	/* Register the pool's frames as buffer 0 (PostgreSQL 18 does the same
	 * with its shared buffers); without it (no memlock allowance) the
	 * plain ops are used. */
	const struct bp_config *c = l->sh->pool->cfg;
	struct iovec iov = {l->sh->pool->mem, (size_t)c->nbufs * BP_PAGE_SIZE};
	l->fixed = !c->no_fixed && io_uring_register_buffers(&l->ring, &iov, 1) == 0;

	l->ready = NULL;
	l->ready_tail = &l->ready;
	for (int i = 0; i < l->ntxn; i++) {
		l->txns[i].st = T_BEGIN;
		make_ready(l, &l->txns[i]);
	}
	l->active = l->ntxn;

	while (l->active > 0) {
		/* Run what is ready now; what becomes ready meanwhile waits for
		 * the next round, after the completions have been reaped. */
		struct txn *t = l->ready;
		l->ready = NULL;
		l->ready_tail = &l->ready;
		while (t) {
			struct txn *next = t->next_ready;
			txn_run(l, t);
			t = next;
		}
		if (l->active == 0)
			break;
		/* Submit when about to sleep. While transactions are still
		 * ready, what this round queued is held back for one round, so
		 * that the next round's SQEs join it in one io_uring_enter: one
		 * block plug for its reads and so one doorbell write to the
		 * device (a VM exit here; io_uring plugs a submission of 3 or
		 * more SQEs). An SQE waits at most one round longer;
		 * --eager-submit: none is held. */
		unsigned queued = io_uring_sq_ready(&l->ring);
		if (!l->ready) {
			loop_enter(l, true); /* submit and sleep for a completion */
			l->held = false;
		} else if (queued && (l->held || c->eager_submit || queued >= HOLD_MAX)) {
			loop_enter(l, false);
			l->held = false;
		} else if (queued) {
			l->held = true;
		}
		loop_reap(l);
	}
	/* Every transaction is idle: each op finished, each I/O completed. */
	io_uring_queue_exit(&l->ring);
	return NULL;
}

static void loop_proc(void *arg)
{
	loop_main(arg);
}

int bp_engine_ring(struct bp_run *r0)
{
	const struct bp_config *c = r0->cfg;
	struct ursa_features f;
	if (ursa_probe(&f) || !f.uring || !f.uring_futex) {
		r0->skip = "the kernel lacks io_uring futex operations (Linux 6.7+)";
		return 0;
	}
	/* --procs: the loops are processes; the run (its phase) is shared. */
	struct bp_run *r = r0;
	if (c->procs) {
		r = bp_alloc(BP_CACHELINE, sizeof(*r));
		*r = *r0;
	}
	/* c->inflight transactions in all, spread over the loops (the first
	 * inflight % loops loops get one more); never more loops than that. */
	int nloops = c->loops < c->inflight ? c->loops : c->inflight;
	uint32_t nslots = (uint32_t)c->inflight;

	struct ring_shared sh = {.run = r, .pool = pool_create(c)};
	for (unsigned i = 0; i < NWQ; i++) {
		sh.wq[i] = bp_alloc(BP_CACHELINE, ursa_waitq_size(nslots));
		BP_CHECK("ursa_waitq_init",
			 ursa_waitq_init(sh.wq[i], nslots, bp_shared() ? URSA_SHARED : 0));
	}
	sh.wait_next = bp_alloc(BP_CACHELINE, nslots * sizeof(int32_t));

	struct loop *loops = bp_alloc(BP_CACHELINE, (size_t)nloops * sizeof(*loops));
	r->stats = bp_alloc(BP_CACHELINE, (size_t)nloops * sizeof(struct bp_stats));
	r->nstats = nloops;
	r->os_threads = nloops;

	int started = 0, rc = 0;
	uint32_t slot = 0;
	for (int li = 0; li < nloops; li++) {
		struct loop *l = &loops[li];
		int per = c->inflight / nloops + (li < c->inflight % nloops);
		l->sh = &sh;
		l->id = li;
		l->s = &r->stats[li];
		l->rng = bp_mix64(0x7a6e0000u + (uint64_t)li) | 1;
		l->ntxn = per;
		l->txns = bp_alloc(BP_CACHELINE, (size_t)per * sizeof(struct txn));
		for (int i = 0; i < per; i++) {
			struct txn *t = &l->txns[i];
			t->l = l;
			t->slot = slot++;
			t->pages = bp_alloc(8, (size_t)c->txn_pages * sizeof(*t->pages));
			t->pf = bp_alloc(8, (size_t)c->txn_pages * sizeof(*t->pf));
			t->op.user_data = t;
		}
	}
	if (c->procs) {
		int *pids = bp_alloc(8, (size_t)nloops * sizeof(int));
		started = bp_fork_workers(nloops, loop_proc, loops, sizeof(*loops), pids);
		if (started < nloops) {
			rc = EAGAIN;
			__atomic_store_n(&r->phase, BP_STOP, __ATOMIC_RELAXED);
		} else {
			bp_timeline(r);
		}
		if (bp_wait_workers(started, pids))
			bp_die("bufpool: a loop process failed\n");
		started = 0;
	}
	for (; started < nloops && !c->procs; started++) {
		rc = pthread_create(&loops[started].tid, NULL, loop_main, &loops[started]);
		if (rc) {
			fprintf(stderr, "bufpool: pthread_create: %s\n", strerror(rc));
			__atomic_store_n(&r->phase, BP_STOP, __ATOMIC_RELAXED);
			break;
		}
	}
	if (!rc && !c->procs)
		bp_timeline(r);
	for (int i = 0; i < started; i++)
		pthread_join(loops[i].tid, NULL);
	if (r->joined)
		r->joined(r);
	r->flushed = pool_flush(sh.pool);
	r->problems += pool_destroy(sh.pool);
	for (int i = 0; i < nloops; i++) {
		for (int k = 0; k < loops[i].ntxn; k++) {
			bp_free(loops[i].txns[k].pages);
			bp_free(loops[i].txns[k].pf);
		}
		bp_free(loops[i].txns);
	}
	bp_free(loops);
	for (unsigned i = 0; i < NWQ; i++)
		bp_free(sh.wq[i]);
	bp_free(sh.wait_next);
	if (r != r0)
		*r0 = *r;
	return rc ? -rc : 0;
}
