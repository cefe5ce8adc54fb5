/* SPDX-License-Identifier: MIT */
/*
 * bench/bench_contention.c — the contention matrix (scenario `contention`).
 *
 * Workloads: mutex; rwlock with 5% and 50% writes; a semaphore of count 1
 * (wait, section, post); a condition-variable producer/consumer queue.
 * Critical sections: empty, ~100 ns and ~1 us of calibrated busy work, and
 * one whose holder calls sched_yield(). The busy work is a register loop,
 * or with --work shared read-modify-writes of protected data; --outside
 * adds busy work after every operation, outside the lock. Threads 1, 2,
 * 4, ... 32 (the top is --threads). Implementations: glibc, ursa, nsync,
 * ck (spinlocks), absl.
 *
 * Every point is measured in rounds; each round runs every implementation
 * once, the order reversed every other round (A B C .. C B A ..), so a
 * drift in the machine's load hits all of them alike. The table shows
 * glibc's median ops/s and, for the others, the median over the rounds of
 * the per-round ratio to glibc with its [min..max]; under it, per
 * implementation, the fairness: the least-served thread's share of the
 * acquisitions relative to the mean (1.00: all equal) and the p99 of the
 * sampled time from calling lock to holding it.
 *
 * The workloads are in contention_tmpl.h, instantiated per implementation.
 * bench/README.md explains the method and shows a run.
 */
#include "bench/adapters.h"
#include "bench/bench.h"

#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { CN_MUTEX, CN_RW95, CN_RW50, CN_SEM, CN_COND, CN_NWORK };
enum { CS_EMPTY, CS_100NS, CS_1US, CS_YIELD, CN_NCS };

static const char *const cn_wname[CN_NWORK] = {"mutex", "rw95", "rw50", "sem", "cond"};
static const char *const cn_wwhat[CN_NWORK] = {
    "one mutex: lock, section, unlock",
    "one rwlock, 95% read / 5% write locks (chosen at random per operation)",
    "one rwlock, 50% read / 50% write locks",
    "a semaphore of count 1: wait, section, post (glibc sem_t vs ursa_sem_t)",
    "producer/consumer over a 16-slot queue: mutex + 2 condvars, signal under the mutex",
};
static const char *const cn_csname[CN_NCS] = {"empty", "100ns", "1us", "yield"};

#define CN_SAMPLE_MASK 15u /* time every 16th acquisition */
#define CN_QCAP	       16u
#define CN_HBUCKETS    512
#define CN_MAX_ROUNDS  64
#define CN_MAX_TPTS    12
#define CN_MAX_IMPLS   8

struct cn_point {
	int workload, cs, threads;
	uint64_t dur_ns;
};

struct cn_result {
	double ops_s;	  /* operations (cond: items through the queue) per second */
	double share_min; /* least-served thread's acquisitions / mean */
	double share_max; /* most-served thread's acquisitions / mean */
	double p99_us;	  /* p99 of the sampled lock-call-to-held times, all threads */
	double worst_us;  /* the largest of the threads' own p99s */
};

/* The part of every workload's shared state the harness drives. */
struct cn_common {
	pthread_barrier_t start;
	uint32_t iters;	    /* busy-work loop iterations inside the section */
	uint32_t out_iters; /* and outside, after every operation (--outside) */
	bool yield;	/* sched_yield() inside the section */
	uint64_t elapsed_ns;
	int stop BENCH_ALIGNED;
};

struct cn_thread {
	void *shared;
	int index;
	uint64_t seed;
	uint64_t ops;	/* acquisitions counted (before the stop) */
	uint64_t items; /* what the throughput counts */
	uint64_t check; /* what the workload's check adds up */
	uint32_t hist[CN_HBUCKETS];
} BENCH_ALIGNED;

/* ------------------------------------------------------------- clock */

/* The sampled timestamps: the TSC where there is one (a few ns, no system
 * call), else CLOCK_MONOTONIC (vDSO). The same for every implementation. */
static double cn_ticks_per_ns = 1.0;

static inline uint64_t cn_ts(void)
{
#if defined(__x86_64__) || defined(__i386__)
	return __builtin_ia32_rdtsc();
#else
	return bench_now_ns();
#endif
}

