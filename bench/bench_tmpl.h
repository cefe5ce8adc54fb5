/* SPDX-License-Identifier: MIT */
/*
 * bench/bench_tmpl.h — the lock scenarios, written once and included once
 * per implementation (no include guard, on purpose). Before including,
 * define:
 *
 *   IMPL          the adapter's token (glibc, ursa, nsync, ck)
 *   IMPL_NOTE     a note for the tables ("spins, never sleeps") or NULL
 *   IMPL_PP_NOTE  the same for cond-pingpong
 *   IMPL_HAS_RW   1 if the adapter has ad_IMPL_rw_*
 *   IMPL_HAS_PP   1 if the adapter has ad_IMPL_pp_*
 *   IMPL_HAS_SEM  1 if the adapter has ad_IMPL_sem_* (sem-pingpong)
 *   IMPL_SPINS    1 if a blocked locker spins instead of sleeping
 *
 * Instantiating the code per implementation (instead of calling the
 * adapters through function pointers) keeps every lock call a direct call
 * to the adapter's static inline function, so inline fast paths stay
 * inline. It defines static t_IMPL_register(), which adds the
 * implementation to the scenarios.
 *
 * Each critical section updates plain (non-atomic) shared data that the
 * measure function checks afterwards, so a lock that fails to exclude, or
 * an adapter wired to the wrong call, aborts the run instead of printing a
 * fast figure.
 */
#ifndef IMPL
#error "define IMPL before including bench/bench_tmpl.h"
#endif

#define AD(x) BENCH_CAT(BENCH_CAT(ad_, IMPL), _##x)
#define T(x)  BENCH_CAT(BENCH_CAT(t_, IMPL), _##x)

/* ------------------------------------------------ mutex-uncontended */

/* variant 0: a mutex's lock+unlock; 1 / 2: an rwlock's read / write
 * lock+unlock. Every implementation registered here has an rwlock; one
 * without (IMPL_HAS_RW 0) would fail variants 1 and 2, not skip them. */
static int T(uncontended)(const struct bench_point *pt, double *v)
{
	static AD(mutex_t) m BENCH_ALIGNED;
	static uint64_t counter;
	long n = bench_opt.uncontended_ops / (pt->warmup ? 5 : 1);

	if (!bench_opt.uncontended_here)
		return bench_uncontended_spawn(BENCH_STR(IMPL), pt, v);

	counter = 0;
	uint64_t t0 = 0, dt = 0;
	if (pt->variant == 0) {
		AD(mutex_init)(&m);
		t0 = bench_now_ns();
		for (long i = 0; i < n; i++) {
			AD(lock)(&m);
			counter++;
			AD(unlock)(&m);
		}
		dt = bench_now_ns() - t0;
		AD(mutex_destroy)(&m);
	} else {
#if IMPL_HAS_RW
		static AD(rw_t) l BENCH_ALIGNED;
		AD(rw_init)(&l);
		t0 = bench_now_ns();
		if (pt->variant == 1) {
			for (long i = 0; i < n; i++) {
				AD(rdlock)(&l);
				counter++;
				AD(rdunlock)(&l);
			}
		} else {
			for (long i = 0; i < n; i++) {
				AD(wrlock)(&l);
				counter++;
				AD(wrunlock)(&l);
			}
		}
		dt = bench_now_ns() - t0;
		AD(rw_destroy)(&l);
#else
		return bench_fail(BENCH_STR(IMPL) " mutex-uncontended: no rwlock", EINVAL);
#endif
	}
	if (counter != (uint64_t)n)
		return bench_fail(BENCH_STR(IMPL) " mutex-uncontended: count mismatch", EPROTO);
	v[0] = (double)dt / (double)n;
	return 0;
}

/* ------------------------------------------------ mutex-contended */

struct T(cshared) {
	AD(mutex_t) m BENCH_ALIGNED;
	uint64_t counter BENCH_ALIGNED; /* written only under m */
	int stop BENCH_ALIGNED;
	uint32_t cs_iters;
	pthread_barrier_t start;
};

