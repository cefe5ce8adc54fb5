/* SPDX-License-Identifier: MIT */
/* tests/unit/shim_mutex.c — libursa-pthread: pthread_mutex_* per kind. */
#include "tests/unit/shim_test.h"

#include <semaphore.h>
#include <stdint.h>

TestSuite(shim_mutex, .timeout = 60, .init = shim_t_require);

/* robust: PTHREAD_MUTEX_STALLED (ursa's kinds) or PTHREAD_MUTEX_ROBUST. */
static void init_attrs(pthread_mutex_t *m, int type, int pshared, int robust)
{
	pthread_mutexattr_t a;
	cr_assert_eq(pthread_mutexattr_init(&a), 0);
	cr_assert_eq(pthread_mutexattr_settype(&a, type), 0);
	cr_assert_eq(pthread_mutexattr_setpshared(&a, pshared), 0);
	cr_assert_eq(pthread_mutexattr_setrobust(&a, robust), 0);
	cr_assert_eq(pthread_mutex_init(m, &a), 0);
	pthread_mutexattr_destroy(&a);
}

static void init_kind(pthread_mutex_t *m, int type, int pshared)
{
	init_attrs(m, type, pshared, PTHREAD_MUTEX_STALLED);
}

SHIM_T_IN_OTHER_THREAD(pthread_mutex_t)

Test(shim_mutex, every_function_is_the_shims)
{
	void *fns[] = {(void *)pthread_mutex_init,	(void *)pthread_mutex_destroy,
		       (void *)pthread_mutex_lock,	(void *)pthread_mutex_trylock,
		       (void *)pthread_mutex_timedlock, (void *)pthread_mutex_clocklock,
		       (void *)pthread_mutex_unlock,	(void *)pthread_mutex_consistent};
	shim_t_resolve_to_shim(fns, sizeof(fns) / sizeof(fns[0]));
}

Test(shim_mutex, the_shim_handles_the_calls)
{
	/* glibc records the owner and a user count even for a normal mutex;
	 * ursa's mutex is its word alone. */
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	cr_assert_eq(pthread_mutex_lock(&m), 0);
	cr_assert_eq(m.__data.__owner, 0);
	cr_assert_eq(m.__data.__nusers, 0);
	cr_assert_eq(pthread_mutex_unlock(&m), 0);
	/* glibc lets a normal mutex be unlocked twice; ursa says EPERM. */
	cr_assert_eq(pthread_mutex_unlock(&m), EPERM);
}

Test(shim_mutex, static_initializers)
{
	pthread_mutex_t n = PTHREAD_MUTEX_INITIALIZER;
	pthread_mutex_t r = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
	pthread_mutex_t e = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
	pthread_mutex_t a = PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP;

	cr_assert_eq(pthread_mutex_lock(&n), 0);
	cr_assert_eq(pthread_mutex_trylock(&n), EBUSY);
	cr_assert_eq(pthread_mutex_unlock(&n), 0);

	cr_assert_eq(pthread_mutex_lock(&r), 0);
	cr_assert_eq(pthread_mutex_lock(&r), 0);
	cr_assert_eq(pthread_mutex_trylock(&r), 0);
	cr_assert_eq(in_other_thread(&r, pthread_mutex_trylock), EBUSY);
	cr_assert_eq(pthread_mutex_unlock(&r), 0);
	cr_assert_eq(pthread_mutex_unlock(&r), 0);
	cr_assert_eq(in_other_thread(&r, pthread_mutex_trylock), EBUSY);
	cr_assert_eq(pthread_mutex_unlock(&r), 0);
	cr_assert_eq(pthread_mutex_unlock(&r), EPERM);

	cr_assert_eq(pthread_mutex_lock(&e), 0);
	cr_assert_eq(pthread_mutex_lock(&e), EDEADLK);
	cr_assert_eq(pthread_mutex_trylock(&e), EBUSY);
	cr_assert_eq(in_other_thread(&e, pthread_mutex_unlock), EPERM);
	cr_assert_eq(pthread_mutex_unlock(&e), 0);
	cr_assert_eq(pthread_mutex_unlock(&e), EPERM);

	cr_assert_eq(pthread_mutex_lock(&a), 0);
	cr_assert_eq(in_other_thread(&a, pthread_mutex_trylock), EBUSY);
	cr_assert_eq(pthread_mutex_unlock(&a), 0);

	pthread_mutex_t *all[] = {&n, &r, &e, &a};
	for (int i = 0; i < 4; i++)
		cr_assert_eq(pthread_mutex_destroy(all[i]), 0, "initializer %d", i);
}