static void cn_calibrate_ts(void)
{
#if defined(__x86_64__) || defined(__i386__)
	uint64_t n0 = bench_now_ns(), c0 = cn_ts();
	bench_sleep_ns(20000000);
	uint64_t n1 = bench_now_ns(), c1 = cn_ts();
	if (n1 > n0 && c1 > c0)
		cn_ticks_per_ns = (double)(c1 - c0) / (double)(n1 - n0);
#endif
}

/* A log-linear histogram of ticks: exact below 16, then 8 buckets per
 * power of two (12.5% resolution). */
static inline unsigned cn_bucket(uint64_t v)
{
	if (v < 16)
		return (unsigned)v;
	unsigned e = 63u - (unsigned)__builtin_clzll(v); /* >= 4 */
	unsigned b = 16u + (e - 4u) * 8u + (unsigned)((v >> (e - 3u)) & 7u);
	return b < CN_HBUCKETS ? b : CN_HBUCKETS - 1;
}

static double cn_bucket_mid(unsigned b)
{
	if (b < 16)
		return b;
	unsigned e = (b - 16u) / 8u + 4u, sub = (b - 16u) % 8u;
	double lo = ldexp(1.0, (int)e) * (1.0 + sub / 8.0);
	return lo * (1.0 + 1.0 / 16.0);
}

static inline void cn_hist_add(struct cn_thread *a, uint64_t ticks)
{
	a->hist[cn_bucket(ticks)]++;
}

/*
 * The section: busy work (empty: 0 iterations), or a yield while holding.
 *
 * --work shared: a section's busy work is read-modify-writes of the
 * protected data, CN_PROT_LINES cache lines taken in turn (a reader of an
 * rwlock only reads them). The data moves with the lock, so a lock that
 * passes between CPUs pays for it, as real critical sections do. Each
 * step is calibrated on one thread with the lines in its cache.
 */
#define CN_PROT_LINES 8
#define CN_PROT_WORDS (CN_PROT_LINES * 8)
static uint64_t cn_prot[CN_PROT_WORDS] BENCH_ALIGNED;
static bool cn_shared;
static double cn_prot_steps_per_ns = 1.0;

static inline uint32_t cn_prot_index(uint32_t i)
{
	return (i % CN_PROT_LINES) * 8 + (i / CN_PROT_LINES) % 8;
}

static inline void cn_prot_write(uint32_t steps)
{
	volatile uint64_t *p = cn_prot;
	for (uint32_t i = 0; i < steps; i++)
		p[cn_prot_index(i)]++;
}

static void cn_prot_write_loop(uint32_t steps)
{
	cn_prot_write(steps);
}

static inline void cn_prot_read(uint32_t steps)
{
	volatile uint64_t *p = cn_prot;
	uint64_t sum = 0;
	for (uint32_t i = 0; i < steps; i++)
		sum += p[cn_prot_index(i)];
	__asm__ volatile("" ::"r"(sum));
}

static void cn_work_init(void)
{
	cn_shared = bench_opt.cn_work_shared;
	if (cn_shared)
		cn_prot_steps_per_ns = bench_calibrate_loop(cn_prot_write_loop, 1000000);
}

/* Loop iterations (or steps) for about ns nanoseconds of section work. */
static inline uint32_t cn_iters(double ns)
{
	return cn_shared ? bench_iters_at(ns, cn_prot_steps_per_ns) : bench_iters(ns);
}

/* The section of a holder that may write the protected data. */
static inline void cn_section(uint32_t iters, bool yield)
{
	if (cn_shared)
		cn_prot_write(iters);
	else
		bench_work_iters(iters);
	if (yield)
		sched_yield();
}

/* The section of an rwlock reader: it only reads. */
static inline void cn_section_rd(uint32_t iters, bool yield)
{
	if (cn_shared)
		cn_prot_read(iters);
	else
		bench_work_iters(iters);
	if (yield)
		sched_yield();
}

/* cond at n threads: n/2 producers and n/2 consumers; at 1, one of each. */
static inline int cn_cond_threads(int n)
{
	return n < 2 ? 2 : n & ~1;
}

/* ------------------------------------------------------------- one run */