struct T(carg) {
	struct T(cshared) * sh;
	uint64_t ops;
} BENCH_ALIGNED;

static void *T(cthread)(void *p)
{
	struct T(carg) *a = p;
	struct T(cshared) *sh = a->sh;
	uint32_t it = sh->cs_iters;
	uint64_t ops = 0;

	pthread_barrier_wait(&sh->start);
	while (!__atomic_load_n(&sh->stop, __ATOMIC_RELAXED)) {
		AD(lock)(&sh->m);
		sh->counter++;
		bench_work_iters(it);
		AD(unlock)(&sh->m);
		ops++;
	}
	a->ops = ops;
	return NULL;
}

/* variant 0: short critical section (~10 ns), 1: long (~1 us). */
static int T(contended)(const struct bench_point *pt, double *v)
{
	int n = pt->threads;
	struct T(cshared) *sh = aligned_alloc(BENCH_CACHELINE, sizeof(*sh));
	struct T(carg) *args = aligned_alloc(BENCH_CACHELINE, sizeof(*args) * (size_t)n);
	pthread_t *tids = calloc((size_t)n, sizeof(*tids));
	int ret = -1;

	if (!sh || !args || !tids) {
		bench_fail("malloc", ENOMEM);
		goto out;
	}
	memset(sh, 0, sizeof(*sh));
	AD(mutex_init)(&sh->m);
	sh->cs_iters = bench_iters(pt->variant == 0 ? 10 : 1000);
	pthread_barrier_init(&sh->start, NULL, (unsigned)n + 1);
	for (int i = 0; i < n; i++)
		args[i] = (struct T(carg)){.sh = sh};
	if (bench_spawn(tids, n, T(cthread), args, sizeof(*args)))
		exit(2); /* the threads already started wait at the barrier forever */
	pthread_barrier_wait(&sh->start);
	uint64_t t0 = bench_now_ns();
	bench_sleep_ns(bench_duration_ns(pt));
	__atomic_store_n(&sh->stop, 1, __ATOMIC_RELAXED);
	uint64_t t1 = bench_now_ns();
	bench_join(tids, n);

	uint64_t ops = 0;
	for (int i = 0; i < n; i++)
		ops += args[i].ops;
	if (sh->counter != ops) {
		bench_fail(BENCH_STR(IMPL) " mutex-contended: lost updates (no exclusion)", EPROTO);
		goto out;
	}
	AD(mutex_destroy)(&sh->m);
	pthread_barrier_destroy(&sh->start);
	v[0] = (double)ops / (double)(t1 - t0) * 1e3; /* ops/ns -> Mops/s */
	ret = 0;
out:
	free(sh);
	free(args);
	free(tids);
	return ret;
}

/* ------------------------------------------------ rwlock-read-mostly */
#if IMPL_HAS_RW

struct T(rshared) {
	AD(rw_t) l BENCH_ALIGNED;
	uint64_t data[4] BENCH_ALIGNED; /* all equal outside a write */
	int stop BENCH_ALIGNED;
	int torn;
	pthread_barrier_t start;
};

struct T(rarg) {
	struct T(rshared) * sh;
	uint64_t seed, reads, writes;
} BENCH_ALIGNED;

static void *T(rthread)(void *p)
{
	struct T(rarg) *a = p;
	struct T(rshared) *sh = a->sh;
	uint64_t reads = 0, writes = 0, s = a->seed;
	bool torn = false;

	pthread_barrier_wait(&sh->start);
	while (!__atomic_load_n(&sh->stop, __ATOMIC_RELAXED)) {
		if (bench_xorshift(&s) % 100 < 5) {
			AD(wrlock)(&sh->l);
			for (int k = 0; k < 4; k++)
				sh->data[k]++;
			AD(wrunlock)(&sh->l);
			writes++;
		} else {
			AD(rdlock)(&sh->l);
			uint64_t d0 = sh->data[0];
			torn |= sh->data[1] != d0 || sh->data[2] != d0 || sh->data[3] != d0;
			AD(rdunlock)(&sh->l);
			reads++;
		}
	}
	if (torn)
		__atomic_store_n(&sh->torn, 1, __ATOMIC_RELAXED);
	a->reads = reads;
	a->writes = writes;
	return NULL;
}

