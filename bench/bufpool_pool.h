/* SPDX-License-Identifier: MIT */
/*
 * bench/bufpool_pool.h — the buffer pool, written once against the lock
 * adapter (bench/bufpool_locks.h). Include it after defining BP_LOCKS_PTHREAD
 * or BP_LOCKS_URSA; everything here is static, so each engine's translation
 * unit gets its own copy built on its own locks.
 *
 * The design is PostgreSQL's (src/backend/storage/buffer/), simplified:
 *
 *   buffer   a page-sized frame plus a descriptor: the page it holds (tag),
 *            flags VALID / DIRTY / IO (a read into it is in progress), a pin
 *            count (users that must not see it evicted), a usage count for
 *            the clock sweep, a header lock guarding those, and a content
 *            lock (shared to read the page, exclusive to modify it).
 *   mapping  a hash table page -> buffer, chained through the descriptors,
 *            split into nparts partitions, each under its own rwlock
 *            (shared to look up, exclusive to change a mapping).
 *   sweep    a clock hand over the buffers; an unpinned buffer with usage 0
 *            is the victim, otherwise its usage is decremented.
 *
 * Lock order (no cycle, so no deadlock): mapping partitions, lower index
 * first -> a buffer's header lock. A header lock is held for a few
 * instructions and never across I/O or any other wait. A content lock is
 * taken only with no partition or header lock held; a transaction holds one
 * content lock at a time, and an evicting worker holds its victim's content
 * lock (shared, while it writes the page back) with nothing else held.
 *
 * Why nothing is lost or torn:
 *  - A buffer is remapped only while its evictor holds it pinned exactly
 *    once (its own pin), not DIRTY, and holds both mapping partitions
 *    exclusive; everyone else reaches a buffer through the mapping under a
 *    partition lock and pins it under the header lock, so nobody can be
 *    using a buffer while its tag changes.
 *  - The tag, and IO set, change together under the header lock; whoever
 *    pins a buffer with IO set waits until the reader clears it (condvar in
 *    the threads engines, a directed waitq wake in the ring engine).
 *  - A modification holds the content lock exclusive and sets DIRTY before
 *    releasing it; a write-back holds it shared, so the image written is a
 *    whole committed state, and DIRTY is cleared after the write only if no
 *    modification could have come in between (none can: the shared lock).
 */
#ifndef URSA_BENCH_BUFPOOL_POOL_H
#define URSA_BENCH_BUFPOOL_POOL_H

#include "bench/bufpool_locks.h"

#include <stdlib.h>
#include <unistd.h>

#define BUF_VALID 0x1u /* data holds page `page` */
#define BUF_DIRTY 0x2u /* data is newer than the file */
#define BUF_IO	  0x4u /* a read of `page` into data is in progress */
#define BP_NIL	  (-1)

struct buf {
	bp_mutex_t hdr;	     /* guards flags, pins, usage, waiters; page with the partition */
	bp_rwlock_t content; /* shared: read data; exclusive: modify it */
	bp_cond_t io_done;   /* threads engines: broadcast when IO clears */
	uint32_t flags;
	uint32_t pins;
	uint32_t usage;
	int32_t waiters;   /* ring engine: first slot waiting for IO to clear */
	int64_t page;	   /* tag: the page held, or -1 (never used yet) */
	int32_t hash_next; /* mapping chain, under the partition lock */
	uint32_t id;
	unsigned char *data;
} BP_ALIGNED;

struct bp_part {
	bp_rwlock_t lock;
} BP_ALIGNED;

struct pool {
	const struct bp_config *cfg;
	struct buf *bufs;
	unsigned char *mem; /* nbufs pages, 4 KiB aligned for O_DIRECT */
	struct bp_part *parts;
	int32_t *bucket; /* chain heads, under the partition locks */
	uint64_t bucket_mask;
	uint64_t hand BP_ALIGNED; /* clock hand: atomic ticket */
};

