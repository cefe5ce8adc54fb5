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
 *
 * A round: every waiter blocks (checked in /proc); the waker takes a
 * timestamp and RUSAGE_SELF, wakes all K, takes a timestamp (waker us);
 * each waiter stamps the time it ran again; the last one to run posts the
 * waker. all-awake = latest waiter stamp - first waker stamp; invol-csw =
 * the process's involuntary context switches over the round (woken threads
 * preempting the waker and each other on busy CPUs). Per repetition, the
 * median over the rounds.
 */
#include "bench/bench.h"

#include <errno.h>
#include <semaphore.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <ursa.h>

/* The ring mode also needs ursa_handle_cqe, for error CQEs of the wakes. */
#define WB_HAVE_RING (URSA_BENCH_HAVE_WAITQ && URSA_BENCH_HAVE_ASYNC)

#if URSA_BENCH_HAVE_WAITQ
#include <liburing.h>
#include <ursa/async.h>
#endif

#define WB_MAX 256

enum wb_mode { WB_GLIBC, WB_SLOT, WB_WAITQ, WB_RING };

struct wb_waiter {
	struct wb_shared *sh;
	int idx;
	pid_t tid;
	int ready;	 /* round r + 1: about to block for round r */
	uint64_t t_woke; /* when its wait returned */
	int err;
	sem_t sem;
} BENCH_ALIGNED;

struct wb_shared {
	enum wb_mode mode;
	int n, rounds;
	int awake BENCH_ALIGNED;
	sem_t all_awake;
	ursa_waitq_t *q;
	struct wb_waiter w[WB_MAX];
};

