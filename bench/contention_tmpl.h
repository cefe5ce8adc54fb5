/* SPDX-License-Identifier: MIT */
/*
 * bench/contention_tmpl.h — the contention matrix's workloads, written once
 * and included once per implementation by bench_contention.c (no include
 * guard, on purpose). Before including, define:
 *
 *   IMPL           the adapter's token (glibc, ursa, nsync, ck, absl)
 *   IMPL_HAS_RW    1 if the adapter has ad_IMPL_rw_*
 *   IMPL_HAS_SEM   1 if the adapter has ad_IMPL_sem_*
 *   IMPL_HAS_COND  1 if the adapter has ad_IMPL_cond_* (with broadcast)
 *
 * It defines static cn_IMPL_measure(), which runs one timed run of one
 * point. As in bench_tmpl.h, every lock call is a direct call to the
 * adapter's static inline function, so inline fast paths stay inline.
 *
 * The per-operation harness code (the sampled timestamps around the
 * acquisition, the shared counter, the section, the stop check) is the
 * same text for every implementation, so its overhead is the same for all.
 * Every critical section updates plain shared data that is checked after
 * the run: a lock that does not exclude stops the run.
 */
#ifndef IMPL
#error "define IMPL before including bench/contention_tmpl.h"
#endif

#define AD(x) BENCH_CAT(BENCH_CAT(ad_, IMPL), _##x)
#define T(x)  BENCH_CAT(BENCH_CAT(cn_, IMPL), _##x)

/* ------------------------------------------------ mutex and semaphore */

struct T(mshared) {
	struct cn_common c;
	AD(mutex_t) m BENCH_ALIGNED;
#if IMPL_HAS_SEM
	AD(sem_t) s BENCH_ALIGNED;
#endif
	uint64_t counter BENCH_ALIGNED; /* written only inside the section */
};

static void *T(mthread)(void *p)
{
	struct cn_thread *a = p;
	struct T(mshared) *sh = a->shared;
	const uint32_t iters = sh->c.iters, out = sh->c.out_iters;
	const bool yield = sh->c.yield;
	uint64_t it = 0, ops = 0;

	pthread_barrier_wait(&sh->c.start);
	for (;; it++) {
		bool sample = (it & CN_SAMPLE_MASK) == 0;
		uint64_t t0 = sample ? cn_ts() : 0;
		AD(lock)(&sh->m);
		if (sample)
			cn_hist_add(a, cn_ts() - t0);
		sh->counter++;
		cn_section(iters, yield);
		AD(unlock)(&sh->m);
		bench_work_iters(out);
		if (__atomic_load_n(&sh->c.stop, __ATOMIC_RELAXED))
			break;
		ops++;
	}
	a->ops = a->items = ops;
	a->check = it + 1; /* every section, counted or not */
	return NULL;
}

#if IMPL_HAS_SEM
/* A semaphore of count 1: wait, section, post. The unit is handed from
 * the poster to a waiter (or re-taken by a running thread). */
static void *T(sthread)(void *p)
{
	struct cn_thread *a = p;
	struct T(mshared) *sh = a->shared;
	const uint32_t iters = sh->c.iters, out = sh->c.out_iters;
	const bool yield = sh->c.yield;
	uint64_t it = 0, ops = 0;

	pthread_barrier_wait(&sh->c.start);
	for (;; it++) {
		bool sample = (it & CN_SAMPLE_MASK) == 0;
		uint64_t t0 = sample ? cn_ts() : 0;
		AD(sem_wait)(&sh->s);
		if (sample)
			cn_hist_add(a, cn_ts() - t0);
		sh->counter++;
		cn_section(iters, yield);
		AD(sem_post)(&sh->s);
		bench_work_iters(out);
		if (__atomic_load_n(&sh->c.stop, __ATOMIC_RELAXED))
			break;
		ops++;
	}
	a->ops = a->items = ops;
	a->check = it + 1; /* every section, counted or not */
	return NULL;
}
#endif

static int T(mutex_or_sem)(const struct cn_point *pt, struct cn_result *r, bool sem)
{
	struct T(mshared) *sh = aligned_alloc(BENCH_CACHELINE, sizeof(*sh));
	if (!sh)
		return bench_fail("malloc", ENOMEM);
	memset(sh, 0, sizeof(*sh));
	if (sem) {
#if IMPL_HAS_SEM
		AD(sem_init)(&sh->s, 1);
#endif
	} else {
		AD(mutex_init)(&sh->m);
	}
	void *(*fn)(void *) = T(mthread);
#if IMPL_HAS_SEM
	if (sem)
		fn = T(sthread);
#endif
	struct cn_thread *th = cn_run(pt, &sh->c, sh, fn, NULL);
	if (!th) {
		free(sh);
		return -1;
	}
	uint64_t iters = 0;
	for (int i = 0; i < pt->threads; i++)
		iters += th[i].check;
	int ret = 0;
	if (sh->counter != iters)
		ret = bench_fail(BENCH_STR(IMPL) " contention: lost updates (no exclusion)", EPROTO);
	else
		cn_result(pt, &sh->c, th, pt->threads, r);
	if (sem) {
#if IMPL_HAS_SEM
		AD(sem_destroy)(&sh->s);
#endif
	} else {
		AD(mutex_destroy)(&sh->m);
	}
	cn_free(&sh->c, th);
	free(sh);
	return ret;
}

