/* SPDX-License-Identifier: MIT */
/*
 * bench/ursa-commit.c — group commit, the directed-wakeup case.
 *
 * N backend processes (forked, over MAP_SHARED memory) commit in a loop. A
 * commit appends a WAL record (64 bytes) under the WAL insert lock, which
 * gives it its LSN, then waits until the WAL is durable up to that LSN.
 * Flushing is PostgreSQL's XLogFlush: a committer that finds the flush free
 * becomes the leader, writes everything inserted so far (pwrite of the WAL
 * buffer's records, then fdatasync of a real file) and wakes every waiter
 * whose LSN is now durable. --walwriter: a dedicated WAL writer process
 * flushes instead and backends only wait. --no-sync leaves out fdatasync
 * (the records go to the page cache): the wait queue's lock and the wakes
 * then set the pace instead of the disk.
 *
 * The engines differ only in how a committer waits and how the flusher
 * wakes it:
 *   sem         PostgreSQL's proclist: waiters linked in shared memory under a
 *               spinlock-like mutex, a process-shared sem_t per backend, one
 *               sem_post per waiter woken
 *   condvar     one process-shared pthread condvar, broadcast after a flush
 *   waitq       ursa_waitq_wake_upto(q, flushed, NULL): the waiters with
 *               LSN <= flushed, a futex wake syscall each
 *   waitq-ring  the same with the flusher's io_uring: one FUTEX_WAKE SQE per
 *               waiter, all in one kernel entry
 *
 * The flush protocol (every engine): flush_busy is a flag taken by
 * compare-and-swap, never waited on. A committer loops: durable >= its LSN:
 * done; flag taken: lead (flush up to the insert position, wake the covered
 * waiters, release the flag, then wake the oldest remaining waiter, if any
 * record is still not durable, so that it retries leadership); otherwise it
 * waits, having re-checked after enqueueing that durable < LSN and the flag
 * is still taken (so either the leader's wakes see it queued, or it sees the
 * flag free and retries). A waiter enqueued before the release is woken by
 * that leader's wakes or by the retry wake (the oldest waiter retries, and
 * any leader flushes every record inserted before it took the flag).
 *
 * Consistency: a committer checks, when its wait returns, that the durable
 * LSN covers its record; at the end of each round the WAL file is read back
 * and must hold every record 1..inserted, each with its LSN, the round's
 * epoch and a valid checksum, and each backend's committed count must match
 * the records it wrote.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <liburing.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <ursa.h>

/* The gnuplot configure found (URSA_GNUPLOT, config.h; plain "gnuplot" from
 * PATH when it found none), quoted for popen's shell. */
#ifndef URSA_GNUPLOT
#define URSA_GNUPLOT "gnuplot"
#endif
#define GNUPLOT_CMD "'" URSA_GNUPLOT "' 2>&1"

#define REC_SIZE 64u
#define WALBUF_RECS 8192u /* WAL buffer: records not yet written, at most one per backend */
#define MAX_PROCS 1024
#define HIST_SUB 4
#define HIST_BUCKETS ((65 - HIST_SUB) << HIST_SUB)
#define CL __attribute__((aligned(64)))

enum engine { E_SEM, E_CONDVAR, E_WAITQ, E_WAITQ_RING, E_N };
static const char *const engine_names[E_N] = {"sem", "condvar", "waitq", "waitq-ring"};

struct rec {
	uint64_t lsn;
	uint32_t epoch;
	uint32_t backend;
	uint64_t seq; /* the backend's commit number */
	uint64_t payload[4];
	uint64_t checksum;
};
_Static_assert(sizeof(struct rec) == REC_SIZE, "record size");

struct backend {
	/* sem engine: the proclist node and the backend's semaphore */
	sem_t sem;
	int32_t next;	  /* proclist link, under list_lock */
	bool queued;	  /* in the list, under list_lock */
	uint64_t wait_lsn; /* under list_lock */
	/* results, written by the backend */
	uint64_t commits;     /* whole round */
	uint64_t win_commits; /* in the measured window */
	uint64_t early;	      /* waits that returned before their LSN was durable */
	uint64_t flushes;     /* flushes it led */
	uint64_t wakes;	      /* waiters it woke as a flusher */
	uint64_t hist[HIST_BUCKETS];
} CL;

struct shm {
	int phase; /* 0 warm-up, 1 measure, 2 stop */
	uint32_t epoch;
	int nprocs;
	bool walwriter;
	enum engine engine;
	int fd;
	pthread_mutex_t insert_lock CL; /* the WAL insert lock */
	uint64_t inserted;		 /* last LSN inserted (records 1..inserted) */
	uint64_t durable CL;		 /* WAL durable up to this LSN */
	int flush_busy CL;		 /* a flusher is at work */
	pthread_mutex_t list_lock CL;	 /* sem: the proclist */
	int32_t head, tail;
	pthread_mutex_t cv_lock CL; /* condvar */
	pthread_cond_t cv;
	ursa_event_t writer_ev CL; /* --walwriter: there is work */
	int writer_done;
	uint64_t writer_flushes, writer_wakes;
	struct rec walbuf[WALBUF_RECS] CL;
	struct backend be[];
	/* then the wait queue (ursa_waitq_size(nprocs)) */
};