static int wb_wait(struct wb_shared *sh, struct wb_waiter *w, int round)
{
	if (sh->mode == WB_GLIBC) {
		__atomic_store_n(&w->ready, round + 1, __ATOMIC_RELEASE);
		while (sem_wait(&w->sem))
			if (errno != EINTR)
				return -errno;
		return 0;
	}
#if URSA_BENCH_HAVE_WAITQ
	int r = ursa_waitq_prepare(sh->q, (uint32_t)w->idx, (uint64_t)round);
	if (r)
		return r;
	__atomic_store_n(&w->ready, round + 1, __ATOMIC_RELEASE);
	return ursa_waitq_wait(sh->q, (uint32_t)w->idx, CLOCK_MONOTONIC, NULL);
#else
	return -ENOSYS;
#endif
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

/* Wake all n waiters the mode's way. Returns how many were woken or -errno. */
static int wb_wake(struct wb_shared *sh, void *ring)
{
	int n = sh->n, woke = 0;
	switch (sh->mode) {
	case WB_GLIBC:
		for (int i = 0; i < n; i++)
			if (sem_post(&sh->w[i].sem) == 0)
				woke++;
		return woke;
#if URSA_BENCH_HAVE_WAITQ
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
#endif
#if WB_HAVE_RING
	case WB_RING:
		return ursa_waitq_wake(sh->q, (uint32_t)n, ring);
#endif
	default:
		(void)ring;
		return -ENOSYS;
	}
}

static int wb_measure(enum wb_mode mode, const struct bench_point *pt, double *v)
{
	int n = pt->threads, rounds = pt->warmup ? 1 : bench_opt.wake_rounds;
	struct wb_shared *sh = aligned_alloc(BENCH_CACHELINE, sizeof(*sh));
	pthread_t *tids = calloc((size_t)n, sizeof(*tids));
	double *waker = calloc((size_t)rounds, sizeof(double));
	double *all = calloc((size_t)rounds, sizeof(double));
	double *csw = calloc((size_t)rounds, sizeof(double));
	void *ring = NULL;
	int ret = -1;

	if (!sh || !tids || !waker || !all || !csw) {
		bench_fail("malloc", ENOMEM);
		goto out;
	}
	memset(sh, 0, sizeof(*sh));
	sh->mode = mode;
	sh->n = n;
	sh->rounds = rounds;
	sem_init(&sh->all_awake, 0, 0);
	for (int i = 0; i < n; i++) {
		sh->w[i].sh = sh;
		sh->w[i].idx = i;
		sem_init(&sh->w[i].sem, 0, 0);
	}
#if URSA_BENCH_HAVE_WAITQ
	struct io_uring uring;
	if (mode != WB_GLIBC) {
		sh->q = aligned_alloc(BENCH_CACHELINE,
				      (ursa_waitq_size((uint32_t)n) + BENCH_CACHELINE - 1) &
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
	}
	if (mode == WB_RING) {
		int r = io_uring_queue_init(2 * WB_MAX, &uring, 0);
		if (r) {
			bench_fail("io_uring_queue_init", r);
			goto out;
		}
		ring = &uring;
	}
#endif
	bench_pin_self(0);
	if (bench_spawn_small(tids, n, wb_thread, sh->w, sizeof(sh->w[0])))
		exit(2); /* started waiters would block forever */

	for (int r = 0; r < rounds; r++) {
		/* Every waiter is in its wait for round r, and asleep. */
		for (int i = 0; i < n; i++) {
			struct wb_waiter *w = &sh->w[i];
			while (__atomic_load_n(&w->ready, __ATOMIC_ACQUIRE) != r + 1) {
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
		int woke = wb_wake(sh, ring);
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
#if WB_HAVE_RING
		/* Wake CQEs are skipped on success; any that arrives is ursa's error. */
		if (ring) {
			struct io_uring_cqe *cqe;
			while (io_uring_peek_cqe(ring, &cqe) == 0) {
				struct ursa_op *done;
				if (ursa_handle_cqe(ring, cqe, &done) != 1 || cqe->res < 0) {
					bench_fail("wake-batch: unexpected CQE", cqe->res);
					exit(2);
				}
				io_uring_cqe_seen(ring, cqe);
			}
		}
#endif
		waker[r] = (double)(t1 - t0) / 1e3;
		all[r] = (double)(last - t0) / 1e3;
		csw[r] = (double)(ru1.ru_nivcsw - ru0.ru_nivcsw);
	}
	bench_join(tids, n);
	v[0] = bench_median(waker, rounds);
	v[1] = bench_median(all, rounds);
	v[2] = bench_median(csw, rounds);
	ret = 0;
out:
#if URSA_BENCH_HAVE_WAITQ
	if (ring)
		io_uring_queue_exit(ring);
#endif
	if (sh) {
		for (int i = 0; i < n; i++)
			sem_destroy(&sh->w[i].sem);
		sem_destroy(&sh->all_awake);
		free(sh->q);
	}
	free(sh);
	free(tids);
	free(waker);
	free(all);
	free(csw);
	return ret;
}

static int wb_glibc(const struct bench_point *pt, double *v)
{
	return wb_measure(WB_GLIBC, pt, v);
}

#if URSA_BENCH_HAVE_WAITQ
static int wb_slot(const struct bench_point *pt, double *v)
{
	return wb_measure(WB_SLOT, pt, v);
}
static int wb_waitq(const struct bench_point *pt, double *v)
{
	return wb_measure(WB_WAITQ, pt, v);
}
#endif
#if WB_HAVE_RING
static int wb_ring(const struct bench_point *pt, double *v)
{
	return wb_measure(WB_RING, pt, v);
}
#endif

void bench_wake_register(struct bench_scenario *s)
{
	*s = (struct bench_scenario){
	    .name = "wake-batch",
	    .what = "wake K chosen sleeping waiters: per-waiter syscalls vs one batched wake",
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
	bench_add_impl(s, "glibc",
		       "a sem_t per waiter, sem_post each (one FUTEX_WAKE syscall per waiter)",
		       wb_glibc);
#if URSA_BENCH_HAVE_WAITQ
	bench_add_impl(s, "ursa-slot", "ursa_waitq_wake_slot(ring NULL) per waiter", wb_slot);
	bench_add_impl(s, "ursa-waitq", "one ursa_waitq_wake(K, ring NULL)", wb_waitq);
#if WB_HAVE_RING
	struct ursa_features f;
	if (ursa_probe(&f) == 0 && f.uring_futex)
		bench_add_impl(s, "ursa-ring", "one ursa_waitq_wake(K, ring): one kernel entry",
			       wb_ring);
	else
		s->missing = "ursa-ring: this kernel has no io_uring FUTEX_WAKE (6.7+)";
#else
	s->missing = "ursa-ring: ursa_handle_cqe not in libursa yet (URSA_BENCH_HAVE_ASYNC=0)";
#endif
#else
	s->missing = "ursa: ursa_waitq_* not in libursa yet (URSA_BENCH_HAVE_WAITQ=0)";
#endif
}