Test(shim_mutex, recursive_counts)
{
	pthread_mutex_t m;
	init_kind(&m, PTHREAD_MUTEX_RECURSIVE, PTHREAD_PROCESS_PRIVATE);
	for (int i = 0; i < 1000; i++)
		cr_assert_eq(i % 2 ? pthread_mutex_lock(&m) : pthread_mutex_trylock(&m), 0);
	for (int i = 0; i < 1000; i++) {
		cr_assert_eq(in_other_thread(&m, pthread_mutex_trylock), EBUSY);
		cr_assert_eq(pthread_mutex_unlock(&m), 0);
	}
	cr_assert_eq(pthread_mutex_unlock(&m), EPERM);
	cr_assert_eq(in_other_thread(&m, pthread_mutex_trylock), 0);
	/* The other thread exited holding it: a recursive mutex stays owned. */
	cr_assert_eq(pthread_mutex_trylock(&m), EBUSY);
	cr_assert_eq(pthread_mutex_unlock(&m), EPERM);
}

Test(shim_mutex, errorcheck_errors)
{
	pthread_mutex_t m;
	init_kind(&m, PTHREAD_MUTEX_ERRORCHECK, PTHREAD_PROCESS_PRIVATE);
	cr_assert_eq(pthread_mutex_unlock(&m), EPERM);
	cr_assert_eq(pthread_mutex_lock(&m), 0);
	cr_assert_eq(pthread_mutex_lock(&m), EDEADLK);
	struct timespec ts = t_deadline(CLOCK_REALTIME, 1000);
	cr_assert_eq(pthread_mutex_timedlock(&m, &ts), EDEADLK);
	cr_assert_eq(in_other_thread(&m, pthread_mutex_unlock), EPERM);
	cr_assert_eq(pthread_mutex_destroy(&m), EBUSY);
	cr_assert_eq(pthread_mutex_unlock(&m), 0);
	cr_assert_eq(pthread_mutex_destroy(&m), 0);
}

Test(shim_mutex, bad_attributes)
{
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	struct timespec ts = {0, 0};
	cr_assert_eq(pthread_mutex_clocklock(&m, CLOCK_PROCESS_CPUTIME_ID, &ts), EINVAL);
	cr_assert_eq(pthread_mutex_consistent(&m), EINVAL); /* not robust */
	cr_assert_eq(pthread_mutex_lock(&m), 0);
	ts.tv_nsec = 1000000000L;
	cr_assert_eq(pthread_mutex_timedlock(&m, &ts), EINVAL);
	ts.tv_nsec = -1;
	cr_assert_eq(pthread_mutex_clocklock(&m, CLOCK_MONOTONIC, &ts), EINVAL);
	cr_assert_eq(pthread_mutex_unlock(&m), 0);
	/* POSIX: a lock free now is taken without looking at the deadline. */
	cr_assert_eq(pthread_mutex_timedlock(&m, &ts), 0);
	cr_assert_eq(pthread_mutex_unlock(&m), 0);
}

/* For struct shim_t_timed: timedlock on CLOCK_REALTIME, clocklock on the others. */
static int timed_lock(void *m, int how, clockid_t clk, const struct timespec *dl)
{
	(void)how;
	return clk == CLOCK_REALTIME ? pthread_mutex_timedlock(m, dl)
				     : pthread_mutex_clocklock(m, clk, dl);
}

