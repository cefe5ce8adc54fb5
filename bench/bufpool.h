/* SPDX-License-Identifier: MIT */
/*
 * bench/bufpool.h — the buffer-pool demo's shared pieces: configuration,
 * the on-disk page format and its checksum, the zipf page chooser, per-worker
 * statistics, the latency histogram, and the engines' entry points.
 *
 * bench/BUFPOOL.md describes the demo as a whole. The pool itself (buffer
 * descriptors, mapping table, clock sweep) is bench/bufpool_pool.h, written
 * once against a small lock adapter and compiled for pthreads and for ursa.
 */
#ifndef URSA_BENCH_BUFPOOL_H
#define URSA_BENCH_BUFPOOL_H

#include "config.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define BP_PAGE_SIZE  8192u
#define BP_PAGE_WORDS (BP_PAGE_SIZE / 8u)
#define BP_PAGE_MAGIC 0x4547415041535255ull /* "URSAPAGE" */
#define BP_ROW_SIZE   64u
#define BP_ROWS	      ((BP_PAGE_SIZE - sizeof(struct bp_page_hdr)) / BP_ROW_SIZE)
#define BP_CACHELINE  64
#define BP_ALIGNED    __attribute__((aligned(BP_CACHELINE)))
#define BP_MAX_USAGE  5 /* clock-sweep usage count ceiling (PostgreSQL's) */

/*
 * Page format. Every page starts with this header; the rest is BP_ROWS rows
 * of 64 bytes. A write transaction increments counter and rewrites row
 * (counter % BP_ROWS) with bytes derived from (page_no, counter), then
 * recomputes checksum, so the whole page image changes consistently or the
 * checksum says it did not.
 */
struct bp_page_hdr {
	uint64_t magic;
	uint64_t page_no;
	uint64_t counter;  /* committed modifications of this page, ever */
	uint64_t checksum; /* bp_page_checksum() of the page */
};

enum bp_engine_kind {
	BP_THREADS,	 /* pthread locks, blocking pread/pwrite, condvar I/O waits */
	BP_THREADS_URSA, /* the same code on ursa's blocking primitives */
	BP_RING,	 /* event loops, ursa async locks + io_uring I/O + waitq */
	BP_THREADS_AIO,	      /* threads, reads in their own io_uring, blocking locks */
	BP_THREADS_AIO_TIMED, /* the same, with the deadlock's workaround */
	BP_NENGINES
};

struct bp_config {
	/* the workload */
	double seconds; /* measured window per engine */
	double warmup;	/* unmeasured warm-up before it */
	int workers;	/* threads engines: threads (= transactions in flight) */
	int loops;	/* ring: event loops (threads) */
	int inflight;	/* ring: transactions in flight, in all its loops together */
	int txn_pages;	/* pages accessed per transaction */
	int hot_pages;	/* >0: every transaction also updates one of pages
			 * [0, hot_pages), holding its content lock exclusive
			 * from its first access to its commit (pgbench tpcb's
			 * branch row); the other accesses avoid those pages */
	int write_pct;	/* % of transactions that modify their last page */
	double theta;	/* zipf skew */
	bool unsafe;	/* self-test: writers take the content lock SHARED */
	bool no_fixed;	/* ring: plain reads and writes, no registered buffers */
	bool eager_submit; /* ring: submit after every round (no holding back) */
	bool procs;	/* workers are forked processes over a MAP_SHARED pool,
			 * process-shared locks (PostgreSQL's model) */
	bool prefetch;	/* engines with async reads start a transaction by
			 * starting the reads of all its pages (a read stream) */
	/* the file and the pool */
	int fd; /* the data file (O_DIRECT unless buffered) */
	bool direct;
	uint64_t npages; /* pages in the file */
	uint32_t nbufs;	 /* buffers in the pool */
	uint32_t nparts; /* mapping-table partitions (power of 2) */
	uint64_t stride; /* zipf rank -> page scatter (coprime with npages) */
	double zeta_n;	 /* zipf constants (Gray et al., as YCSB) */
	double zeta_2;
	double alpha;
	double eta;
	double half_pow_theta;
};

/* ---- time ------------------------------------------------------------- */

static inline uint64_t bp_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- random numbers and the zipf chooser --------------------------------- */

static inline uint64_t bp_rand(uint64_t *s)
{
	/* xorshift64*: fast, good enough for choosing pages. */
	uint64_t x = *s;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1Dull;
}

static inline double bp_rand01(uint64_t *s)
{
	return (double)(bp_rand(s) >> 11) * 0x1.0p-53;
}