static struct shm *S;
static ursa_waitq_t *Q;

static void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	exit(2);
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static uint64_t rec_checksum(const struct rec *r)
{
	const uint64_t *w = (const uint64_t *)(const void *)r;
	uint64_t h = 0x9e3779b97f4a7c15ull;
	for (unsigned i = 0; i < REC_SIZE / 8 - 1; i++)
		h = mix64(h ^ w[i]);
	return h;
}

static unsigned hist_index(uint64_t ns)
{
	if (ns < (1u << HIST_SUB))
		return (unsigned)ns;
	unsigned e = 63u - (unsigned)__builtin_clzll(ns);
	unsigned sub = (unsigned)(ns >> (e - HIST_SUB)) & ((1u << HIST_SUB) - 1);
	return ((e - HIST_SUB + 1) << HIST_SUB) + sub;
}

static double hist_value(unsigned idx)
{
	if (idx < (1u << HIST_SUB))
		return idx;
	unsigned e = (idx >> HIST_SUB) + HIST_SUB - 1;
	unsigned sub = idx & ((1u << HIST_SUB) - 1);
	double width = ldexp(1.0, (int)(e - HIST_SUB));
	return ((1u << HIST_SUB) + sub) * width + width / 2;
}

static double hist_quantile(const uint64_t *h, double q)
{
	uint64_t total = 0, seen = 0;
	for (unsigned i = 0; i < HIST_BUCKETS; i++)
		total += h[i];
	if (!total)
		return 0;
	uint64_t want = (uint64_t)ceil(q * (double)total);
	if (!want)
		want = 1;
	for (unsigned i = 0; i < HIST_BUCKETS; i++)
		if ((seen += h[i]) >= want)
			return hist_value(i);
	return hist_value(HIST_BUCKETS - 1);
}

static uint64_t load(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_SEQ_CST);
}

/* ---- the flusher: write, sync, wake ----------------------------------------- */

static bool no_sync; /* --no-sync: pwrite only */

/* Write records (from, to] from the WAL buffer, then fdatasync. */
static void wal_write(uint64_t from, uint64_t to)
{
	while (from < to) {
		uint64_t first = from + 1; /* LSN of the first record to write */
		unsigned slot = (unsigned)(first % WALBUF_RECS);
		uint64_t n = to - from;
		if (n > WALBUF_RECS - slot)
			n = WALBUF_RECS - slot;
		size_t len = (size_t)n * REC_SIZE;
		ssize_t w = pwrite(S->fd, &S->walbuf[slot], len, (off_t)((first - 1) * REC_SIZE));
		if (w != (ssize_t)len)
			die("ursa-commit: pwrite WAL: %s\n", w < 0 ? strerror(errno) : "short");
		from += n;
	}
	if (!no_sync && fdatasync(S->fd))
		die("ursa-commit: fdatasync: %s\n", strerror(errno));
}

/* sem engine: take the waiters of the proclist with LSN <= upto (all of
 * them up to `max` from the head when upto is 0) and post each. */
static int sem_wake(uint64_t upto, int max)
{
	int32_t woken[MAX_PROCS];
	int n = 0;
	pthread_mutex_lock(&S->list_lock);
	int32_t *link = &S->head, prev = -1;
	while (*link >= 0 && n < max) {
		struct backend *b = &S->be[*link];
		if (upto == 0 || b->wait_lsn <= upto) {
			int32_t i = *link;
			*link = b->next;
			if (S->tail == i)
				S->tail = prev;
			b->queued = false;
			woken[n++] = i;
		} else {
			prev = *link;
			link = &b->next;
		}
	}
	pthread_mutex_unlock(&S->list_lock);
	for (int i = 0; i < n; i++)
		if (sem_post(&S->be[woken[i]].sem))
			die("ursa-commit: sem_post: %s\n", strerror(errno));
	return n;
}

static void ring_reap(struct io_uring *ring)
{
	struct io_uring_cqe *cqe;
	while (io_uring_peek_cqe(ring, &cqe) == 0) {
		struct ursa_op *done;
		if (!ursa_handle_cqe(ring, cqe, &done))
			die("ursa-commit: a CQE that is not ursa's\n");
		io_uring_cqe_seen(ring, cqe);
	}
}