static void check_times_out(int type)
{
	pthread_mutex_t m;
	clockid_t clocks[] = {CLOCK_REALTIME, CLOCK_MONOTONIC};
	init_kind(&m, type, PTHREAD_PROCESS_PRIVATE);
	cr_assert_eq(pthread_mutex_lock(&m), 0);
	for (int i = 0; i < 2; i++) {
		for (long ms = -5; ms <= 20; ms += 25) {
			struct shim_t_timed t = {
			    .call = timed_lock, .obj = &m, .clk = clocks[i], .ms = ms};
			cr_assert_eq(shim_t_timed_run(&t), ETIMEDOUT, "type %d clock %d ms %ld: %d",
				     type, (int)clocks[i], ms, t.ret);
			cr_assert_eq(t.err_after, 4242, "errno changed to %d", t.err_after);
		}
	}
	/* A deadline before 1970 is simply past. */
	struct timespec old = {-1, 0};
	cr_assert_eq(in_other_thread(&m, pthread_mutex_trylock), EBUSY);
	cr_assert_eq(pthread_mutex_unlock(&m), 0);
	cr_assert_eq(pthread_mutex_timedlock(&m, &old), 0);
	cr_assert_eq(pthread_mutex_unlock(&m), 0);
}

Test(shim_mutex, timed_variants_time_out)
{
	check_times_out(PTHREAD_MUTEX_NORMAL);
	check_times_out(PTHREAD_MUTEX_RECURSIVE);
	check_times_out(PTHREAD_MUTEX_ERRORCHECK);
	check_times_out(PTHREAD_MUTEX_ADAPTIVE_NP);
}

Test(shim_mutex, timedlock_gets_a_released_lock)
{
	pthread_mutex_t m = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
	struct shim_t_timed t = {
	    .call = timed_lock, .obj = &m, .clk = CLOCK_MONOTONIC, .ms = 20000};
	pthread_t th;
	cr_assert_eq(pthread_mutex_lock(&m), 0);
	shim_t_timed_start(&t, &th);
	cr_assert_eq(pthread_mutex_unlock(&m), 0);
	cr_assert_eq(pthread_join(th, NULL), 0);
	cr_assert_eq(t.ret, 0);
	/* It was locked by the thread (now gone) and recorded as its. */
	cr_assert_eq(pthread_mutex_unlock(&m), EPERM);
}

/* ------------------------------------------------------------ exclusion */

#define THREADS 4
#define ITERS	20000

struct excl {
	pthread_mutex_t m;
	int type;
	atomic_int inside;
	long counter;
	bool bad;
};

static void excl_round(struct excl *x)
{
	int r = x->type == PTHREAD_MUTEX_ERRORCHECK ? pthread_mutex_trylock(&x->m) : EBUSY;
	if (r == EBUSY)
		r = pthread_mutex_lock(&x->m);
	if (r)
		x->bad = true;
	if (x->type == PTHREAD_MUTEX_RECURSIVE && pthread_mutex_lock(&x->m))
		x->bad = true;
	if (atomic_fetch_add(&x->inside, 1) != 0)
		x->bad = true;
	x->counter++;
	atomic_fetch_sub(&x->inside, 1);
	if (x->type == PTHREAD_MUTEX_RECURSIVE && pthread_mutex_unlock(&x->m))
		x->bad = true;
	if (pthread_mutex_unlock(&x->m))
		x->bad = true;
}

static void *excl_fn(void *p)
{
	for (int i = 0; i < ITERS; i++)
		excl_round(p);
	return NULL;
}

static void check_exclusion(int type)
{
	struct excl x = {.type = type};
	pthread_t t[THREADS];
	init_kind(&x.m, type, PTHREAD_PROCESS_PRIVATE);
	for (int i = 0; i < THREADS; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, excl_fn, &x), 0);
	t_join_all(t, THREADS);
	cr_assert(!x.bad, "type %d: exclusion or an error code broke", type);
	cr_assert_eq(x.counter, (long)THREADS * ITERS);
	cr_assert_eq(pthread_mutex_destroy(&x.m), 0);
}

Test(shim_mutex, exclusion_normal)
{
	check_exclusion(PTHREAD_MUTEX_NORMAL);
}

Test(shim_mutex, exclusion_recursive)
{
	check_exclusion(PTHREAD_MUTEX_RECURSIVE);
}