static struct pool *pool_create(const struct bp_config *c)
{
	struct pool *p = bp_alloc(BP_CACHELINE, sizeof(*p));
	p->cfg = c;
	p->bufs = bp_alloc(BP_CACHELINE, c->nbufs * sizeof(struct buf));
	p->mem = bp_alloc(4096, (size_t)c->nbufs * BP_PAGE_SIZE);
	p->parts = bp_alloc(BP_CACHELINE, c->nparts * sizeof(struct bp_part));
	uint64_t nb = c->nparts;
	while (nb < 2ull * c->nbufs)
		nb <<= 1;
	p->bucket = bp_alloc(BP_CACHELINE, nb * sizeof(int32_t));
	p->bucket_mask = nb - 1;
	for (uint64_t i = 0; i < nb; i++)
		p->bucket[i] = BP_NIL;
	for (uint32_t i = 0; i < c->nparts; i++)
		bp_rwlock_init(&p->parts[i].lock);
	for (uint32_t i = 0; i < c->nbufs; i++) {
		struct buf *b = &p->bufs[i];
		bp_mutex_init(&b->hdr);
		bp_rwlock_init(&b->content);
		bp_cond_init(&b->io_done);
		b->page = -1;
		b->hash_next = BP_NIL;
		b->waiters = BP_NIL;
		b->id = i;
		b->data = p->mem + (size_t)i * BP_PAGE_SIZE;
	}
	return p;
}

/*
 * Tear the pool down after its workers are joined, checking it is quiescent:
 * no pin left, no I/O in progress, no waiter queued, and every lock
 * destroyable (ursa's destroy says -EBUSY for a lock still held or waited
 * on; glibc's for some of those cases). Returns the number of problems.
 */
static long pool_destroy(struct pool *p)
{
	const struct bp_config *c = p->cfg;
	long bad = 0;
	for (uint32_t i = 0; i < c->nbufs; i++) {
		struct buf *b = &p->bufs[i];
		if (b->pins || (b->flags & BUF_IO) || b->waiters != BP_NIL) {
			fprintf(stderr, "bufpool: buffer %u left pins %u flags %#x waiters %d\n", i,
				b->pins, b->flags, b->waiters);
			bad++;
		}
		if (bp_mutex_destroy(&b->hdr) || bp_rwlock_destroy(&b->content) ||
		    bp_cond_destroy(&b->io_done)) {
			fprintf(stderr, "bufpool: buffer %u: a lock is still busy\n", i);
			bad++;
		}
	}
	for (uint32_t i = 0; i < c->nparts; i++)
		if (bp_rwlock_destroy(&p->parts[i].lock)) {
			fprintf(stderr, "bufpool: mapping partition %u: lock still busy\n", i);
			bad++;
		}
	bp_free(p->bucket);
	bp_free(p->parts);
	bp_free(p->mem);
	bp_free(p->bufs);
	bp_free(p);
	return bad;
}

/* ---- the mapping table ------------------------------------------------ */

static inline uint64_t pool_bucket(const struct pool *p, int64_t page)
{
	return bp_mix64((uint64_t)page) & p->bucket_mask;
}

static inline uint32_t pool_part(const struct pool *p, int64_t page)
{
	return (uint32_t)(pool_bucket(p, page) & (p->cfg->nparts - 1));
}

/* The buffer mapped to page, or NULL. Caller holds page's partition. */
static inline struct buf *map_lookup(struct pool *p, int64_t page)
{
	for (int32_t i = p->bucket[pool_bucket(p, page)]; i != BP_NIL; i = p->bufs[i].hash_next)
		if (p->bufs[i].page == page)
			return &p->bufs[i];
	return NULL;
}

/* Caller holds page's partition exclusive. */
static inline void map_insert(struct pool *p, int64_t page, struct buf *b)
{
	uint64_t k = pool_bucket(p, page);
	b->hash_next = p->bucket[k];
	p->bucket[k] = (int32_t)b->id;
}