/* Start pt->threads threads fn(&th[i]) at a barrier, let them run for
 * pt->dur_ns, raise the stop flag (then call stopfn, which wakes threads
 * that may sleep on a condition) and join. Returns the threads' results,
 * or NULL after printing why. */
static struct cn_thread *cn_run(const struct cn_point *pt, struct cn_common *c, void *shared,
				void *(*fn)(void *), void (*stopfn)(void *))
{
	int n = pt->threads;
	struct cn_thread *th = aligned_alloc(BENCH_CACHELINE, sizeof(*th) * (size_t)n);
	pthread_t *tids = calloc((size_t)n, sizeof(*tids));
	if (!th || !tids) {
		free(th);
		free(tids);
		bench_fail("malloc", ENOMEM);
		return NULL;
	}
	memset(th, 0, sizeof(*th) * (size_t)n);
	static const uint32_t cs_ns[CN_NCS] = {0, 100, 1000, 0};
	c->iters = cs_ns[pt->cs] ? cn_iters(cs_ns[pt->cs]) : 0;
	c->yield = pt->cs == CS_YIELD;
	c->out_iters = bench_opt.cn_outside_ns > 0 ? bench_iters(bench_opt.cn_outside_ns) : 0;
	c->stop = 0;
	pthread_barrier_init(&c->start, NULL, (unsigned)n + 1);
	for (int i = 0; i < n; i++)
		th[i] = (struct cn_thread){.shared = shared,
					   .index = i,
					   .seed = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1)};
	if (bench_spawn(tids, n, fn, th, sizeof(*th)))
		exit(2); /* the threads already started wait at the barrier forever */
	pthread_barrier_wait(&c->start);
	uint64_t t0 = bench_now_ns();
	bench_sleep_ns(pt->dur_ns);
	__atomic_store_n(&c->stop, 1, __ATOMIC_RELAXED);
	uint64_t t1 = bench_now_ns();
	if (stopfn)
		stopfn(shared);
	bench_join(tids, n);
	free(tids);
	c->elapsed_ns = t1 - t0;
	return th;
}

/* The p99 of a histogram in microseconds (0 without samples). */
static double cn_p99_us(const uint64_t *hist)
{
	uint64_t total = 0, acc = 0;
	for (int b = 0; b < CN_HBUCKETS; b++)
		total += hist[b];
	uint64_t want = total - total / 100; /* the sample at rank 99% */
	for (int b = 0; b < CN_HBUCKETS && total; b++) {
		acc += hist[b];
		if (acc >= want)
			return cn_bucket_mid((unsigned)b) / cn_ticks_per_ns / 1e3;
	}
	return 0;
}

static void cn_result(const struct cn_point *pt, const struct cn_common *c,
		      const struct cn_thread *th, int n, struct cn_result *r)
{
	(void)pt;
	uint64_t items = 0, ops = 0, omin = UINT64_MAX, omax = 0;
	static uint64_t hist[CN_HBUCKETS];
	memset(hist, 0, sizeof(hist));
	for (int i = 0; i < n; i++) {
		items += th[i].items;
		ops += th[i].ops;
		omin = th[i].ops < omin ? th[i].ops : omin;
		omax = th[i].ops > omax ? th[i].ops : omax;
		for (int b = 0; b < CN_HBUCKETS; b++)
			hist[b] += th[i].hist[b];
	}
	double mean = (double)ops / n;
	r->ops_s = (double)items / ((double)c->elapsed_ns / 1e9);
	r->share_min = mean > 0 ? (double)omin / mean : 0;
	r->share_max = mean > 0 ? (double)omax / mean : 0;
	r->p99_us = cn_p99_us(hist);
	/* Most acquisitions under contention are a running thread re-taking
	 * the lock at once, so the merged p99 can hide the threads that wait
	 * long: the worst thread's own p99 shows them (a thread that never got
	 * the lock has no sample; share-min shows it). */
	r->worst_us = 0;
	for (int i = 0; i < n; i++) {
		uint64_t h[CN_HBUCKETS];
		for (int b = 0; b < CN_HBUCKETS; b++)
			h[b] = th[i].hist[b];
		double p = cn_p99_us(h);
		r->worst_us = p > r->worst_us ? p : r->worst_us;
	}
}