Test(shim_mutex, exclusion_errorcheck)
{
	check_exclusion(PTHREAD_MUTEX_ERRORCHECK);
}

Test(shim_mutex, exclusion_adaptive)
{
	check_exclusion(PTHREAD_MUTEX_ADAPTIVE_NP);
}

/* ------------------------------------------------------------ processes */

#define PROCS 3

static bool proc_rounds(int i, void *arg)
{
	struct excl *x = arg;
	(void)i;
	for (int k = 0; k < ITERS / 4; k++)
		excl_round(x);
	return !x->bad;
}

static void check_shared(int type)
{
	struct excl *x = t_shared_alloc(sizeof(*x));
	x->type = type;
	init_kind(&x->m, type, PTHREAD_PROCESS_SHARED);
	cr_assert(t_fork_all(PROCS, proc_rounds, x));
	cr_assert_eq(x->counter, (long)PROCS * (ITERS / 4));
	cr_assert_eq(pthread_mutex_destroy(&x->m), 0);
	t_shared_free(x, sizeof(*x));
}

Test(shim_mutex, process_shared_normal)
{
	check_shared(PTHREAD_MUTEX_NORMAL);
}

Test(shim_mutex, process_shared_recursive)
{
	check_shared(PTHREAD_MUTEX_RECURSIVE);
}

Test(shim_mutex, process_shared_errorcheck)
{
	check_shared(PTHREAD_MUTEX_ERRORCHECK);
}

static pthread_mutex_t *shared_m;

static bool child_sees_new_owner(void *arg)
{
	(void)arg;
	/* The parent holds it: the child's thread is someone else. */
	if (pthread_mutex_unlock(shared_m) != EPERM || pthread_mutex_trylock(shared_m) != EBUSY)
		return false;
	return true;
}

static bool child_owns_after_fork(void *arg)
{
	pthread_mutex_t *fresh = arg;
	/* The fork handler must have refreshed the cached tid: the child's
	 * ownership is recorded under its own tid, not its parent's. */
	if (pthread_mutex_lock(fresh) || pthread_mutex_lock(fresh) != EDEADLK)
		return false;
	if (fresh->__data.__owner != gettid())
		return false;
	return pthread_mutex_unlock(fresh) == 0;
}

static bool child_cannot_relock(void *arg)
{
	pthread_mutex_t *held = arg;
	return pthread_mutex_trylock(held) == EBUSY && pthread_mutex_unlock(held) == EPERM;
}

Test(shim_mutex, errorcheck_across_fork)
{
	shared_m = t_shared_alloc(2 * sizeof(pthread_mutex_t));
	init_kind(&shared_m[0], PTHREAD_MUTEX_ERRORCHECK, PTHREAD_PROCESS_SHARED);
	init_kind(&shared_m[1], PTHREAD_MUTEX_ERRORCHECK, PTHREAD_PROCESS_SHARED);
	/* Learn our tid through the shim before forking, so a stale cache in
	 * the child would show. */
	cr_assert_eq(pthread_mutex_lock(&shared_m[0]), 0);
	cr_assert(shim_t_in_child(child_sees_new_owner, NULL));
	cr_assert(shim_t_in_child(child_owns_after_fork, &shared_m[1]));
	cr_assert_eq(pthread_mutex_unlock(&shared_m[0]), 0);
	t_shared_free(shared_m, 2 * sizeof(pthread_mutex_t));
}

/* A child made by _Fork() runs no fork handler, and a library's child
 * handler registered before the shim's runs before it: neither may see the
 * parent thread's tid as its own (glibc's fork and _Fork update the tid
 * first). The shim's tid cache is dated by a word that every fork child
 * sees zeroed (kernel/proc.h), so it is looked up again in both. */