/* ------------------------------------------------ rwlock */
#if IMPL_HAS_RW

struct T(rshared) {
	struct cn_common c;
	AD(rw_t) l BENCH_ALIGNED;
	uint64_t data[4] BENCH_ALIGNED; /* all equal outside a write section */
	uint32_t write_pct;
	int torn;
};

static void *T(rthread)(void *p)
{
	struct cn_thread *a = p;
	struct T(rshared) *sh = a->shared;
	const uint32_t iters = sh->c.iters, wpct = sh->write_pct, out = sh->c.out_iters;
	const bool yield = sh->c.yield;
	uint64_t it = 0, ops = 0, writes = 0, s = a->seed;
	bool torn = false;

	pthread_barrier_wait(&sh->c.start);
	for (;; it++) {
		bool sample = (it & CN_SAMPLE_MASK) == 0;
		bool w = bench_xorshift(&s) % 100 < wpct;
		uint64_t t0 = sample ? cn_ts() : 0;
		if (w) {
			AD(wrlock)(&sh->l);
			if (sample)
				cn_hist_add(a, cn_ts() - t0);
			for (int k = 0; k < 4; k++)
				sh->data[k]++;
			cn_section(iters, yield);
			AD(wrunlock)(&sh->l);
			writes++;
		} else {
			AD(rdlock)(&sh->l);
			if (sample)
				cn_hist_add(a, cn_ts() - t0);
			uint64_t d0 = sh->data[0];
			cn_section_rd(iters, yield);
			torn |= sh->data[1] != d0 || sh->data[2] != d0 || sh->data[3] != d0 ||
				sh->data[0] != d0;
			AD(rdunlock)(&sh->l);
		}
		bench_work_iters(out);
		if (__atomic_load_n(&sh->c.stop, __ATOMIC_RELAXED))
			break;
		ops++;
	}
	if (torn)
		__atomic_store_n(&sh->torn, 1, __ATOMIC_RELAXED);
	a->ops = a->items = ops;
	a->check = writes; /* every write, counted or not */
	return NULL;
}

static int T(rw)(const struct cn_point *pt, struct cn_result *r)
{
	struct T(rshared) *sh = aligned_alloc(BENCH_CACHELINE, sizeof(*sh));
	if (!sh)
		return bench_fail("malloc", ENOMEM);
	memset(sh, 0, sizeof(*sh));
	AD(rw_init)(&sh->l);
	sh->write_pct = pt->workload == CN_RW95 ? 5 : 50;
	struct cn_thread *th = cn_run(pt, &sh->c, sh, T(rthread), NULL);
	if (!th) {
		free(sh);
		return -1;
	}
	uint64_t writes = 0;
	for (int i = 0; i < pt->threads; i++)
		writes += th[i].check;
	int ret = 0;
	if (sh->torn || sh->data[0] != writes || sh->data[3] != writes)
		ret = bench_fail(BENCH_STR(IMPL) " contention: torn read or lost write", EPROTO);
	else
		cn_result(pt, &sh->c, th, pt->threads, r);
	AD(rw_destroy)(&sh->l);
	cn_free(&sh->c, th);
	free(sh);
	return ret;
}
#endif

/* ------------------------------------------------ condvar producer/consumer */
#if IMPL_HAS_COND

struct T(qshared) {
	struct cn_common c;
	AD(mutex_t) m BENCH_ALIGNED;
	AD(cond_t) not_empty BENCH_ALIGNED;
	AD(cond_t) not_full BENCH_ALIGNED;
	/* The queue, under m. */
	uint64_t q[CN_QCAP] BENCH_ALIGNED;
	uint32_t head, count;
	uint64_t produced, consumed;   /* items, under m */
	uint64_t sum_in, sum_out;      /* sums of the items, under m */
	int qstop;		       /* under m: the run is over */
};

/* Even threads produce, odd ones consume. A producer waits while the queue
 * is full, a consumer while it is empty; each signals the other side's
 * condition variable under the mutex after its step. The sampled wait is
 * from before the lock call until the thread holds the mutex with its
 * condition true (it includes the condition-variable waits). */