/* Wake every waiter whose LSN <= durable; retry: also the oldest left. */
static int wake_durable(uint64_t durable, bool retry, struct io_uring *ring)
{
	int n = 0;
	switch (S->engine) {
	case E_SEM:
		n = sem_wake(durable, MAX_PROCS);
		if (retry)
			n += sem_wake(0, 1);
		break;
	case E_CONDVAR:
		pthread_mutex_lock(&S->cv_lock);
		pthread_cond_broadcast(&S->cv);
		pthread_mutex_unlock(&S->cv_lock);
		break;
	case E_WAITQ:
	case E_WAITQ_RING: {
		struct io_uring *r = S->engine == E_WAITQ_RING ? ring : NULL;
		n = ursa_waitq_wake_upto(Q, durable, r);
		if (n < 0)
			die("ursa-commit: ursa_waitq_wake_upto: %s\n", strerror(-n));
		if (retry) {
			int m = ursa_waitq_wake(Q, 1, r);
			if (m < 0)
				die("ursa-commit: ursa_waitq_wake: %s\n", strerror(-m));
			n += m;
		}
		if (r)
			ring_reap(r);
		break;
	}
	case E_N:
		break;
	}
	return n;
}

/* Holding flush_busy: flush everything inserted, wake, release. */
static void lead(struct backend *me, struct io_uring *ring)
{
	uint64_t from = load(&S->durable);
	uint64_t to = load(&S->inserted); /* records <= to are complete (release below) */
	if (to > from) {
		wal_write(from, to);
		__atomic_store_n(&S->durable, to, __ATOMIC_SEQ_CST);
		me->flushes++;
	}
	__atomic_store_n(&S->flush_busy, 0, __ATOMIC_SEQ_CST);
	/* After the release: a waiter that enqueued while we held the flag is
	 * queued now; if records remain not durable, one retries leadership. */
	bool retry = !S->walwriter && load(&S->inserted) > to;
	me->wakes += (uint64_t)wake_durable(to, retry, ring);
}

static bool try_lead(void)
{
	int zero = 0;
	return __atomic_compare_exchange_n(&S->flush_busy, &zero, 1, false, __ATOMIC_SEQ_CST,
					   __ATOMIC_SEQ_CST);
}

/* Is there still a reason to sleep? (re-checked after enqueueing) */
static bool must_wait(uint64_t lsn)
{
	return load(&S->durable) < lsn &&
	       (S->walwriter || __atomic_load_n(&S->flush_busy, __ATOMIC_SEQ_CST));
}

/* Wait until woken (durable >= lsn, or asked to retry), or return at once
 * when the re-check says there is no need. Spurious returns are fine. */
static void engine_wait(int id, uint64_t lsn)
{
	struct backend *me = &S->be[id];
	switch (S->engine) {
	case E_SEM:
		pthread_mutex_lock(&S->list_lock);
		me->wait_lsn = lsn;
		me->next = -1;
		me->queued = true;
		if (S->tail >= 0)
			S->be[S->tail].next = id;
		else
			S->head = id;
		S->tail = id;
		pthread_mutex_unlock(&S->list_lock);
		if (!must_wait(lsn)) {
			/* Withdraw; if a waker took us meanwhile, consume its post. */
			pthread_mutex_lock(&S->list_lock);
			bool still = me->queued;
			if (still) {
				int32_t *link = &S->head, prev = -1;
				while (*link != id) {
					prev = *link;
					link = &S->be[*link].next;
				}
				*link = me->next;
				if (S->tail == id)
					S->tail = prev;
				me->queued = false;
			}
			pthread_mutex_unlock(&S->list_lock);
			if (still)
				return;
		}
		while (sem_wait(&me->sem))
			if (errno != EINTR)
				die("ursa-commit: sem_wait: %s\n", strerror(errno));
		return;
	case E_CONDVAR:
		pthread_mutex_lock(&S->cv_lock);
		while (must_wait(lsn))
			pthread_cond_wait(&S->cv, &S->cv_lock);
		pthread_mutex_unlock(&S->cv_lock);
		return;
	case E_WAITQ:
	case E_WAITQ_RING: {
		int rc = ursa_waitq_prepare(Q, (uint32_t)id, lsn);
		if (rc)
			die("ursa-commit: ursa_waitq_prepare: %s\n", strerror(-rc));
		if (!must_wait(lsn)) {
			rc = ursa_waitq_cancel(Q, (uint32_t)id);
			if (rc < 0)
				die("ursa-commit: ursa_waitq_cancel: %s\n", strerror(-rc));
			return;
		}
		rc = ursa_waitq_wait(Q, (uint32_t)id, CLOCK_MONOTONIC, NULL);
		if (rc)
			die("ursa-commit: ursa_waitq_wait: %s\n", strerror(-rc));
		return;
	}
	case E_N:
		return;
	}
}

/* ---- a backend -------------------------------------------------------------- */

static struct io_uring *backend_ring(struct io_uring *ring, int nprocs)
{
	if (S->engine != E_WAITQ_RING)
		return NULL;
	unsigned entries = 8;
	while (entries < 2u * (unsigned)nprocs)
		entries <<= 1;
	int rc = io_uring_queue_init(entries, ring, 0);
	if (rc)
		die("ursa-commit: io_uring_queue_init: %s\n", strerror(-rc));
	return ring;
}

