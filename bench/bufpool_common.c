/* SPDX-License-Identifier: MIT */
/*
 * bench/bufpool_common.c — the page format and checksum, the zipf chooser,
 * statistics and the engine timeline, shared by every engine.
 */
#include "bench/bufpool.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

void bp_die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	exit(2);
}

static char *arena_base;
static size_t arena_size, arena_used;
static bool arena_on;

void bp_arena_create(size_t size)
{
	void *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE,
		       -1, 0);
	if (m == MAP_FAILED)
		bp_die("bufpool: mmap of a %zu-byte shared arena: %s\n", size, strerror(errno));
	arena_base = m;
	arena_size = size;
}

void bp_arena_begin(void)
{
	arena_used = 0;
	arena_on = arena_base != NULL;
}

void bp_arena_end(void)
{
	arena_on = false;
}

bool bp_shared(void)
{
	return arena_on;
}

void bp_free(void *p)
{
	if (arena_base && (char *)p >= arena_base && (char *)p < arena_base + arena_size)
		return;
	free(p);
}

int bp_fork_workers(int n, void (*fn)(void *), void *arg, size_t stride, int *pids)
{
	fflush(NULL);
	for (int i = 0; i < n; i++) {
		pid_t p = fork();
		if (p < 0) {
			fprintf(stderr, "bufpool: fork: %s\n", strerror(errno));
			return i;
		}
		if (p == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			fn((char *)arg + (size_t)i * stride);
			_exit(0);
		}
		pids[i] = p;
	}
	return n;
}

int bp_wait_workers(int n, const int *pids)
{
	int bad = 0;
	for (int i = 0; i < n; i++) {
		int st;
		while (waitpid(pids[i], &st, 0) < 0)
			if (errno != EINTR) {
				st = -1;
				break;
			}
		if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st))
			bad++;
	}
	return bad;
}

void *bp_alloc(size_t align, size_t size)
{
	if (arena_on) {
		size_t at = (arena_used + align - 1) / align * align;
		if (at + size > arena_size)
			bp_die("bufpool: the shared arena (%zu bytes) is full\n", arena_size);
		arena_used = at + size;
		memset(arena_base + at, 0, size);
		return arena_base + at;
	}
	size = (size + align - 1) / align * align; /* aligned_alloc wants a multiple */
	void *p = aligned_alloc(align, size ? size : align);
	if (!p)
		bp_die("bufpool: out of memory (%zu bytes)\n", size);
	memset(p, 0, size);
	return p;
}

/* ---- pages ------------------------------------------------------------- */

/*
 * The checksum: four FNV-style lanes over the page's 64-bit words (the
 * checksum word itself counted as zero), then mixed. Each step
 * (h ^ w) * odd is a bijection of h, so changing any single word always
 * changes the result; several changes collide with probability ~2^-64.
 * Four independent lanes keep it at about a nanosecond per 64 bytes.
 */
uint64_t bp_page_checksum(const void *page)
{
	const uint64_t *w = page;
	const uint64_t k = 0x100000001b3ull; /* FNV-1a's 64-bit prime */
	uint64_t h0 = 0xcbf29ce484222325ull, h1 = h0 ^ 1, h2 = h0 ^ 2, h3 = h0 ^ 3;
	for (unsigned i = 0; i < BP_PAGE_WORDS; i += 4) {
		/* word 3 is the checksum itself: counted as zero */
		uint64_t w0 = w[i], w1 = w[i + 1], w2 = w[i + 2], w3 = i ? w[i + 3] : 0;
		h0 = (h0 ^ w0) * k;
		h1 = (h1 ^ w1) * k;
		h2 = (h2 ^ w2) * k;
		h3 = (h3 ^ w3) * k;
	}
	return bp_mix64(h0 ^ bp_mix64(h1 ^ bp_mix64(h2 ^ bp_mix64(h3))));
}

_Static_assert(offsetof(struct bp_page_hdr, checksum) == 24,
	       "the checksum is the 4th word: bp_page_checksum skips it");

static void row_fill(unsigned char *row, uint64_t page_no, uint64_t counter)
{
	uint64_t *r = (uint64_t *)(void *)row;
	for (unsigned j = 0; j < BP_ROW_SIZE / 8; j++)
		r[j] = bp_mix64(page_no * 0x9E3779B97F4A7C15ull + counter * 131 + j);
}

static unsigned char *page_row(void *page, unsigned i)
{
	return (unsigned char *)page + sizeof(struct bp_page_hdr) + (size_t)i * BP_ROW_SIZE;
}

void bp_page_init(void *page, uint64_t page_no)
{
	memset(page, 0, BP_PAGE_SIZE);
	struct bp_page_hdr *h = page;
	h->magic = BP_PAGE_MAGIC;
	h->page_no = page_no;
	h->counter = 0;
	for (unsigned i = 0; i < BP_ROWS; i++)
		row_fill(page_row(page, i), page_no, 0);
	h->checksum = bp_page_checksum(page);
}

void bp_page_modify(void *page)
{
	struct bp_page_hdr *h = page;
	h->counter++;
	row_fill(page_row(page, (unsigned)(h->counter % BP_ROWS)), h->page_no, h->counter);
	h->checksum = bp_page_checksum(page);
}

int bp_page_verify(const void *page, uint64_t page_no)
{
	const struct bp_page_hdr *h = page;
	if (h->magic != BP_PAGE_MAGIC || h->page_no != page_no)
		return -1;
	return h->checksum == bp_page_checksum(page) ? 0 : -1;
}

/* ---- zipf ----------------------------------------------------------------- */

static double zeta(uint64_t n, double theta)
{
	double z = 0;
	for (uint64_t i = 1; i <= n; i++)
		z += 1.0 / pow((double)i, theta);
	return z;
}

