/* SPDX-License-Identifier: MIT */
/*
 * bench/bench_wake.c — wake-batch: wake K sleeping waiters (1, 8, 64, 256),
 * each one chosen, and see what it costs the waker and the machine.
 *
 *   glibc       one sem_t per waiter and a sem_post for each: one FUTEX_WAKE
 *               system call per waiter (PostgreSQL's PGSemaphoreUnlock loop)
 *   ursa-slot   ursa_waitq_wake_slot(q, i, NULL) per waiter: the same one
 *               system call per waiter, through ursa's wait queue
 *   ursa-waitq  one ursa_waitq_wake(q, K, NULL)
 *   ursa-ring   one ursa_waitq_wake(q, K, ring): K FUTEX_WAKE SQEs, one
 *               kernel entry
 *   raw-batch   the reference, no ursa: a futex word per waiter (FUTEX_WAIT
 *               syscall), and the waker stores each word and submits K
 *               IORING_OP_FUTEX_WAKE SQEs (kernel/uring.h's prep, CQEs
 *               skipped on success) in one io_uring_enter: the floor
 *               ursa-ring's queue bookkeeping adds to
 *
 * A round: every waiter blocks (checked in /proc); the waker takes a
 * timestamp and RUSAGE_SELF, wakes all K, takes a timestamp (waker us);
 * each waiter stamps the time it ran again; the last one to run posts the
 * waker. all-awake = latest waiter stamp - first waker stamp; invol-csw =
 * the process's involuntary context switches over the round (woken threads
 * preempting the waker and each other on busy CPUs).
 *
 * The modes are measured interleaved, round by round, over one set of
 * waiter threads: round j runs every mode once, in an order rotated by j,
 * so that a drift of the machine (measured in blocks, one mode after the
 * other, the modes' figures drift apart by 2-3x on a shared VM) falls on
 * every mode alike. The first call at a point (glibc's warm-up) measures
 * all the modes for all the repetitions; each mode's calls then return
 * their repetition's medians.
 */
#include "bench/bench.h"
#include "kernel/uring.h"

#include <errno.h>
#include <liburing.h>
#include <limits.h>
#include <semaphore.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <ursa.h>
#include <ursa/async.h>

#define WB_MAX 256
#define WB_MAXREPS 65 /* a warm-up repetition + at most 64 */

enum wb_mode { WB_GLIBC, WB_SLOT, WB_WAITQ, WB_RING, WB_RAW, WB_NMODES };

struct wb_waiter {
	struct wb_shared *sh;
	int idx;
	pid_t tid;
	int ready;	 /* round r + 1: about to block for round r */
	uint64_t t_woke; /* when its wait returned */
	int err;
	uint32_t fword; /* raw-batch: its futex word (the round number + 1 once woken) */
	sem_t sem;
} BENCH_ALIGNED;

struct wb_shared {
	int n, rounds; /* rounds in all, every mode's */
	const unsigned char *sched; /* per round: its mode */
	int awake BENCH_ALIGNED;
	sem_t all_awake;
	ursa_waitq_t *q;
	struct wb_waiter w[WB_MAX];
};

static int wb_wait(struct wb_shared *sh, struct wb_waiter *w, int round)
{
	switch ((enum wb_mode)sh->sched[round]) {
	case WB_GLIBC:
		__atomic_store_n(&w->ready, round + 1, __ATOMIC_RELEASE);
		while (sem_wait(&w->sem))
			if (errno != EINTR)
				return -errno;
		return 0;
	case WB_RAW:
		__atomic_store_n(&w->ready, round + 1, __ATOMIC_RELEASE);
		/* Sleep while the word holds what it holds now (the number of the
		 * last raw round + 1, not necessarily this round's: the modes
		 * interleave), until the waker stores this round's. */
		for (uint32_t v; (v = __atomic_load_n(&w->fword, __ATOMIC_ACQUIRE)) !=
				 (uint32_t)round + 1;)
			if (syscall(SYS_futex, &w->fword, FUTEX_WAIT_PRIVATE, v, NULL, NULL, 0) &&
			    errno != EAGAIN && errno != EINTR)
				return -errno;
		return 0;
	default: {
		int r = ursa_waitq_prepare(sh->q, (uint32_t)w->idx, (uint64_t)round);
		if (r)
			return r;
		__atomic_store_n(&w->ready, round + 1, __ATOMIC_RELEASE);
		return ursa_waitq_wait(sh->q, (uint32_t)w->idx, CLOCK_MONOTONIC, NULL);
	}
	}
}