static void backend_main(int id)
{
	struct backend *me = &S->be[id];
	struct io_uring ring_s, *ring = backend_ring(&ring_s, S->nprocs);
	uint64_t seq = 0;
	while (__atomic_load_n(&S->phase, __ATOMIC_RELAXED) != 2) {
		uint64_t t0 = now_ns();
		/* Append the commit record under the WAL insert lock. */
		pthread_mutex_lock(&S->insert_lock);
		uint64_t lsn = S->inserted + 1;
		struct rec *r = &S->walbuf[lsn % WALBUF_RECS];
		*r = (struct rec){.lsn = lsn, .epoch = S->epoch, .backend = (uint32_t)id, .seq = ++seq};
		for (int i = 0; i < 4; i++)
			r->payload[i] = mix64(lsn * 4 + (uint64_t)i);
		r->checksum = rec_checksum(r);
		__atomic_store_n(&S->inserted, lsn, __ATOMIC_SEQ_CST);
		pthread_mutex_unlock(&S->insert_lock);
		if (S->walwriter)
			ursa_event_set(&S->writer_ev);

		/* XLogFlush: wait until durable >= lsn, leading when free. */
		while (load(&S->durable) < lsn) {
			if (!S->walwriter && try_lead())
				lead(me, ring);
			else
				engine_wait(id, lsn);
		}
		if (load(&S->durable) < lsn)
			me->early++;
		me->commits++;
		if (__atomic_load_n(&S->phase, __ATOMIC_RELAXED) == 1) {
			me->win_commits++;
			me->hist[hist_index(now_ns() - t0)]++;
		}
	}
	if (ring)
		io_uring_queue_exit(ring);
}

/* --walwriter: flush whenever there is something to flush. */
static void writer_main(void)
{
	static struct backend wb;
	struct io_uring ring_s, *ring = backend_ring(&ring_s, S->nprocs);
	while (!__atomic_load_n(&S->writer_done, __ATOMIC_SEQ_CST)) {
		if (load(&S->inserted) > load(&S->durable)) {
			__atomic_store_n(&S->flush_busy, 1, __ATOMIC_SEQ_CST);
			lead(&wb, ring);
			continue;
		}
		struct timespec dl;
		clock_gettime(CLOCK_MONOTONIC, &dl);
		dl.tv_nsec += 10000000;
		if (dl.tv_nsec >= 1000000000) {
			dl.tv_sec++;
			dl.tv_nsec -= 1000000000;
		}
		ursa_event_timedwait(&S->writer_ev, CLOCK_MONOTONIC, &dl);
	}
	S->writer_flushes = wb.flushes;
	S->writer_wakes = wb.wakes;
	if (ring)
		io_uring_queue_exit(ring);
}

/* ---- a round ------------------------------------------------------------------ */

struct result {
	bool ran;
	int rounds;
	double secs, commits, win_commits, csw, icsw, cpu_us, flushes, wakes;
	double cps_min, cps_max;
	uint64_t hist[HIST_BUCKETS];
	uint64_t early, lost, bad;
	/* derived */
	double cps, p50_us, p99_us, cs_per_commit, ics_per_commit, cpu_per_commit, batch;
};

static double tv_us(struct timeval a, struct timeval b)
{
	return (double)(b.tv_sec - a.tv_sec) * 1e6 + (double)(b.tv_usec - a.tv_usec);
}