static void cn_free(struct cn_common *c, struct cn_thread *th)
{
	pthread_barrier_destroy(&c->start);
	free(th);
}

/* ------------------------------------------------------------- implementations */

#define IMPL	      glibc
#define IMPL_HAS_RW   1
#define IMPL_HAS_SEM  1
#define IMPL_HAS_COND 1
#include "bench/contention_tmpl.h"

#define IMPL	      ursa
#define IMPL_HAS_RW   1
#define IMPL_HAS_SEM  1
#define IMPL_HAS_COND 1
#include "bench/contention_tmpl.h"

#ifdef HAVE_NSYNC
#define IMPL	      nsync
#define IMPL_HAS_RW   1
#define IMPL_HAS_SEM  0
#define IMPL_HAS_COND 1
#include "bench/contention_tmpl.h"
#endif

#ifdef HAVE_CK
#define IMPL	      ck
#define IMPL_HAS_RW   1
#define IMPL_HAS_SEM  0
#define IMPL_HAS_COND 0
#include "bench/contention_tmpl.h"
#endif

#ifdef HAVE_ABSL
#define IMPL	      absl
#define IMPL_HAS_RW   1
#define IMPL_HAS_SEM  0
#define IMPL_HAS_COND 1
#include "bench/contention_tmpl.h"
#endif

struct cn_impl {
	const char *name;  /* CSV impl column */
	const char *label; /* table column ("ck*": spins) */
	int (*measure)(const struct cn_point *, struct cn_result *);
	unsigned workloads; /* bit w: has workload w */
};

static const struct cn_impl cn_impls[] = {
    {"glibc", "glibc", cn_glibc_measure, cn_glibc_workloads},
    {"ursa", "ursa", cn_ursa_measure, cn_ursa_workloads},
#ifdef HAVE_NSYNC
    {"nsync", "nsync", cn_nsync_measure, cn_nsync_workloads},
#endif
#ifdef HAVE_CK
    {"ck", "ck*", cn_ck_measure, cn_ck_workloads},
#endif
#ifdef HAVE_ABSL
    {"absl", "absl", cn_absl_measure, cn_absl_workloads},
#endif
};
#define CN_NIMPLS ((int)(sizeof(cn_impls) / sizeof(cn_impls[0])))

/* ------------------------------------------------------------- the runner */

/* Medians of every point, kept for the plots and the summary. */
struct cn_cell {
	bool have;
	double ops, ratio, rmin, rmax, share_min, share_max, p99_us, worst_us;
};
static struct cn_cell cn_cells[CN_NWORK][CN_NCS][CN_MAX_TPTS][CN_MAX_IMPLS];
static int cn_tpts[CN_MAX_TPTS], cn_ntpts;
static bool cn_tty; /* progress rewritten in place on a terminal */

static bool cn_in_list(const char *list, const char *name)
{
	if (!list)
		return true;
	size_t n = strlen(name);
	for (const char *p = list; *p;) {
		const char *e = strchr(p, ',');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		if (len == n && !strncmp(p, name, n))
			return true;
		if (!e)
			break;
		p = e + 1;
	}
	return false;
}

static const char *cn_fmt_ops(char *buf, size_t len, double v)
{
	if (v >= 1e6)
		snprintf(buf, len, "%.2fM", v / 1e6);
	else if (v >= 1e3)
		snprintf(buf, len, "%.1fk", v / 1e3);
	else
		snprintf(buf, len, "%.0f", v);
	return buf;
}

static const char *cn_fmt_us(char *buf, size_t len, double us)
{
	if (us >= 1000)
		snprintf(buf, len, "%.0fms", us / 1000);
	else if (us >= 100)
		snprintf(buf, len, "%.0fus", us);
	else if (us >= 1)
		snprintf(buf, len, "%.1fus", us);
	else
		snprintf(buf, len, "%.2fus", us);
	return buf;
}

#define CN_COLW 19

static void cn_header(int w)
{
	printf("\n== contention %s: %s\n", cn_wname[w], cn_wwhat[w]);
	printf("%-6s %4s %*s", "cs", "thr", 16, "glibc ops/s");
	for (int i = 1; i < CN_NIMPLS; i++)
		printf(" %*s", CN_COLW, cn_impls[i].label);
	printf("\n");
}