/* Caller holds page's partition exclusive; b is mapped to page. */
static inline void map_remove(struct pool *p, int64_t page, struct buf *b)
{
	int32_t *link = &p->bucket[pool_bucket(p, page)];
	while (*link != (int32_t)b->id) {
		if (*link == BP_NIL)
			bp_die("bufpool: buffer %u missing from the mapping of page %lld\n", b->id,
			       (long long)page);
		link = &p->bufs[*link].hash_next;
	}
	*link = b->hash_next;
	b->hash_next = BP_NIL;
}

/* The partitions an eviction of victim (tag old, -1 if none) for page must
 * hold exclusive, lower index first; *hi == *lo when they are the same. */
static inline void map_parts(struct pool *p, int64_t page, int64_t old, uint32_t *lo, uint32_t *hi)
{
	uint32_t a = pool_part(p, page), b = old >= 0 ? pool_part(p, old) : a;
	*lo = a < b ? a : b;
	*hi = a < b ? b : a;
}

/* ---- pins and the clock sweep --------------------------------------------- */

/* pins is written under the header lock, and read without it by the sweep
 * (only to skip pinned buffers quickly), hence the atomic store. */
/* GCC 12 warns, where this is inlined deep into a worker's loop, that the
 * store writes into "a region of size 0" (b is never NULL: a pinned buffer
 * of the pool): a known false positive of -Wstringop-overflow. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overflow"
static inline void buf_set_pins(struct buf *b, uint32_t n)
{
	__atomic_store_n(&b->pins, n, __ATOMIC_RELAXED);
}
#pragma GCC diagnostic pop

/* Pin b, found through the mapping (the caller holds its partition, so b
 * is still mapped to the page). Returns whether a read into b is in
 * progress: then the caller waits for it before using the page. */
static inline bool buf_pin(struct buf *b, struct bp_stats *s)
{
	bp_lock(&b->hdr, s);
	buf_set_pins(b, b->pins + 1);
	if (b->usage < BP_MAX_USAGE)
		b->usage++;
	bool io = b->flags & BUF_IO;
	bp_mutex_unlock(&b->hdr);
	return io;
}

static inline void buf_unpin(struct buf *b, struct bp_stats *s)
{
	bp_lock(&b->hdr, s);
	buf_set_pins(b, b->pins - 1);
	bp_mutex_unlock(&b->hdr);
}

/*
 * Choose a victim: advance the clock hand until an unpinned buffer with
 * usage 0 comes up, decrementing the usage of the unpinned ones passed. The
 * victim is returned pinned (by the caller, once), header unlocked; *dirty
 * says whether it must be written back before reuse.
 */
static __attribute__((returns_nonnull)) struct buf *pool_sweep(struct pool *p, struct bp_stats *s,
							     bool *dirty)
{
	uint32_t n = p->cfg->nbufs;
	for (uint64_t tries = 0;; tries++) {
		uint64_t t = __atomic_fetch_add(&p->hand, 1, __ATOMIC_RELAXED);
		struct buf *b = &p->bufs[t % n];
		/* A pinned buffer cannot be the victim; skip it without its lock
		 * (a stale read only costs one more step of the hand). */
		if (__atomic_load_n(&b->pins, __ATOMIC_RELAXED))
			goto next;
		bp_lock(&b->hdr, s);
		if (b->pins == 0) {
			if (b->usage == 0) {
				buf_set_pins(b, 1);
				*dirty = b->flags & BUF_DIRTY;
				bp_mutex_unlock(&b->hdr);
				return b;
			}
			b->usage--;
		}
		bp_mutex_unlock(&b->hdr);
	next:
		if (tries > 100ull * n)
			bp_die(
			    "bufpool: no unpinned buffer after %llu steps of the clock; the pool "
			    "is too small for this many transactions in flight\n",
			    (unsigned long long)tries);
	}
}

/* ---- prefetch (engines with asynchronous reads) ------------------------ */