static void sleep_s(double s)
{
	struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Read the WAL file back: records 1..inserted, each valid, of this epoch;
 * count each backend's. */
static void verify(struct result *res, int nprocs)
{
	uint64_t n = S->inserted, *per = calloc((size_t)nprocs, sizeof(*per));
	struct rec *buf = malloc(4096 * sizeof(struct rec));
	if (!per || !buf)
		die("ursa-commit: out of memory\n");
	uint64_t bad = 0;
	for (uint64_t i = 0; i < n; i += 4096) {
		uint64_t k = n - i < 4096 ? n - i : 4096;
		ssize_t r = pread(S->fd, buf, k * REC_SIZE, (off_t)(i * REC_SIZE));
		if (r != (ssize_t)(k * REC_SIZE))
			die("ursa-commit: reading the WAL back: %s\n", r < 0 ? strerror(errno) : "short");
		for (uint64_t j = 0; j < k; j++) {
			const struct rec *x = &buf[j];
			if (x->lsn != i + j + 1 || x->epoch != S->epoch || x->backend >= (uint32_t)nprocs ||
			    x->checksum != rec_checksum(x))
				bad++;
			else
				per[x->backend]++;
		}
	}
	uint64_t lost = 0;
	for (int b = 0; b < nprocs; b++)
		if (per[b] != S->be[b].commits)
			lost += per[b] > S->be[b].commits ? per[b] - S->be[b].commits
							   : S->be[b].commits - per[b];
	if (S->durable != n)
		bad++;
	res->bad += bad;
	res->lost += lost;
	free(per);
	free(buf);
}

static void run_round(enum engine e, int nprocs, bool walwriter, double warmup, double secs,
		      const char *path, struct result *res)
{
	size_t qsz = ursa_waitq_size((uint32_t)nprocs);
	memset(S, 0, sizeof(*S) + (size_t)nprocs * sizeof(struct backend));
	static uint32_t epoch;
	S->epoch = ++epoch;
	S->nprocs = nprocs;
	S->walwriter = walwriter;
	S->engine = e;
	S->head = S->tail = -1;
	pthread_mutexattr_t ma;
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
	pthread_mutex_init(&S->insert_lock, &ma);
	pthread_mutex_init(&S->list_lock, &ma);
	pthread_mutex_init(&S->cv_lock, &ma);
	pthread_mutexattr_destroy(&ma);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED);
	pthread_cond_init(&S->cv, &ca);
	pthread_condattr_destroy(&ca);
	if (ursa_event_init(&S->writer_ev, URSA_SHARED | URSA_EVENT_AUTO_RESET))
		die("ursa-commit: ursa_event_init failed\n");
	for (int i = 0; i < nprocs; i++)
		if (sem_init(&S->be[i].sem, 1, 0))
			die("ursa-commit: sem_init: %s\n", strerror(errno));
	memset(Q, 0, qsz);
	if (ursa_waitq_init(Q, (uint32_t)nprocs, URSA_SHARED))
		die("ursa-commit: ursa_waitq_init failed\n");
	S->fd = open(path, O_RDWR | O_CLOEXEC);
	if (S->fd < 0)
		die("ursa-commit: open %s: %s\n", path, strerror(errno));

	struct rusage ru0, ru1;
	getrusage(RUSAGE_CHILDREN, &ru0);
	pid_t pids[MAX_PROCS + 1];
	int np = 0;
	if (walwriter) {
		pid_t p = fork();
		if (p < 0)
			die("ursa-commit: fork: %s\n", strerror(errno));
		if (p == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			writer_main();
			_exit(0);
		}
		pids[np++] = p;
	}
	for (int i = 0; i < nprocs; i++) {
		pid_t p = fork();
		if (p < 0)
			die("ursa-commit: fork: %s\n", strerror(errno));
		if (p == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			backend_main(i);
			_exit(0);
		}
		pids[np++] = p;
	}
	/* A hung round (a lost wakeup would be one) ends the program, and the
	 * backends with it (PR_SET_PDEATHSIG), instead of hanging. */
	alarm((unsigned)(warmup + secs) + 60);
	sleep_s(warmup);
	uint64_t t0 = now_ns();
	__atomic_store_n(&S->phase, 1, __ATOMIC_SEQ_CST);
	sleep_s(secs);
	uint64_t t1 = now_ns();
	__atomic_store_n(&S->phase, 2, __ATOMIC_SEQ_CST);
	/* Backends finish their last commit and exit; then the writer. */
	int failed = 0;
	for (int i = walwriter; i < np; i++) {
		int st;
		if (waitpid(pids[i], &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
			failed++;
	}
	if (walwriter) {
		__atomic_store_n(&S->writer_done, 1, __ATOMIC_SEQ_CST);
		ursa_event_set(&S->writer_ev);
		int st;
		if (waitpid(pids[0], &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
			failed++;
	}
	getrusage(RUSAGE_CHILDREN, &ru1);
	alarm(0);
	if (failed)
		die("ursa-commit: %d process(es) of engine %s failed\n", failed, engine_names[e]);

	double win = 0, all = 0, fl = (double)S->writer_flushes, wk = (double)S->writer_wakes;
	for (int i = 0; i < nprocs; i++) {
		struct backend *b = &S->be[i];
		win += (double)b->win_commits;
		all += (double)b->commits;
		fl += (double)b->flushes;
		wk += (double)b->wakes;
		res->early += b->early;
		for (unsigned k = 0; k < HIST_BUCKETS; k++)
			res->hist[k] += b->hist[k];
	}
	double s = (double)(t1 - t0) / 1e9, cps = win / s;
	if (!res->ran) {
		res->ran = true;
		res->cps_min = res->cps_max = cps;
	}
	res->cps_min = cps < res->cps_min ? cps : res->cps_min;
	res->cps_max = cps > res->cps_max ? cps : res->cps_max;
	res->rounds++;
	res->secs += s;
	res->win_commits += win;
	res->commits += all;
	res->flushes += fl;
	res->wakes += wk;
	res->csw += (double)(ru1.ru_nvcsw - ru0.ru_nvcsw + ru1.ru_nivcsw - ru0.ru_nivcsw);
	res->icsw += (double)(ru1.ru_nivcsw - ru0.ru_nivcsw);
	res->cpu_us += tv_us(ru0.ru_utime, ru1.ru_utime) + tv_us(ru0.ru_stime, ru1.ru_stime);
	verify(res, nprocs);
	close(S->fd);
	for (int i = 0; i < nprocs; i++)
		sem_destroy(&S->be[i].sem);
}

/* ---- main ------------------------------------------------------------------------ */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ursa-commit [options]\n"
		"Group commit: N backend processes append WAL records under an insert lock and\n"
		"wait until the WAL is durable (pwrite + fdatasync of a real file) up to their\n"
		"LSN; the first waiter flushes for everyone (PostgreSQL's XLogFlush).\n"
		"  --engine NAME   sem | condvar | waitq | waitq-ring | all (repeatable; default all)\n"
		"  --procs N       backend processes (default 16)\n"
		"  --walwriter     a dedicated WAL writer process flushes; backends only wait\n"
		"  --no-sync       pwrite only, no fdatasync: the waits and wakes set the pace\n"
		"  --seconds N     measured seconds per engine (default 12; --quick 4)\n"
		"  --rounds N      split into N rounds, engines alternating (default 4)\n"
		"  --warmup N      unmeasured seconds before each round (default 0.3)\n"
		"  --quick         under 30 s in all\n"
		"  --dir DIR       where the WAL file lives (default bench/out, else $TMPDIR)\n"
		"  --csv FILE      rows commit,ENGINE,PROCS,metric,value,unit\n"
		"  --plot FILE     PNG (default: the CSV's name, .png)\n");
}

static double parse_num(const char *s, const char *what, double lo, double hi)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || *end || !(v >= lo && v <= hi))
		die("ursa-commit: %s: expected a number in [%g, %g], got '%s'\n", what, lo, hi, s);
	return v;
}