static void cn_footer(int w)
{
	printf("   ratio = ops/s / glibc's in the same round: median [min..max] over the rounds; "
	       "higher is better\n"
	       "   second line, every implementation: least-served thread's share / mean "
	       "(1.00 = equal), p99 wait to acquire: all samples / the worst thread's\n");
	for (int i = 0; i < CN_NIMPLS; i++) {
		if (!strcmp(cn_impls[i].name, "ck") && (cn_impls[i].workloads & (1u << w)))
			printf("   * ck: ck_spinlock (fas) / ck_rwlock: SPIN, never sleep "
			       "(Concurrency Kit has no sleeping lock)\n");
		if (!(cn_impls[i].workloads & (1u << w)))
			printf("   n/a %s: no %s\n", cn_impls[i].name,
			       w == CN_SEM ? "counting semaphore" : w == CN_COND ? "condition variable"
										  : "rwlock");
	}
	if (w == CN_COND)
		printf("   threads = producers + consumers (half each; 1 runs one of each); "
		       "ops = items through the queue; wait includes the condvar waits\n");
}

static void cn_csv(FILE *csv, const char *impl, int threads, int w, int cs, const char *m,
		   double v, const char *unit)
{
	if (csv)
		fprintf(csv, "contention,%s,%d,%s:%s:%s,%.6g,%s\n", impl, threads, cn_wname[w],
			cn_csname[cs], m, v, unit);
}