static int T(rwlock)(const struct bench_point *pt, double *v)
{
	int n = pt->threads;
	struct T(rshared) *sh = aligned_alloc(BENCH_CACHELINE, sizeof(*sh));
	struct T(rarg) *args = aligned_alloc(BENCH_CACHELINE, sizeof(*args) * (size_t)n);
	pthread_t *tids = calloc((size_t)n, sizeof(*tids));
	int ret = -1;

	if (!sh || !args || !tids) {
		bench_fail("malloc", ENOMEM);
		goto out;
	}
	memset(sh, 0, sizeof(*sh));
	AD(rw_init)(&sh->l);
	pthread_barrier_init(&sh->start, NULL, (unsigned)n + 1);
	for (int i = 0; i < n; i++)
		args[i] =
		    (struct T(rarg)){.sh = sh, .seed = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1)};
	if (bench_spawn(tids, n, T(rthread), args, sizeof(*args)))
		exit(2); /* the threads already started wait at the barrier forever */
	pthread_barrier_wait(&sh->start);
	uint64_t t0 = bench_now_ns();
	bench_sleep_ns(bench_duration_ns(pt));
	__atomic_store_n(&sh->stop, 1, __ATOMIC_RELAXED);
	uint64_t t1 = bench_now_ns();
	bench_join(tids, n);

	uint64_t reads = 0, writes = 0;
	for (int i = 0; i < n; i++) {
		reads += args[i].reads;
		writes += args[i].writes;
	}
	if (sh->torn || sh->data[0] != writes || sh->data[3] != writes) {
		bench_fail(BENCH_STR(IMPL) " rwlock-read-mostly: torn read or lost write", EPROTO);
		goto out;
	}
	AD(rw_destroy)(&sh->l);
	pthread_barrier_destroy(&sh->start);
	v[0] = (double)(reads + writes) / (double)(t1 - t0) * 1e3;
	ret = 0;
out:
	free(sh);
	free(args);
	free(tids);
	return ret;
}
#endif

/* ------------------------------------------------ cond-pingpong, sem-pingpong */
#if IMPL_HAS_PP || IMPL_HAS_SEM

/* The turn goes through the adapter's pp_* (mutex + condvar) or, for
 * sem-pingpong, a semaphore per side. */
struct T(pshared) {
#if IMPL_HAS_PP
	AD(pp_t) pp BENCH_ALIGNED;
#endif
#if IMPL_HAS_SEM
	struct {
		AD(sem_t) s BENCH_ALIGNED;
	} side[2];
	int turn;   /* plain: whose turn, written before each post */
	int broken; /* plain: a semaphore wait returned out of turn */
#endif
	bool sem;
	int rounds;
};

static inline void T(pp_leg_pass)(struct T(pshared) *sh, int to)
{
#if IMPL_HAS_SEM
	if (sh->sem) {
		sh->turn = to;
		AD(sem_post)(&sh->side[to].s);
		return;
	}
#endif
#if IMPL_HAS_PP
	AD(pp_pass)(&sh->pp, to);
#endif
}

static inline void T(pp_leg_wait)(struct T(pshared) *sh, int me)
{
#if IMPL_HAS_SEM
	if (sh->sem) {
		AD(sem_wait)(&sh->side[me].s);
		if (sh->turn != me)
			sh->broken = 1;
		return;
	}
#endif
#if IMPL_HAS_PP
	AD(pp_wait)(&sh->pp, me);
#endif
}

static void *T(pthread_b)(void *p)
{
	struct T(pshared) *sh = p;
	for (int i = 0; i < sh->rounds; i++) {
		T(pp_leg_wait)(sh, 1);
		T(pp_leg_pass)(sh, 0);
	}
	return NULL;
}