static inline uint64_t bp_mix64(uint64_t x)
{
	/* splitmix64's finaliser */
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

void bp_zipf_setup(struct bp_config *c);
uint64_t bp_zipf_page(const struct bp_config *c, uint64_t *rng);
/* A page for an ordinary access: zipf, never one of the hot pages. */
static inline uint64_t bp_account_page(const struct bp_config *c, uint64_t *rng)
{
	uint64_t p;
	while ((p = bp_zipf_page(c, rng)) < (uint64_t)c->hot_pages)
		;
	return p;
}
/* The hot page a transaction updates (uniform over the hot pages). */
static inline uint64_t bp_hot_page(const struct bp_config *c, uint64_t *rng)
{
	return bp_rand(rng) % (uint64_t)c->hot_pages;
}

/* ---- pages ----------------------------------------------------------------- */

uint64_t bp_page_checksum(const void *page);
void bp_page_init(void *page, uint64_t page_no);
/* Apply one committed modification (counter++, a row, the checksum). */
void bp_page_modify(void *page);
/* 0 if the image is a valid page page_no, else -1. */
int bp_page_verify(const void *page, uint64_t page_no);

/* ---- statistics --------------------------------------------------------- */

/*
 * Latency histogram: log-linear, 16 sub-buckets per power of two of
 * nanoseconds (about 6% resolution), like HdrHistogram with 4 bits.
 */
#define BP_HIST_SUB	4
#define BP_HIST_BUCKETS ((65 - BP_HIST_SUB) << BP_HIST_SUB)

static inline unsigned bp_hist_index(uint64_t ns)
{
	if (ns < (1u << BP_HIST_SUB))
		return (unsigned)ns;
	unsigned e = 63u - (unsigned)__builtin_clzll(ns); /* >= BP_HIST_SUB */
	unsigned sub = (unsigned)(ns >> (e - BP_HIST_SUB)) & ((1u << BP_HIST_SUB) - 1);
	return ((e - BP_HIST_SUB + 1) << BP_HIST_SUB) + sub;
}

/* Per worker (thread or loop); written by its owner only, read after join. */
struct bp_stats {
	uint64_t commits;     /* whole run */
	uint64_t writes;      /* committed page modifications, whole run */
	uint64_t win_commits; /* committed inside the measured window */
	uint64_t accesses;    /* page accesses */
	uint64_t misses;      /* accesses that had to read the page */
	uint64_t writebacks;  /* dirty victims written back */
	uint64_t syscalls;    /* ones this code makes: pread, pwrite, io_uring_enter */
	uint64_t lock_waits;  /* lock acquisitions that could not be had at once */
	uint64_t io_waits;    /* waits for a page another worker was reading */
	uint64_t bad_pages;   /* page images that failed verification */
	uint64_t prefetches;  /* reads started ahead by a prefetch */
	uint64_t lock_timeouts; /* threads-aio-timed: timed waits that expired */
	uint64_t hist[BP_HIST_BUCKETS];
} BP_ALIGNED;

void bp_stats_add(struct bp_stats *into, const struct bp_stats *s);
/* The q-quantile (0..1) of the window's latencies, in ns (bucket midpoint). */
double bp_hist_quantile(const struct bp_stats *s, double q);

/* ---- one engine run ------------------------------------------------------- */

enum { BP_WARMUP = 0, BP_MEASURE = 1, BP_STOP = 2 };

struct bp_run {
	const struct bp_config *cfg;
	int phase;		/* BP_WARMUP -> BP_MEASURE -> BP_STOP, atomic */
	uint64_t t_measure;	/* when BP_MEASURE began */
	uint64_t t_stop;	/* when BP_STOP began */
	struct bp_stats *stats; /* one per worker, allocated by the engine */
	int nstats;
	int os_threads;	  /* worker threads the engine ran */
	const char *skip; /* engine could not run: why */
	uint64_t flushed; /* dirty buffers written back after the run */
	long problems;	  /* pool not quiescent at the end (see pool_destroy) */
	int stalls;	  /* the engine's watchdog found it stalled (threads-aio) */
	char stall[700];  /* what it found */
	/* called by the engine right after its workers are joined, before it
	 * flushes and destroys the pool: bufpool.c samples the counters. */
	void (*joined)(struct bp_run *);
	void *priv;
};

static inline int bp_phase(const struct bp_run *r)
{
	return __atomic_load_n(&r->phase, __ATOMIC_RELAXED);
}

/* Record a committed transaction started at t0 that modified `mods` pages. */
static inline void bp_commit(struct bp_run *r, struct bp_stats *s, uint64_t t0, unsigned mods)
{
	s->commits++;
	s->writes += mods;
	if (bp_phase(r) == BP_MEASURE) {
		s->win_commits++;
		s->hist[bp_hist_index(bp_now_ns() - t0)]++;
	}
}

/* The engine's main thread: warm-up, measured window, stop. */
void bp_timeline(struct bp_run *r);

/* Engines: 0, or -errno with a message on stderr (the run is unusable).
 * r->skip set and 0 returned: the engine cannot run here (reason). */
int bp_engine_threads_pthread(struct bp_run *r);
int bp_engine_threads_ursa(struct bp_run *r);
int bp_engine_ring(struct bp_run *r);
int bp_engine_threads_aio(struct bp_run *r);
int bp_engine_threads_aio_timed(struct bp_run *r);

void *bp_alloc(size_t align, size_t size); /* zeroed; exits on failure */
void bp_free(void *p);			   /* of bp_alloc's (a no-op in the arena) */
/*
 * --procs: while the arena is active, bp_alloc takes memory from one
 * MAP_SHARED mapping made before any fork (so every pointer into it is
 * valid in every worker process), and the pool's locks are initialised
 * process-shared. bp_arena_begin resets it for an engine run; bp_arena_end
 * makes bp_alloc use the heap again.
 */
void bp_arena_create(size_t size);
void bp_arena_begin(void);
void bp_arena_end(void);
bool bp_shared(void);
/* Fork n workers running fn(arg + i * stride); their pids in pids.
 * Returns how many started. Each exits 0 after fn returns. */
int bp_fork_workers(int n, void (*fn)(void *), void *arg, size_t stride, int *pids);
/* Wait for them; returns how many did not exit 0. */
int bp_wait_workers(int n, const int *pids);
void bp_die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));

#endif