static void write_plot(const char *png, const struct result *res, int nprocs, bool ww)
{
	FILE *g = popen(GNUPLOT_CMD, "w");
	if (!g) {
		printf("plot: gnuplot could not be started\n");
		return;
	}
	fprintf(g,
		"set terminal pngcairo size 1000,420 noenhanced font ',10'\n"
		"set output '%s'\n"
		"set multiplot layout 1,3 title 'ursa-commit: %d backends%s, pwrite%s'\n"
		"set style data histograms\nset style fill solid 0.8 border -1\n"
		"set boxwidth 0.6\nset grid ytics\nset yrange [0:*]\nunset key\n"
		"set xtics rotate by -30\n"
		"$d << EOD\n",
		png, nprocs, ww ? " + WAL writer" : "", no_sync ? " (no fdatasync)" : " + fdatasync");
	for (int e = 0; e < E_N; e++)
		if (res[e].ran)
			fprintf(g, "\"%s\" %.1f %.1f %.3f\n", engine_names[e], res[e].cps,
				res[e].p99_us, res[e].cs_per_commit);
	fprintf(g, "EOD\n"
		   "set title 'commits/s (higher is better)'\n"
		   "plot $d using 2:xtic(1) linecolor rgb '#4477aa'\n"
		   "set title 'p99 commit latency, us'\n"
		   "plot $d using 3:xtic(1) linecolor rgb '#cc6677'\n"
		   "set title 'context switches per commit'\n"
		   "plot $d using 4:xtic(1) linecolor rgb '#228833'\n"
		   "unset multiplot\n");
	int st = pclose(g);
	if (st == 0)
		printf("plot: %s\n", png);
	else
		printf("plot: not written (gnuplot missing or failed)\n");
}