static void *wb_thread(void *p)
{
	struct wb_waiter *w = p;
	struct wb_shared *sh = w->sh;
	__atomic_store_n(&w->tid, bench_gettid(), __ATOMIC_RELEASE);
	for (int r = 0; r < sh->rounds; r++) {
		int e = wb_wait(sh, w, r);
		w->t_woke = bench_now_ns();
		if (e)
			w->err = e;
		if (__atomic_add_fetch(&sh->awake, 1, __ATOMIC_ACQ_REL) == sh->n)
			sem_post(&sh->all_awake);
		if (e)
			break;
	}
	return NULL;
}

/* Wake all n waiters of round r the mode's way. Returns how many were
 * woken or -errno. */
static int wb_wake(struct wb_shared *sh, int round, struct io_uring *ring)
{
	int n = sh->n, woke = 0;
	switch ((enum wb_mode)sh->sched[round]) {
	case WB_GLIBC:
		for (int i = 0; i < n; i++)
			if (sem_post(&sh->w[i].sem) == 0)
				woke++;
		return woke;
	case WB_SLOT:
		for (int i = 0; i < n; i++) {
			int r = ursa_waitq_wake_slot(sh->q, (uint32_t)i, NULL);
			if (r < 0)
				return r;
			woke += r;
		}
		return woke;
	case WB_WAITQ:
		return ursa_waitq_wake(sh->q, (uint32_t)n, NULL);
	case WB_RING:
		return ursa_waitq_wake(sh->q, (uint32_t)n, ring);
	case WB_RAW:
		for (int i = 0; i < n; i++) {
			struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
			if (!sqe)
				return -EBUSY; /* the ring holds 2 x WB_MAX */
			__atomic_store_n(&sh->w[i].fword, (uint32_t)round + 1, __ATOMIC_RELEASE);
			ursa_k_prep_futex_wake(sqe, &sh->w[i].fword, 1, false);
			sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;
			sqe->user_data = 1;
		}
		int r = io_uring_submit(ring);
		return r < 0 ? r : r == n ? n : -EPROTO;
	case WB_NMODES:
		break;
	}
	return -ENOSYS;
}

static bool wb_have_ring(void)
{
	struct ursa_features f;
	return ursa_probe(&f) == 0 && f.uring_futex;
}

/* Every mode's medians per repetition at one point, measured interleaved. */
static struct {
	int n, reps;
	bool valid;
	int next[WB_NMODES];
	double v[WB_NMODES][WB_MAXREPS][3];
} wb_cache;