/*
 * Start bringing page into the pool without waiting for anything, as a
 * read stream does ahead of its consumer (PostgreSQL 18's io_method=io_uring
 * engines). Returns a buffer remapped to page with IO set and pinned once by
 * the prefetch: the caller starts its read, and when the read completes
 * marks it valid and wakes its waiters as a read of its own, then unpins it.
 * NULL: the page is already mapped (or being read), or a lock or a clean
 * victim could not be had at once; the access will then read it itself.
 * Try-locks only (the header lock aside, held for a few instructions), so
 * no lock order applies and nothing is waited for.
 */
static inline struct buf *pool_prefetch(struct pool *p, int64_t page, struct bp_stats *s)
{
	bp_rwlock_t *part = &p->parts[pool_part(p, page)].lock;
	if (!bp_rwlock_tryrdlock(part))
		return NULL;
	bool mapped = map_lookup(p, page) != NULL;
	bp_rwlock_rdunlock(part);
	if (mapped)
		return NULL;
	bool dirty;
	struct buf *v = pool_sweep(p, s, &dirty);
	bool ok = false;
	uint32_t lo, hi;
	map_parts(p, page, v->page, &lo, &hi);
	if (!dirty && bp_rwlock_trywrlock(&p->parts[lo].lock)) {
		if (hi == lo || bp_rwlock_trywrlock(&p->parts[hi].lock)) {
			if (!map_lookup(p, page)) {
				bp_lock(&v->hdr, s);
				if (v->pins == 1 && !(v->flags & BUF_DIRTY)) {
					if (v->page >= 0)
						map_remove(p, v->page, v);
					map_insert(p, page, v);
					v->page = page;
					v->flags = BUF_IO;
					v->usage = 1;
					ok = true;
				}
				bp_mutex_unlock(&v->hdr);
			}
			if (hi != lo)
				bp_rwlock_wrunlock(&p->parts[hi].lock);
		}
		bp_rwlock_wrunlock(&p->parts[lo].lock);
	}
	if (!ok) {
		buf_unpin(v, s);
		return NULL;
	}
	return v;
}

/* ---- synchronous page I/O (threads engines, flush) --------------------- */

static inline void page_pread(const struct bp_config *c, void *dst, int64_t page,
			      struct bp_stats *s)
{
	s->syscalls++;
	ssize_t n = pread(c->fd, dst, BP_PAGE_SIZE, (off_t)page * BP_PAGE_SIZE);
	if (n != (ssize_t)BP_PAGE_SIZE)
		bp_die("bufpool: pread page %lld: %s\n", (long long)page,
		       n < 0 ? strerror(errno) : "short read");
}

static inline void page_pwrite(const struct bp_config *c, const void *src, int64_t page,
			       struct bp_stats *s)
{
	s->syscalls++;
	ssize_t n = pwrite(c->fd, src, BP_PAGE_SIZE, (off_t)page * BP_PAGE_SIZE);
	if (n != (ssize_t)BP_PAGE_SIZE)
		bp_die("bufpool: pwrite page %lld: %s\n", (long long)page,
		       n < 0 ? strerror(errno) : "short write");
}

/* After the workers are joined: write every dirty buffer back. */
static uint64_t pool_flush(struct pool *p)
{
	struct bp_stats s = {0};
	uint64_t n = 0;
	for (uint32_t i = 0; i < p->cfg->nbufs; i++) {
		struct buf *b = &p->bufs[i];
		if (b->flags & BUF_DIRTY) {
			page_pwrite(p->cfg, b->data, b->page, &s);
			b->flags &= ~BUF_DIRTY;
			n++;
		}
	}
	return n;
}

/* ---- the page work of a transaction ------------------------------------------ */

/* Under b's content lock (shared to read, exclusive to write). A read
 * verifies the whole image: a writer that ran while a reader held the lock
 * shared would show as a checksum mismatch here. */
static inline void txn_access(struct buf *b, bool write, struct bp_stats *s)
{
	if (write)
		bp_page_modify(b->data);
	else if (bp_page_verify(b->data, (uint64_t)b->page))
		s->bad_pages++;
}

#endif