/* Side 0 is the calling thread, side 1 a second thread; one round trip is
 * 0 -> 1 -> 0, each leg a wait woken by the other side's signal or post.
 * Variant 0: the two threads on CPUs 0 and 1 with --pin, else where the
 * scheduler puts them; variant 1 ("one-cpu"): both on the first allowed
 * CPU, where a waiter's spin runs the very thread that will wake it. */
static int T(pingpong_run)(const struct bench_point *pt, double *v, bool sem)
{
	struct T(pshared) *sh = aligned_alloc(BENCH_CACHELINE, sizeof(*sh));
	pthread_t tid;
	cpu_set_t old;
	bool one_cpu = pt->variant == 1;
	int r;

	if (!sh)
		return bench_fail("malloc", ENOMEM);
	memset(sh, 0, sizeof(*sh));
	sh->sem = sem;
#if IMPL_HAS_SEM
	if (sem) {
		AD(sem_init)(&sh->side[0].s, 0);
		AD(sem_init)(&sh->side[1].s, 0);
	}
#endif
#if IMPL_HAS_PP
	if (!sem)
		AD(pp_init)(&sh->pp);
#endif
	sh->rounds = bench_opt.pingpong_rounds / (pt->warmup ? 5 : 1);
	if (one_cpu) {
		if (bench_pin_self_first_cpu(&old))
			goto fail;
		r = bench_spawn_on_first_cpu(&tid, T(pthread_b), sh);
	} else {
		bench_pin_self(0);
		r = bench_spawn_on(&tid, 1, T(pthread_b), sh);
	}
	if (r)
		goto fail_pinned;
	uint64_t t0 = bench_now_ns();
	for (int i = 0; i < sh->rounds; i++) {
		T(pp_leg_pass)(sh, 1);
		T(pp_leg_wait)(sh, 0);
	}
	uint64_t t1 = bench_now_ns();
	pthread_join(tid, NULL);
	if (one_cpu)
		bench_unpin_self(&old);
	bool broken = false;
#if IMPL_HAS_SEM
	if (sem) {
		AD(sem_destroy)(&sh->side[0].s);
		AD(sem_destroy)(&sh->side[1].s);
		broken = sh->broken;
	}
#endif
#if IMPL_HAS_PP
	if (!sem)
		AD(pp_destroy)(&sh->pp);
#endif
	int rounds = sh->rounds;
	free(sh);
	if (broken) {
		fprintf(stderr, "ursa-bench: sem-pingpong (%s): a wait returned out of turn\n",
			BENCH_STR(IMPL));
		return -1;
	}
	v[0] = (double)(t1 - t0) / rounds / 1e3;
	return 0;
fail_pinned:
	if (one_cpu)
		bench_unpin_self(&old);
fail:
	free(sh);
	return -1;
}

#if IMPL_HAS_PP
static int T(pingpong)(const struct bench_point *pt, double *v)
{
	return T(pingpong_run)(pt, v, false);
}
#endif
#if IMPL_HAS_SEM
static int T(sem_pingpong)(const struct bench_point *pt, double *v)
{
	return T(pingpong_run)(pt, v, true);
}
#endif
#endif

/* ------------------------------------------------ handoff-latency */

struct T(hshared) {
	AD(mutex_t) m BENCH_ALIGNED;
	int armed BENCH_ALIGNED; /* sample i: holder has the lock (i + 1) */
	int locking;		 /* sample i: waiter is calling lock (i + 1) */
	int done;		 /* sample i: waiter has run (i + 1) */
	pid_t waiter_tid;
	int samples;
	uint64_t t_locked; /* waiter: just after its lock returned */
	uint64_t inside;   /* 1 while someone is inside, checked by the other */
	int broken;
};