Test(shim_mutex, errorcheck_and_recursive_across__Fork)
{
	shared_m = t_shared_alloc(3 * sizeof(pthread_mutex_t));
	init_kind(&shared_m[0], PTHREAD_MUTEX_ERRORCHECK, PTHREAD_PROCESS_SHARED);
	init_kind(&shared_m[1], PTHREAD_MUTEX_ERRORCHECK, PTHREAD_PROCESS_SHARED);
	init_kind(&shared_m[2], PTHREAD_MUTEX_RECURSIVE, PTHREAD_PROCESS_SHARED);
	cr_assert_eq(pthread_mutex_lock(&shared_m[0]), 0);
	cr_assert_eq(pthread_mutex_lock(&shared_m[2]), 0);
	cr_assert(shim_t_reaped_ok(shim_t_spawn_by(_Fork, child_sees_new_owner, NULL)));
	cr_assert(shim_t_reaped_ok(shim_t_spawn_by(_Fork, child_owns_after_fork, &shared_m[1])));
	/* The parent holds the recursive one: the child may not take it. */
	cr_assert(shim_t_reaped_ok(shim_t_spawn_by(_Fork, child_cannot_relock, &shared_m[2])));
	cr_assert_eq(pthread_mutex_unlock(&shared_m[2]), 0);
	cr_assert_eq(pthread_mutex_unlock(&shared_m[0]), 0);
	t_shared_free(shared_m, 3 * sizeof(pthread_mutex_t));
}

/* --------------------------------------------------- glibc's own kinds */

static void init_robust(pthread_mutex_t *m, int pshared)
{
	init_attrs(m, PTHREAD_MUTEX_DEFAULT, pshared, PTHREAD_MUTEX_ROBUST);
}

static bool die_holding(void *arg)
{
	return pthread_mutex_lock(arg) == 0; /* exits without unlocking */
}

Test(shim_mutex, robust_is_glibcs_across_processes)
{
	pthread_mutex_t *m = t_shared_alloc(sizeof(*m));
	init_robust(m, PTHREAD_PROCESS_SHARED);
	cr_assert(m->__data.__kind & 16, "glibc's robust kind bit");
	cr_assert(shim_t_in_child(die_holding, m));
	cr_assert_eq(pthread_mutex_lock(m), EOWNERDEAD);
	/* glibc's lock, not ursa's: the futex word is the owner's tid, and
	 * the owner field says "inconsistent" until pthread_mutex_consistent. */
	cr_assert_eq(m->__data.__lock & 0x3fffffff, gettid());
	cr_assert_eq(m->__data.__owner, 0x7fffffff);
	cr_assert_eq(pthread_mutex_consistent(m), 0);
	cr_assert_eq(m->__data.__owner, gettid());
	cr_assert_eq(pthread_mutex_unlock(m), 0);
	cr_assert_eq(pthread_mutex_trylock(m), 0);
	cr_assert_eq(pthread_mutex_unlock(m), 0);
	cr_assert_eq(pthread_mutex_destroy(m), 0);
	t_shared_free(m, sizeof(*m));
}

static void *thread_dies_holding(void *arg)
{
	pthread_mutex_lock(arg);
	return NULL;
}

Test(shim_mutex, robust_thread_death)
{
	pthread_mutex_t m;
	pthread_t t;
	struct timespec ts = t_deadline(CLOCK_MONOTONIC, 10000);
	init_robust(&m, PTHREAD_PROCESS_PRIVATE);
	cr_assert_eq(pthread_create(&t, NULL, thread_dies_holding, &m), 0);
	cr_assert_eq(pthread_join(t, NULL), 0);
	cr_assert_eq(pthread_mutex_clocklock(&m, CLOCK_MONOTONIC, &ts), EOWNERDEAD);
	cr_assert_eq(pthread_mutex_consistent(&m), 0);
	cr_assert_eq(pthread_mutex_unlock(&m), 0);
	cr_assert_eq(pthread_mutex_timedlock(&m, &ts), 0);
	cr_assert_eq(pthread_mutex_unlock(&m), 0);
	cr_assert_eq(pthread_mutex_destroy(&m), 0);
}