static uint64_t gcd(uint64_t a, uint64_t b)
{
	while (b) {
		uint64_t t = a % b;
		a = b;
		b = t;
	}
	return a;
}

/*
 * Gray et al., "Quickly generating billion-record synthetic databases"
 * (SIGMOD 1994), as YCSB's ZipfianGenerator uses it: rank 0 is the hottest.
 * Ranks are then scattered over the file by a multiplication modulo npages
 * with a stride coprime to it (a bijection), so hot pages are spread over
 * the file and over the mapping partitions instead of being its first
 * pages.
 */
void bp_zipf_setup(struct bp_config *c)
{
	uint64_t n = c->npages;
	c->zeta_n = zeta(n, c->theta);
	c->zeta_2 = zeta(2, c->theta);
	c->alpha = 1.0 / (1.0 - c->theta);
	c->eta = (1.0 - pow(2.0 / (double)n, 1.0 - c->theta)) / (1.0 - c->zeta_2 / c->zeta_n);
	c->half_pow_theta = 1.0 + pow(0.5, c->theta);
	uint64_t s = (uint64_t)((double)n * 0.6180339887) | 1;
	while (gcd(s, n) != 1)
		s += 2;
	c->stride = s % n ? s % n : 1;
}

uint64_t bp_zipf_page(const struct bp_config *c, uint64_t *rng)
{
	double u = bp_rand01(rng), uz = u * c->zeta_n;
	uint64_t rank;
	if (uz < 1.0)
		rank = 0;
	else if (uz < c->half_pow_theta)
		rank = 1;
	else
		rank = (uint64_t)((double)c->npages * pow(c->eta * u - c->eta + 1.0, c->alpha));
	if (rank >= c->npages)
		rank = c->npages - 1;
	return (uint64_t)(((unsigned __int128)rank * c->stride) % c->npages);
}

/* ---- statistics and the timeline ---------------------------------------------- */

void bp_stats_add(struct bp_stats *into, const struct bp_stats *s)
{
	into->commits += s->commits;
	into->writes += s->writes;
	into->win_commits += s->win_commits;
	into->accesses += s->accesses;
	into->misses += s->misses;
	into->writebacks += s->writebacks;
	into->syscalls += s->syscalls;
	into->lock_waits += s->lock_waits;
	into->io_waits += s->io_waits;
	into->bad_pages += s->bad_pages;
	into->prefetches += s->prefetches;
	into->lock_timeouts += s->lock_timeouts;
	for (unsigned i = 0; i < BP_HIST_BUCKETS; i++)
		into->hist[i] += s->hist[i];
}

static double hist_value(unsigned idx)
{
	if (idx < (1u << BP_HIST_SUB))
		return idx;
	unsigned e = (idx >> BP_HIST_SUB) + BP_HIST_SUB - 1;
	unsigned sub = idx & ((1u << BP_HIST_SUB) - 1);
	double width = ldexp(1.0, (int)(e - BP_HIST_SUB));
	return ((1u << BP_HIST_SUB) + sub) * width + width / 2; /* midpoint */
}

double bp_hist_quantile(const struct bp_stats *s, double q)
{
	uint64_t total = 0;
	for (unsigned i = 0; i < BP_HIST_BUCKETS; i++)
		total += s->hist[i];
	if (!total)
		return 0;
	uint64_t want = (uint64_t)ceil(q * (double)total), seen = 0;
	if (want == 0)
		want = 1;
	for (unsigned i = 0; i < BP_HIST_BUCKETS; i++) {
		seen += s->hist[i];
		if (seen >= want)
			return hist_value(i);
	}
	return hist_value(BP_HIST_BUCKETS - 1);
}

static void sleep_until(uint64_t t)
{
	for (uint64_t now; (now = bp_now_ns()) < t;) {
		uint64_t d = t - now;
		struct timespec ts = {(time_t)(d / 1000000000u), (long)(d % 1000000000u)};
		nanosleep(&ts, NULL);
	}
}

/* Sleep until t, or until someone else (a watchdog) stopped the run. */
static bool sleep_until_or_stop(struct bp_run *r, uint64_t t)
{
	for (uint64_t now; (now = bp_now_ns()) < t;) {
		if (bp_phase(r) == BP_STOP)
			return false;
		uint64_t d = t - now < 50000000u ? t - now : 50000000u;
		sleep_until(now + d);
	}
	return bp_phase(r) != BP_STOP;
}

void bp_timeline(struct bp_run *r)
{
	const struct bp_config *c = r->cfg;
	uint64_t t = bp_now_ns();
	bool tty = isatty(2);
	r->t_measure = 0;
	if (sleep_until_or_stop(r, t + (uint64_t)(c->warmup * 1e9))) {
		r->t_measure = bp_now_ns();
		__atomic_store_n(&r->phase, BP_MEASURE, __ATOMIC_RELAXED);
		uint64_t end = r->t_measure + (uint64_t)(c->seconds * 1e9);
		/* A progress line on stderr, once a second, on a terminal. */
		for (uint64_t now; (now = bp_now_ns()) < end;) {
			uint64_t next = now + 1000000000u < end ? now + 1000000000u : end;
			if (!sleep_until_or_stop(r, next))
				break;
			if (tty)
				fprintf(stderr, "\r  %.0f s left   ", (double)(end - next) / 1e9);
		}
		if (tty)
			fprintf(stderr, "\r                \r");
	}
	r->t_stop = bp_now_ns();
	if (!r->t_measure)
		r->t_measure = r->t_stop; /* stopped during the warm-up */
	__atomic_store_n(&r->phase, BP_STOP, __ATOMIC_RELAXED);
}