static void *T(qthread)(void *p)
{
	struct cn_thread *a = p;
	struct T(qshared) *sh = a->shared;
	const uint32_t iters = sh->c.iters, out = sh->c.out_iters;
	const bool yield = sh->c.yield;
	const bool producer = a->index % 2 == 0;
	uint64_t it = 0, ops = 0, next = (uint64_t)a->index << 40;

	pthread_barrier_wait(&sh->c.start);
	for (;; it++) {
		bool sample = (it & CN_SAMPLE_MASK) == 0;
		uint64_t t0 = sample ? cn_ts() : 0;
		AD(lock)(&sh->m);
		if (producer) {
			while (sh->count == CN_QCAP && !sh->qstop)
				AD(cond_wait)(&sh->not_full, &sh->m);
		} else {
			while (sh->count == 0 && !sh->qstop)
				AD(cond_wait)(&sh->not_empty, &sh->m);
		}
		if (sh->qstop) {
			AD(unlock)(&sh->m);
			break;
		}
		if (sample)
			cn_hist_add(a, cn_ts() - t0);
		if (producer) {
			uint64_t v = ++next;
			sh->q[(sh->head + sh->count) % CN_QCAP] = v;
			sh->count++;
			sh->produced++;
			sh->sum_in += v;
			cn_section(iters, yield);
			AD(cond_signal)(&sh->not_empty);
		} else {
			uint64_t v = sh->q[sh->head];
			sh->head = (sh->head + 1) % CN_QCAP;
			sh->count--;
			sh->consumed++;
			sh->sum_out += v;
			cn_section(iters, yield);
			AD(cond_signal)(&sh->not_full);
		}
		AD(unlock)(&sh->m);
		bench_work_iters(out);
		ops++;
	}
	a->ops = ops;
	a->items = producer ? 0 : ops; /* throughput: items through the queue */
	return NULL;
}

/* The run's end for the queue: set the flag under the mutex and wake both
 * sides, so that no thread stays asleep on a condition that cannot come. */
static void T(qstop)(void *p)
{
	struct T(qshared) *sh = p;
	AD(lock)(&sh->m);
	sh->qstop = 1;
	AD(cond_broadcast)(&sh->not_empty);
	AD(cond_broadcast)(&sh->not_full);
	AD(unlock)(&sh->m);
}

static int T(cond)(const struct cn_point *pt, struct cn_result *r)
{
	struct T(qshared) *sh = aligned_alloc(BENCH_CACHELINE, sizeof(*sh));
	if (!sh)
		return bench_fail("malloc", ENOMEM);
	memset(sh, 0, sizeof(*sh));
	AD(mutex_init)(&sh->m);
	AD(cond_init)(&sh->not_empty);
	AD(cond_init)(&sh->not_full);
	struct cn_point p2 = *pt;
	p2.threads = cn_cond_threads(pt->threads);
	struct cn_thread *th = cn_run(&p2, &sh->c, sh, T(qthread), T(qstop));
	if (!th) {
		free(sh);
		return -1;
	}
	uint64_t left = 0;
	for (uint32_t k = 0; k < sh->count; k++)
		left += sh->q[(sh->head + k) % CN_QCAP];
	int ret = 0;
	if (sh->produced != sh->consumed + sh->count || sh->sum_in != sh->sum_out + left)
		ret = bench_fail(BENCH_STR(IMPL) " contention: queue lost or duplicated items",
				 EPROTO);
	else
		cn_result(&p2, &sh->c, th, p2.threads, r);
	AD(cond_destroy)(&sh->not_empty);
	AD(cond_destroy)(&sh->not_full);
	AD(mutex_destroy)(&sh->m);
	cn_free(&sh->c, th);
	free(sh);
	return ret;
}
#endif

/* ------------------------------------------------ dispatch */

static int T(measure)(const struct cn_point *pt, struct cn_result *r)
{
	switch (pt->workload) {
	case CN_MUTEX:
		return T(mutex_or_sem)(pt, r, false);
#if IMPL_HAS_RW
	case CN_RW95:
	case CN_RW50:
		return T(rw)(pt, r);
#endif
#if IMPL_HAS_SEM
	case CN_SEM:
		return T(mutex_or_sem)(pt, r, true);
#endif
#if IMPL_HAS_COND
	case CN_COND:
		return T(cond)(pt, r);
#endif
	default:
		return bench_fail(BENCH_STR(IMPL) " contention: workload not built", EINVAL);
	}
}

static const unsigned T(workloads) = (1u << CN_MUTEX) |
				     (IMPL_HAS_RW ? (1u << CN_RW95) | (1u << CN_RW50) : 0) |
				     (IMPL_HAS_SEM ? 1u << CN_SEM : 0) |
				     (IMPL_HAS_COND ? 1u << CN_COND : 0);

#undef AD
#undef T
#undef IMPL
#undef IMPL_HAS_RW
#undef IMPL_HAS_SEM
#undef IMPL_HAS_COND