static int cn_point_run(int w, int cs, int ti, int rounds, double dur_s, FILE *csv)
{
	static struct cn_result res[CN_MAX_ROUNDS][CN_MAX_IMPLS];
	int idx[CN_MAX_IMPLS], n = 0;
	for (int i = 0; i < CN_NIMPLS; i++)
		if (cn_impls[i].workloads & (1u << w))
			idx[n++] = i;
	int threads = cn_tpts[ti];
	struct cn_point pt = {w, cs, threads, (uint64_t)(dur_s * 0.2 * 1e9)};

	/* Warm-up: one short run of each, figures discarded. */
	if (!cn_tty)
		fprintf(stderr, "ursa-bench: [contention] %s %s threads=%d\n", cn_wname[w],
			cn_csname[cs], threads);
	for (int k = 0; k < n; k++) {
		struct cn_result r;
		if (cn_tty)
			fprintf(stderr, "\r\033[K[contention] %s %s threads=%d %s warm-up",
				cn_wname[w], cn_csname[cs], threads, cn_impls[idx[k]].name);
		if (cn_impls[idx[k]].measure(&pt, &r))
			return -1;
	}
	pt.dur_ns = (uint64_t)(dur_s * 1e9);
	for (int r = 0; r < rounds; r++) {
		for (int k = 0; k < n; k++) {
			int j = r % 2 ? n - 1 - k : k;
			if (cn_tty)
				fprintf(stderr,
					"\r\033[K[contention] %s %s threads=%d %s round %d/%d",
					cn_wname[w], cn_csname[cs], threads, cn_impls[idx[j]].name,
					r + 1, rounds);
			if (cn_impls[idx[j]].measure(&pt, &res[r][idx[j]]))
				return -1;
		}
	}
	if (cn_tty)
		fprintf(stderr, "\r\033[K");

	double v[CN_MAX_ROUNDS];
	for (int k = 0; k < n; k++) {
		int i = idx[k];
		struct cn_cell *c = &cn_cells[w][cs][ti][i];
		c->have = true;
		for (int r = 0; r < rounds; r++)
			v[r] = res[r][i].ops_s;
		c->ops = bench_median(v, rounds);
		c->rmin = INFINITY;
		c->rmax = 0;
		for (int r = 0; r < rounds; r++) {
			double base = res[r][0].ops_s;
			v[r] = base > 0 ? res[r][i].ops_s / base : 0;
			c->rmin = v[r] < c->rmin ? v[r] : c->rmin;
			c->rmax = v[r] > c->rmax ? v[r] : c->rmax;
		}
		c->ratio = bench_median(v, rounds);
		for (int r = 0; r < rounds; r++)
			v[r] = res[r][i].share_min;
		c->share_min = bench_median(v, rounds);
		for (int r = 0; r < rounds; r++)
			v[r] = res[r][i].share_max;
		c->share_max = bench_median(v, rounds);
		for (int r = 0; r < rounds; r++)
			v[r] = res[r][i].p99_us;
		c->p99_us = bench_median(v, rounds);
		for (int r = 0; r < rounds; r++)
			v[r] = res[r][i].worst_us;
		c->worst_us = bench_median(v, rounds);

		const char *nm = cn_impls[i].name;
		cn_csv(csv, nm, threads, w, cs, "ops", c->ops, "ops/s");
		if (i > 0) {
			cn_csv(csv, nm, threads, w, cs, "ratio", c->ratio, "x");
			cn_csv(csv, nm, threads, w, cs, "ratio-min", c->rmin, "x");
			cn_csv(csv, nm, threads, w, cs, "ratio-max", c->rmax, "x");
		}
		cn_csv(csv, nm, threads, w, cs, "share-min", c->share_min, "x");
		cn_csv(csv, nm, threads, w, cs, "share-max", c->share_max, "x");
		cn_csv(csv, nm, threads, w, cs, "p99-wait", c->p99_us, "us");
		cn_csv(csv, nm, threads, w, cs, "p99-wait-worst", c->worst_us, "us");
	}
	if (csv)
		fflush(csv);

	/* Two table lines: throughput, then fairness. */
	char b1[32], b2[32], b3[32], cell[64];
	const struct cn_cell *row = cn_cells[w][cs][ti];
	printf("%-6s %4d %*s", cn_csname[cs], threads, 16, cn_fmt_ops(b1, sizeof(b1), row[0].ops));
	for (int i = 1; i < CN_NIMPLS; i++) {
		if (!row[i].have)
			snprintf(cell, sizeof(cell), "n/a");
		else
			snprintf(cell, sizeof(cell), "%.2f [%.2f..%.2f]", row[i].ratio, row[i].rmin,
				 row[i].rmax);
		printf(" %*s", CN_COLW, cell);
	}
	printf("\n%-6s %4s", "", "");
	for (int i = 0; i < CN_NIMPLS; i++) {
		if (!row[i].have)
			snprintf(cell, sizeof(cell), "-");
		else
			snprintf(cell, sizeof(cell), "%.2f %s/%s", row[i].share_min,
				 cn_fmt_us(b2, sizeof(b2), row[i].p99_us),
				 cn_fmt_us(b3, sizeof(b3), row[i].worst_us));
		printf(" %*s", i == 0 ? 16 : CN_COLW, cell);
	}
	printf("\n");
	fflush(stdout);
	return 0;
}

/* One PNG per workload next to the CSV: throughput against threads, a line
 * per implementation, a panel per critical section. The gnuplot script,
 * with the data inline, is kept beside it (re-run: gnuplot FILE.gp). */