static int wb_run_all(int n, int reps, int rounds_per)
{
	int nmodes = wb_have_ring() ? WB_NMODES : WB_RING; /* ring, raw need the ops */
	int total = (reps + 1) * rounds_per * nmodes;
	struct wb_shared *sh = aligned_alloc(BENCH_CACHELINE, sizeof(*sh));
	unsigned char *sched = malloc((size_t)total);
	pthread_t *tids = calloc((size_t)n, sizeof(*tids));
	double *waker = calloc((size_t)total, sizeof(double));
	double *all = calloc((size_t)total, sizeof(double));
	double *csw = calloc((size_t)total, sizeof(double));
	struct io_uring uring;
	bool have_ring = false;
	int ret = -1;

	if (!sh || !sched || !tids || !waker || !all || !csw) {
		bench_fail("malloc", ENOMEM);
		goto out;
	}
	/* Round g: repetition g / (rounds_per * nmodes), and within each block
	 * of nmodes rounds every mode once, the order rotated by the block. */
	for (int g = 0; g < total; g++) {
		int blk = g / nmodes, k = g % nmodes;
		sched[g] = (unsigned char)((k + blk) % nmodes);
	}
	memset(sh, 0, sizeof(*sh));
	sh->n = n;
	sh->rounds = total;
	sh->sched = sched;
	sem_init(&sh->all_awake, 0, 0);
	for (int i = 0; i < n; i++) {
		sh->w[i].sh = sh;
		sh->w[i].idx = i;
		sem_init(&sh->w[i].sem, 0, 0);
	}
	sh->q = aligned_alloc(BENCH_CACHELINE, (ursa_waitq_size((uint32_t)n) + BENCH_CACHELINE - 1) &
						       ~(size_t)(BENCH_CACHELINE - 1));
	if (!sh->q) {
		bench_fail("malloc", ENOMEM);
		goto out;
	}
	int r = ursa_waitq_init(sh->q, (uint32_t)n, 0);
	if (r) {
		bench_fail("ursa_waitq_init", r);
		goto out;
	}
	if (nmodes > WB_RING) {
		r = io_uring_queue_init(2 * WB_MAX, &uring, 0);
		if (r) {
			bench_fail("io_uring_queue_init", r);
			goto out;
		}
		have_ring = true;
	}
	bench_pin_self(0);
	if (bench_spawn_small(tids, n, wb_thread, sh->w, sizeof(sh->w[0])))
		exit(2); /* started waiters would block forever */

	for (int g = 0; g < total; g++) {
		/* Every waiter is in its wait for round g, and asleep. */
		for (int i = 0; i < n; i++) {
			struct wb_waiter *w = &sh->w[i];
			while (__atomic_load_n(&w->ready, __ATOMIC_ACQUIRE) != g + 1) {
				if (__atomic_load_n(&w->err, __ATOMIC_RELAXED)) {
					bench_fail("wake-batch: waiter's wait failed", w->err);
					exit(2); /* the others would block forever */
				}
				sched_yield();
			}
			bench_wait_asleep(w->tid, 100);
		}
		__atomic_store_n(&sh->awake, 0, __ATOMIC_RELAXED);
		struct rusage ru0, ru1;
		getrusage(RUSAGE_SELF, &ru0);
		uint64_t t0 = bench_now_ns();
		int woke = wb_wake(sh, g, have_ring ? &uring : NULL);
		uint64_t t1 = bench_now_ns();
		if (woke != n) {
			/* Waiters still blocked would hang the join: say why and stop. */
			bench_fail("wake-batch: wake did not wake every waiter",
				   woke < 0 ? woke : EPROTO);
			exit(2);
		}
		while (sem_wait(&sh->all_awake))
			;
		getrusage(RUSAGE_SELF, &ru1);
		uint64_t last = t0;
		for (int i = 0; i < n; i++) {
			if (sh->w[i].err) {
				bench_fail("wake-batch: waiter's wait failed", sh->w[i].err);
				exit(2);
			}
			if (sh->w[i].t_woke > last)
				last = sh->w[i].t_woke;
		}
		if (have_ring) {
			/* Wake CQEs are skipped on success: any that arrives is an
			 * error (ursa's are recognised by ursa_handle_cqe). */
			struct io_uring_cqe *cqe;
			while (io_uring_peek_cqe(&uring, &cqe) == 0) {
				struct ursa_op *done;
				if (cqe->res < 0 || (cqe->user_data != 1 &&
						     ursa_handle_cqe(&uring, cqe, &done) != 1)) {
					bench_fail("wake-batch: unexpected CQE", cqe->res);
					exit(2);
				}
				io_uring_cqe_seen(&uring, cqe);
			}
		}
		waker[g] = (double)(t1 - t0) / 1e3;
		all[g] = (double)(last - t0) / 1e3;
		csw[g] = (double)(ru1.ru_nivcsw - ru0.ru_nivcsw);
	}
	bench_join(tids, n);

	/* Per repetition and mode: the median over its rounds. */
	memset(&wb_cache, 0, sizeof(wb_cache));
	double tmp[3][4096];
	for (int rep = 0; rep <= reps; rep++)
		for (int m = 0; m < nmodes; m++) {
			int k = 0;
			for (int g = rep * rounds_per * nmodes; g < (rep + 1) * rounds_per * nmodes;
			     g++)
				if (sched[g] == m && k < 4096) {
					tmp[0][k] = waker[g];
					tmp[1][k] = all[g];
					tmp[2][k] = csw[g];
					k++;
				}
			for (int x = 0; x < 3; x++)
				wb_cache.v[m][rep][x] = bench_median(tmp[x], k);
		}
	wb_cache.n = n;
	wb_cache.reps = reps;
	wb_cache.valid = true;
	ret = 0;
out:
	if (have_ring)
		io_uring_queue_exit(&uring);
	if (sh) {
		for (int i = 0; i < n; i++)
			sem_destroy(&sh->w[i].sem);
		sem_destroy(&sh->all_awake);
		free(sh->q);
	}
	free(sh);
	free(sched);
	free(tids);
	free(waker);
	free(all);
	free(csw);
	return ret;
}