int main(int argc, char **argv)
{
	enum { O_ENGINE = 256, O_PROCS, O_WW, O_NOSYNC, O_SECONDS, O_ROUNDS, O_WARMUP, O_QUICK,
	       O_DIR, O_CSV, O_PLOT, O_HELP };
	static const struct option lo[] = {
	    {"engine", required_argument, 0, O_ENGINE}, {"procs", required_argument, 0, O_PROCS},
	    {"walwriter", no_argument, 0, O_WW},	    {"seconds", required_argument, 0, O_SECONDS},
	    {"rounds", required_argument, 0, O_ROUNDS}, {"warmup", required_argument, 0, O_WARMUP},
	    {"quick", no_argument, 0, O_QUICK},	    {"dir", required_argument, 0, O_DIR},
	    {"csv", required_argument, 0, O_CSV},	    {"plot", required_argument, 0, O_PLOT},
	    {"help", no_argument, 0, O_HELP},	    {"no-sync", no_argument, 0, O_NOSYNC},
	    {0, 0, 0, 0},
	};
	bool eng[E_N] = {0}, any = false, ww = false, quick = false;
	int nprocs = 16, rounds = 4;
	double secs = -1, warmup = 0.3;
	const char *dir = NULL, *csvp = NULL, *plotp = NULL;
	for (int c; (c = getopt_long(argc, argv, "h", lo, NULL)) != -1;) {
		switch (c) {
		case O_ENGINE: {
			bool found = false;
			for (int e = 0; e < E_N; e++)
				if (!strcmp(optarg, engine_names[e]) || !strcmp(optarg, "all"))
					eng[e] = found = true;
			if (!found)
				die("ursa-commit: unknown engine '%s' (sem, condvar, waitq, "
				    "waitq-ring, all)\n",
				    optarg);
			any = true;
			break;
		}
		case O_PROCS:
			nprocs = (int)parse_num(optarg, "--procs", 1, MAX_PROCS);
			break;
		case O_WW:
			ww = true;
			break;
		case O_NOSYNC:
			no_sync = true;
			break;
		case O_SECONDS:
			secs = parse_num(optarg, "--seconds", 0.1, 86400);
			break;
		case O_ROUNDS:
			rounds = (int)parse_num(optarg, "--rounds", 1, 100);
			break;
		case O_WARMUP:
			warmup = parse_num(optarg, "--warmup", 0, 3600);
			break;
		case O_QUICK:
			quick = true;
			break;
		case O_DIR:
			dir = optarg;
			break;
		case O_CSV:
			csvp = optarg;
			break;
		case O_PLOT:
			plotp = optarg;
			break;
		case O_HELP:
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		usage(stderr);
		return 2;
	}
	if (!any)
		for (int e = 0; e < E_N; e++)
			eng[e] = true;
	if (secs < 0)
		secs = quick ? 4 : 12;
	setvbuf(stdout, NULL, _IOLBF, 0);

	struct ursa_features f;
	if (eng[E_WAITQ_RING] && (ursa_probe(&f) || !f.uring_futex)) {
		fprintf(stderr, "ursa-commit: waitq-ring skipped: no io_uring futex operations\n");
		eng[E_WAITQ_RING] = false;
	}

	FILE *csv = NULL;
	if (csvp && !(csv = fopen(csvp, "w")))
		die("ursa-commit: %s: %s\n", csvp, strerror(errno));

	struct stat st;
	if (!dir)
		dir = stat("bench", &st) == 0 && S_ISDIR(st.st_mode) ? "bench/out"
		      : getenv("TMPDIR") && *getenv("TMPDIR")	     ? getenv("TMPDIR")
								     : "/tmp";
	if (mkdir(dir, 0777) && errno != EEXIST)
		die("ursa-commit: mkdir %s: %s\n", dir, strerror(errno));
	char path[4096];
	snprintf(path, sizeof(path), "%s/commit-wal.dat", dir);
	/* Preallocate the WAL, zero-filled and synced (as PostgreSQL's
	 * segments): a flush then writes into allocated blocks. */
	{
		int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0)
			die("ursa-commit: create %s: %s\n", path, strerror(errno));
		static char zero[1 << 20];
		for (int i = 0; i < 32; i++)
			if (write(fd, zero, sizeof(zero)) != (ssize_t)sizeof(zero))
				die("ursa-commit: write %s: %s\n", path, strerror(errno));
		if (fsync(fd))
			die("ursa-commit: fsync %s: %s\n", path, strerror(errno));
		close(fd);
	}

	size_t shsz = sizeof(struct shm) + (size_t)nprocs * sizeof(struct backend);
	shsz = (shsz + 63) & ~(size_t)63;
	size_t qsz = ursa_waitq_size((uint32_t)nprocs);
	void *mem = mmap(NULL, shsz + qsz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		die("ursa-commit: mmap: %s\n", strerror(errno));
	S = mem;
	Q = (ursa_waitq_t *)(void *)((char *)mem + shsz);

	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	printf("ursa-commit: %d backend processes%s, %u-byte commit records, WAL %s (pwrite%s), "
	       "%ld CPUs\n",
	       nprocs, ww ? " and a WAL writer" : " (the first waiter leads the flush)", REC_SIZE,
	       path, no_sync ? " only, no fdatasync" : " + fdatasync", cpus);
	printf("  per engine: %d rounds of %.1f s warm-up + %.1f s measured, engines alternating\n",
	       rounds, warmup, secs / rounds);

	struct result res[E_N];
	memset(res, 0, sizeof(res));
	for (int k = 0; k < rounds; k++) {
		/* Alternate the order: A B C D, D C B A, ... */
		for (int j = 0; j < E_N; j++) {
			int e = k % 2 ? E_N - 1 - j : j;
			if (!eng[e])
				continue;
			fprintf(stderr, "ursa-commit: round %d/%d %s\n", k + 1, rounds, engine_names[e]);
			run_round((enum engine)e, nprocs, ww, warmup, secs / rounds, path, &res[e]);
		}
	}
	bool ok = true;
	printf("\n%-11s %10s %9s %9s %9s %9s %9s %8s %8s  %s\n", "engine", "commits/s", "p50 us",
	       "p99 us", "cs/commit", "invol", "cpu us", "batch", "wakes", "consistent");
	for (int e = 0; e < E_N; e++) {
		struct result *r = &res[e];
		if (!r->ran)
			continue;
		double n = r->commits > 0 ? r->commits : 1;
		r->cps = r->secs > 0 ? r->win_commits / r->secs : 0;
		r->p50_us = hist_quantile(r->hist, 0.5) / 1e3;
		r->p99_us = hist_quantile(r->hist, 0.99) / 1e3;
		r->cs_per_commit = r->csw / n;
		r->ics_per_commit = r->icsw / n;
		r->cpu_per_commit = r->cpu_us / n;
		r->batch = r->flushes > 0 ? r->commits / r->flushes : 0;
		bool good = !r->early && !r->lost && !r->bad;
		ok &= good;
		printf("%-11s %10.0f %9.1f %9.1f %9.2f %9.2f %9.1f %8.1f %8.2f  %s\n",
		       engine_names[e], r->cps, r->p50_us, r->p99_us, r->cs_per_commit,
		       r->ics_per_commit, r->cpu_per_commit, r->batch,
		       r->wakes / n,
		       good ? "yes" : "NO");
		if (!good)
			printf("  %s: %llu waits returned early, %llu commits lost or extra, %llu bad "
			       "WAL records\n",
			       engine_names[e], (unsigned long long)r->early,
			       (unsigned long long)r->lost, (unsigned long long)r->bad);
	}
	printf("  commits/s over the rounds (per round:");
	for (int e = 0; e < E_N; e++)
		if (res[e].ran)
			printf(" %s %.0f..%.0f", engine_names[e], res[e].cps_min, res[e].cps_max);
	printf(")\n  batch: commits per flush (fdatasync); wakes: waiters a flusher woke, per "
	       "commit;\n  cs/commit, cpu us: context switches (invol: of them, involuntary) and "
	       "user+system CPU\n  of all the processes, per commit. A waiter sleeps once per "
	       "commit it does not lead:\n  about 1 voluntary switch per commit is the floor "
	       "of every engine.\n");
	const struct result *b = &res[E_SEM];
	if (b->ran && b->cps > 0)
		for (int e = 1; e < E_N; e++)
			if (res[e].ran)
				printf("%s vs sem: %.2fx commits/s, p99 %.2fx, context switches %.2fx, "
				       "CPU per commit %.2fx\n",
				       engine_names[e], res[e].cps / b->cps,
				       b->p99_us > 0 ? res[e].p99_us / b->p99_us : 0,
				       b->cs_per_commit > 0 ? res[e].cs_per_commit / b->cs_per_commit : 0,
				       b->cpu_per_commit > 0 ? res[e].cpu_per_commit / b->cpu_per_commit
							     : 0);
	printf("consistency: %s (every wait returned with its LSN durable; the WAL file read "
	       "back holds every committed record, in LSN order)\n",
	       ok ? "OK" : "FAILED");
	if (csv) {
		fprintf(csv, "scenario,impl,threads,metric,value,unit\n");
		for (int e = 0; e < E_N; e++) {
			const struct result *r = &res[e];
			if (!r->ran)
				continue;
			const char *nm = engine_names[e];
			fprintf(csv, "commit,%s,%d,commits_per_s,%.6g,commits/s\n", nm, nprocs, r->cps);
			fprintf(csv, "commit,%s,%d,commits_per_s_min_round,%.6g,commits/s\n", nm, nprocs,
				r->cps_min);
			fprintf(csv, "commit,%s,%d,commits_per_s_max_round,%.6g,commits/s\n", nm, nprocs,
				r->cps_max);
			fprintf(csv, "commit,%s,%d,p50_latency,%.6g,us\n", nm, nprocs, r->p50_us);
			fprintf(csv, "commit,%s,%d,p99_latency,%.6g,us\n", nm, nprocs, r->p99_us);
			fprintf(csv, "commit,%s,%d,ctx_switches_per_commit,%.6g,count\n", nm, nprocs,
				r->cs_per_commit);
			fprintf(csv, "commit,%s,%d,invol_ctx_switches_per_commit,%.6g,count\n", nm,
				nprocs, r->ics_per_commit);
			fprintf(csv, "commit,%s,%d,cpu_per_commit,%.6g,us\n", nm, nprocs,
				r->cpu_per_commit);
			fprintf(csv, "commit,%s,%d,commits_per_flush,%.6g,count\n", nm, nprocs, r->batch);
			fprintf(csv, "commit,%s,%d,consistent,%d,bool\n", nm, nprocs,
				!r->early && !r->lost && !r->bad);
		}
		if (fclose(csv))
			die("ursa-commit: %s: %s\n", csvp, strerror(errno));
		printf("CSV: %s\n", csvp);
		char png[4096];
		if (plotp)
			snprintf(png, sizeof(png), "%s", plotp);
		else {
			const char *dot = strrchr(csvp, '.'), *slash = strrchr(csvp, '/');
			int stem = dot && (!slash || dot > slash) ? (int)(dot - csvp) : (int)strlen(csvp);
			snprintf(png, sizeof(png), "%.*s.png", stem, csvp);
		}
		write_plot(png, res, nprocs, ww);
	} else if (plotp) {
		write_plot(plotp, res, nprocs, ww);
	}
	return ok ? 0 : 1;
}