static void *T(hwaiter)(void *p)
{
	struct T(hshared) *sh = p;
	__atomic_store_n(&sh->waiter_tid, bench_gettid(), __ATOMIC_RELEASE);
	for (int i = 1; i <= sh->samples; i++) {
		bench_yield_until_eq(&sh->armed, i);
		__atomic_store_n(&sh->locking, i, __ATOMIC_RELEASE);
		AD(lock)(&sh->m);
		uint64_t t = bench_now_ns();
		if (sh->inside)
			sh->broken = 1;
		sh->t_locked = t;
		AD(unlock)(&sh->m);
		__atomic_store_n(&sh->done, i, __ATOMIC_RELEASE);
	}
	return NULL;
}

/* The calling thread holds the mutex while the waiter blocks on it; once
 * the waiter sleeps (seen in /proc; spinning implementations get 100 us to
 * settle into their spin), take a timestamp and unlock. The sample is the
 * time until the waiter's lock call has returned. */
static int T(handoff)(const struct bench_point *pt, double *v)
{
	struct T(hshared) *sh = aligned_alloc(BENCH_CACHELINE, sizeof(*sh));
	int n = bench_opt.handoff_samples / (pt->warmup ? 5 : 1);
	uint64_t *lat = calloc((size_t)n, sizeof(*lat));
	pthread_t tid;
	int ret = -1;

	if (!sh || !lat) {
		bench_fail("malloc", ENOMEM);
		goto out;
	}
	memset(sh, 0, sizeof(*sh));
	AD(mutex_init)(&sh->m);
	sh->samples = n;
	bench_pin_self(0);
	if (bench_spawn_on(&tid, 1, T(hwaiter), sh))
		goto out;
	while (!__atomic_load_n(&sh->waiter_tid, __ATOMIC_ACQUIRE))
		sched_yield();
	for (int i = 1; i <= n; i++) {
		AD(lock)(&sh->m);
		sh->inside = 1;
		__atomic_store_n(&sh->armed, i, __ATOMIC_RELEASE);
		bench_yield_until_eq(&sh->locking, i);
		if (IMPL_SPINS)
			bench_sleep_ns(100000);
		else
			bench_wait_asleep(sh->waiter_tid, 100);
		sh->inside = 0;
		uint64_t t0 = bench_now_ns();
		AD(unlock)(&sh->m);
		bench_yield_until_eq(&sh->done, i);
		lat[i - 1] = sh->t_locked - t0;
	}
	pthread_join(tid, NULL);
	if (sh->broken) {
		bench_fail(BENCH_STR(IMPL) " handoff-latency: waiter ran while the lock was held",
			   EPROTO);
		goto out;
	}
	AD(mutex_destroy)(&sh->m);
	v[0] = (double)bench_quantile_u64(lat, (size_t)n, 0.5) / 1e3;
	ret = 0;
out:
	free(sh);
	free(lat);
	return ret;
}

/* ------------------------------------------------ registration */

static void T(register)(struct bench_scenario *unc, struct bench_scenario *con,
			struct bench_scenario *rw, struct bench_scenario *pp,
			struct bench_scenario *spp, struct bench_scenario *ho)
{
	const char *name = BENCH_STR(IMPL);
	bench_add_impl(unc, name, IMPL_NOTE, T(uncontended));
	bench_add_impl(con, name, IMPL_NOTE, T(contended));
#if IMPL_HAS_RW
	bench_add_impl(rw, name, IMPL_NOTE, T(rwlock));
#else
	(void)rw;
#endif
#if IMPL_HAS_PP
	bench_add_impl(pp, name, IMPL_PP_NOTE, T(pingpong));
#else
	(void)pp;
#endif
#if IMPL_HAS_SEM
	bench_add_impl(spp, name, NULL, T(sem_pingpong));
#else
	(void)spp;
#endif
	bench_add_impl(ho, name, IMPL_NOTE, T(handoff));
}

#undef AD
#undef T
#undef IMPL
#undef IMPL_NOTE
#undef IMPL_PP_NOTE
#undef IMPL_HAS_RW
#undef IMPL_HAS_PP
#undef IMPL_HAS_SEM
#undef IMPL_SPINS