static void cn_plot(const char *csv_path, int w)
{
	char base[4096], gp[4200], png[4200];
	snprintf(base, sizeof(base), "%s", csv_path);
	size_t bl = strlen(base);
	if (bl > 4 && !strcmp(base + bl - 4, ".csv"))
		base[bl - 4] = 0;
	snprintf(gp, sizeof(gp), "%s-%s.gp", base, cn_wname[w]);
	snprintf(png, sizeof(png), "%s-%s.png", base, cn_wname[w]);
	FILE *f = fopen(gp, "w");
	if (!f) {
		fprintf(stderr, "ursa-bench: %s: %s\n", gp, strerror(errno));
		return;
	}
	const char *png_name = strrchr(png, '/') ? strrchr(png, '/') + 1 : png;
	fprintf(f, "# ursa-bench contention %s: ops/s against threads (generated)\n", cn_wname[w]);
	fprintf(f, "set terminal pngcairo size 1400,1000 noenhanced font ',10'\n");
	fprintf(f, "set output '%s'\n", png_name);
	fprintf(f, "set multiplot layout 2,2 title 'contention %s: %s'\n", cn_wname[w],
		cn_wwhat[w]);
	fprintf(f, "set logscale x 2\nset logscale y\nset grid\nset key top right\n"
		   "set xlabel 'threads'\nset ylabel 'ops/s'\nset format y '%%.0s%%c'\n");
	for (int cs = 0; cs < CN_NCS; cs++) {
		bool any = false;
		for (int ti = 0; ti < cn_ntpts; ti++)
			any |= cn_cells[w][cs][ti][0].have;
		if (!any)
			continue;
		for (int i = 0; i < CN_NIMPLS; i++) {
			fprintf(f, "$d%d_%d << EOD\n", cs, i);
			for (int ti = 0; ti < cn_ntpts; ti++)
				if (cn_cells[w][cs][ti][i].have)
					fprintf(f, "%d %.6g\n", cn_tpts[ti],
						cn_cells[w][cs][ti][i].ops);
			fprintf(f, "EOD\n");
		}
		fprintf(f, "set title 'critical section: %s'\nplot", cn_csname[cs]);
		bool first = true;
		for (int i = 0; i < CN_NIMPLS; i++) {
			if (!(cn_impls[i].workloads & (1u << w)))
				continue;
			static const char *const color[] = {"#000000", "#d62728", "#1f77b4",
							    "#ff7f0e", "#2ca02c", "#9467bd"};
			fprintf(f,
				"%s $d%d_%d using 1:2 with linespoints lw 2 lc rgb '%s' title '%s%s'",
				first ? "" : ",", cs, i, color[i % 6], cn_impls[i].name,
				strcmp(cn_impls[i].name, "ck") ? "" : " (spins)");
			first = false;
		}
		fprintf(f, "\n");
	}
	fprintf(f, "unset multiplot\n");
	fclose(f);

	/* Run the gnuplot configure found (URSA_GNUPLOT, config.h) in the
	 * script's directory, so the PNG lands beside it. */
	char cmd[9000], dir[4200];
	snprintf(dir, sizeof(dir), "%s", gp);
	char *slash = strrchr(dir, '/');
	if (slash)
		*slash = 0;
	else
		snprintf(dir, sizeof(dir), ".");
	snprintf(cmd, sizeof(cmd), "cd '%s' && '%s' '%s' 2>&1", dir, URSA_GNUPLOT,
		 strrchr(gp, '/') ? strrchr(gp, '/') + 1 : gp);
	int rc = system(cmd);
	if (rc != 0)
		fprintf(stderr, "ursa-bench: gnuplot failed (%d) on %s; the script is kept\n", rc,
			gp);
	else
		printf("   plot: %s (script %s)\n", png, gp);
}

/* Every name in list (comma-separated) must be one of names[0..n-1]. */
static bool cn_list_ok(const char *opt, const char *list, const char *const *names, int n)
{
	for (const char *p = list; p && *p;) {
		const char *e = strchr(p, ',');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		bool ok = false;
		for (int i = 0; i < n; i++)
			ok |= strlen(names[i]) == len && !strncmp(p, names[i], len);
		if (!ok) {
			fprintf(stderr, "ursa-bench: %s: unknown name '%.*s' (known:", opt, (int)len, p);
			for (int i = 0; i < n; i++)
				fprintf(stderr, " %s", names[i]);
			fprintf(stderr, ")\n");
			return false;
		}
		if (!e)
			break;
		p = e + 1;
	}
	return true;
}