static int wb_measure(enum wb_mode mode, const struct bench_point *pt, double *v)
{
	int reps = bench_opt.reps < WB_MAXREPS - 1 ? bench_opt.reps : WB_MAXREPS - 1;
	if (!wb_cache.valid || wb_cache.n != pt->threads || wb_cache.reps != reps ||
	    (pt->warmup && mode == WB_GLIBC)) {
		if (wb_run_all(pt->threads, reps, bench_opt.wake_rounds))
			return -1;
	}
	/* Repetition 0 is the warm-up; the harness's reps get 1..reps. */
	int r = pt->warmup ? 0 : ++wb_cache.next[mode];
	if (r > reps)
		r = reps;
	memcpy(v, wb_cache.v[mode][r], 3 * sizeof(double));
	return 0;
}

static int wb_glibc(const struct bench_point *pt, double *v)
{
	return wb_measure(WB_GLIBC, pt, v);
}
static int wb_slot(const struct bench_point *pt, double *v)
{
	return wb_measure(WB_SLOT, pt, v);
}
static int wb_waitq(const struct bench_point *pt, double *v)
{
	return wb_measure(WB_WAITQ, pt, v);
}
static int wb_ring(const struct bench_point *pt, double *v)
{
	return wb_measure(WB_RING, pt, v);
}
static int wb_raw(const struct bench_point *pt, double *v)
{
	return wb_measure(WB_RAW, pt, v);
}

void bench_wake_register(struct bench_scenario *s)
{
	*s = (struct bench_scenario){
	    .name = "wake-batch",
	    .what = "wake K chosen sleeping waiters: per-waiter syscalls vs one batched wake "
		    "(modes interleaved round by round)",
	    .axis = "waiters",
	    .npoints = 4,
	    .points = {1, 8, 64, 256},
	    .nvariants = 1,
	    .variants = {""},
	    .nmetrics = 3,
	    .metrics = {{"waker", "us", false},
			{"all-awake", "us", false},
			{"invol-csw", "count", false}},
	};
	/* glibc first: its warm-up call measures every mode (see the top). */
	bench_add_impl(s, "glibc",
		       "a sem_t per waiter, sem_post each (one FUTEX_WAKE syscall per waiter)",
		       wb_glibc);
	bench_add_impl(s, "ursa-slot", "ursa_waitq_wake_slot(ring NULL) per waiter", wb_slot);
	bench_add_impl(s, "ursa-waitq", "one ursa_waitq_wake(K, ring NULL)", wb_waitq);
	if (wb_have_ring()) {
		bench_add_impl(s, "ursa-ring", "one ursa_waitq_wake(K, ring): one kernel entry",
			       wb_ring);
		bench_add_impl(s, "raw-batch",
			       "reference, no ursa: K FUTEX_WAKE SQEs in one io_uring_submit",
			       wb_raw);
	} else {
		s->missing = "ursa-ring, raw-batch: this kernel has no io_uring FUTEX_WAKE (6.7+)";
	}
}