Test(shim_mutex, priority_inherit_is_glibcs)
{
	pthread_mutexattr_t a;
	pthread_mutex_t m;
	cr_assert_eq(pthread_mutexattr_init(&a), 0);
	cr_assert_eq(pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_INHERIT), 0);
	cr_assert_eq(pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK), 0);
	cr_assert_eq(pthread_mutex_init(&m, &a), 0);
	pthread_mutexattr_destroy(&a);
	cr_assert(m.__data.__kind & 32, "glibc's priority-inherit kind bit");
	cr_assert_eq(pthread_mutex_lock(&m), 0);
	cr_assert_eq(m.__data.__lock & 0x3fffffff, gettid(), "PI futex holds the owner tid");
	cr_assert_eq(pthread_mutex_lock(&m), EDEADLK);
	cr_assert_eq(in_other_thread(&m, pthread_mutex_trylock), EBUSY);
	cr_assert_eq(pthread_mutex_unlock(&m), 0);
	cr_assert_eq(pthread_mutex_destroy(&m), 0);
}

/* --------------------------------------------------- before main */

static int ctor_result = -1;

__attribute__((constructor)) static void lock_in_constructor(void)
{
#if !defined(__SANITIZE_THREAD__) /* its model flags the EPERM probe; suite skipped */
	static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	static pthread_mutex_t r = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
	ctor_result = pthread_mutex_lock(&m) | pthread_mutex_lock(&r) | pthread_mutex_lock(&r) |
		      pthread_mutex_unlock(&r) | pthread_mutex_unlock(&r) |
		      pthread_mutex_unlock(&m) | (pthread_mutex_unlock(&r) != EPERM);
#endif
}

Test(shim_mutex, usable_in_constructors)
{
	cr_assert_eq(ctor_result, 0);
}

/* ------------------------------------------------------------ alignment */

/* A pthread object the shim keeps an ursa word in must be 4-byte aligned:
 * a misaligned one gets EINVAL from its init and, initialised statically
 * (all zero, no init call), from its first call — not later, under
 * contention, when the futex call would refuse it. */
Test(shim_mutex, misaligned_objects_refused)
{
	static _Alignas(64) unsigned char buf[1024];
	for (size_t off = 1; off < 4; off++) {
		memset(buf, 0, sizeof(buf));
		void *p = buf + 64 + off;
		pthread_mutex_t *m = p;
		pthread_cond_t *c = p;
		pthread_rwlock_t *l = p;
		sem_t *s = p;
		cr_assert_eq(pthread_mutex_init(m, NULL), EINVAL, "offset %zu", off);
		cr_assert_eq(pthread_mutex_lock(m), EINVAL);
		cr_assert_eq(pthread_mutex_trylock(m), EINVAL);
		cr_assert_eq(pthread_mutex_unlock(m), EINVAL);
		struct timespec dl = t_deadline(CLOCK_REALTIME, 10);
		cr_assert_eq(pthread_mutex_timedlock(m, &dl), EINVAL);
		cr_assert_eq(pthread_mutex_clocklock(m, CLOCK_MONOTONIC, &dl), EINVAL);
		cr_assert_eq(pthread_cond_init(c, NULL), EINVAL);
		cr_assert_eq(pthread_cond_signal(c), EINVAL);
		cr_assert_eq(pthread_cond_broadcast(c), EINVAL);
		pthread_mutex_t ok = PTHREAD_MUTEX_INITIALIZER;
		pthread_mutex_lock(&ok);
		cr_assert_eq(pthread_cond_wait(c, &ok), EINVAL);
		cr_assert_eq(pthread_cond_timedwait(c, &ok, &dl), EINVAL);
		cr_assert_eq(pthread_cond_clockwait(c, &ok, CLOCK_MONOTONIC, &dl), EINVAL);
		pthread_mutex_unlock(&ok);
		cr_assert_eq(pthread_rwlock_init(l, NULL), EINVAL);
		cr_assert_eq(pthread_rwlock_rdlock(l), EINVAL);
		cr_assert_eq(pthread_rwlock_wrlock(l), EINVAL);
		cr_assert_eq(pthread_rwlock_tryrdlock(l), EINVAL);
		cr_assert_eq(pthread_rwlock_trywrlock(l), EINVAL);
		cr_assert_eq(pthread_rwlock_unlock(l), EINVAL);
		errno = 0;
		cr_assert_eq(sem_init(s, 0, 1), -1);
		cr_assert_eq(errno, EINVAL);
	}
}