static int cn_run_all(const struct bench_scenario *s, FILE *csv, const char *csv_path)
{
	(void)s;
	if (!cn_list_ok("--workloads", bench_opt.cn_workloads, cn_wname, CN_NWORK) ||
	    !cn_list_ok("--sections", bench_opt.cn_sections, cn_csname, CN_NCS))
		return -1;
	bool q = bench_opt.quick;
	int rounds = bench_opt.reps_set ? bench_opt.reps : (q ? 3 : 5);
	double dur = bench_opt.duration_set ? bench_opt.duration_s : (q ? 0.05 : 0.3);
	int top = bench_opt.threads_set ? bench_opt.max_threads : 32;
	if (rounds > CN_MAX_ROUNDS)
		rounds = CN_MAX_ROUNDS;

	cn_ntpts = 0;
	for (int t = 1; t < top && cn_ntpts < CN_MAX_TPTS - 1; t *= 2)
		cn_tpts[cn_ntpts++] = t;
	cn_tpts[cn_ntpts++] = top;
	cn_tty = isatty(STDERR_FILENO);
	cn_calibrate_ts();
	cn_work_init();
#ifdef HAVE_ABSL
	ursa_bench_absl_setup();
#endif

	double la[3] = {0};
	FILE *lf = fopen("/proc/loadavg", "r");
	if (lf) {
		if (fscanf(lf, "%lf %lf %lf", &la[0], &la[1], &la[2]) != 3)
			la[0] = la[1] = la[2] = 0;
		fclose(lf);
	}
	printf("\n== contention: %d rounds per point (order reversed every other round), %.2f s "
	       "per run, threads 1..%d, every 16th acquisition timed; load average %.2f %.2f "
	       "%.2f\n",
	       rounds, dur, top, la[0], la[1], la[2]);
	if (cn_shared)
		printf("   the sections' work: read-modify-writes of %d cache lines of protected data "
		       "(--work shared; readers only read)\n",
		       CN_PROT_LINES);
	if (bench_opt.cn_outside_ns > 0)
		printf("   every thread does %.0f ns of busy work outside the lock after every "
		       "operation (--outside)\n",
		       bench_opt.cn_outside_ns);
	if (csv) {
		fprintf(csv, "contention,-,0,load-average-1min,%.2f,load\n", la[0]);
		fprintf(csv, "contention,-,0,outside-ns,%.0f,ns\n", bench_opt.cn_outside_ns);
		fprintf(csv, "contention,-,0,work-shared,%d,flag\n", cn_shared);
		fprintf(csv, "contention,-,0,calibration-slow-share,%.2f,x\n", bench_speed_slow);
	}

	for (int w = 0; w < CN_NWORK; w++) {
		if (!cn_in_list(bench_opt.cn_workloads, cn_wname[w]))
			continue;
		cn_header(w);
		for (int cs = 0; cs < CN_NCS; cs++) {
			if (!cn_in_list(bench_opt.cn_sections, cn_csname[cs]))
				continue;
			for (int ti = 0; ti < cn_ntpts; ti++)
				if (cn_point_run(w, cs, ti, rounds, dur, csv))
					return -1;
		}
		cn_footer(w);
		if (csv_path)
			cn_plot(csv_path, w);
	}

	/* Summary: per workload and implementation, the geometric mean of the
	 * median ratios over the points, and the lowest point. */
	printf("\n== contention summary: geometric mean of the median ratios to glibc over each "
	       "workload's points [lowest point]\n%-6s", "");
	for (int i = 1; i < CN_NIMPLS; i++)
		printf(" %*s", CN_COLW, cn_impls[i].label);
	printf("\n");
	for (int w = 0; w < CN_NWORK; w++) {
		if (!cn_in_list(bench_opt.cn_workloads, cn_wname[w]))
			continue;
		printf("%-6s", cn_wname[w]);
		for (int i = 1; i < CN_NIMPLS; i++) {
			double lg = 0, lo = INFINITY;
			int cnt = 0;
			for (int cs = 0; cs < CN_NCS; cs++)
				for (int ti = 0; ti < cn_ntpts; ti++) {
					const struct cn_cell *c = &cn_cells[w][cs][ti][i];
					if (!c->have || c->ratio <= 0)
						continue;
					lg += log(c->ratio);
					lo = c->ratio < lo ? c->ratio : lo;
					cnt++;
				}
			char cell[48];
			if (cnt)
				snprintf(cell, sizeof(cell), "%.2f [%.2f]", exp(lg / cnt), lo);
			else
				snprintf(cell, sizeof(cell), "n/a");
			printf(" %*s", CN_COLW, cell);
		}
		printf("\n");
	}
	fflush(stdout);
	return 0;
}

void bench_contention_register(struct bench_scenario *s)
{
	*s = (struct bench_scenario){
	    .name = "contention",
	    .what = "matrix: mutex, rwlock 95/5 and 50/50, sem, condvar x sections x threads "
		    "(only when named)",
	    .axis = "threads",
	    .run = cn_run_all,
	    .opt_in = true,
	};
}
