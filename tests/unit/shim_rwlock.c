/* SPDX-License-Identifier: MIT */
/* tests/unit/shim_rwlock.c — libursa-pthread: pthread_rwlock_* per kind. */
#include "tests/unit/shim_test.h"

#include "lib/shim/shim.h"		/* the overlay, for the waiter-limit tests */
#include "tests/unit/rwlock_layout.h" /* ursa_rwlock_t's word, likewise */

TestSuite(shim_rwlock, .timeout = 60, .init = shim_t_require);

static void init_kind(pthread_rwlock_t *l, int kind, int pshared)
{
	pthread_rwlockattr_t a;
	cr_assert_eq(pthread_rwlockattr_init(&a), 0);
	cr_assert_eq(pthread_rwlockattr_setkind_np(&a, kind), 0);
	cr_assert_eq(pthread_rwlockattr_setpshared(&a, pshared), 0);
	cr_assert_eq(pthread_rwlock_init(l, &a), 0);
	pthread_rwlockattr_destroy(&a);
}

static const int kinds[] = {PTHREAD_RWLOCK_PREFER_READER_NP, PTHREAD_RWLOCK_PREFER_WRITER_NP,
			    PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP};

Test(shim_rwlock, every_function_is_the_shims)
{
	void *fns[] = {
	    (void *)pthread_rwlock_init,	(void *)pthread_rwlock_destroy,
	    (void *)pthread_rwlock_rdlock,	(void *)pthread_rwlock_tryrdlock,
	    (void *)pthread_rwlock_timedrdlock, (void *)pthread_rwlock_clockrdlock,
	    (void *)pthread_rwlock_wrlock,	(void *)pthread_rwlock_trywrlock,
	    (void *)pthread_rwlock_timedwrlock, (void *)pthread_rwlock_clockwrlock,
	    (void *)pthread_rwlock_unlock,
	};
	shim_t_resolve_to_shim(fns, sizeof(fns) / sizeof(fns[0]));
}

SHIM_T_IN_OTHER_THREAD(pthread_rwlock_t)

static void check_basics(pthread_rwlock_t *l)
{
	cr_assert_eq(pthread_rwlock_unlock(l), EPERM);
	cr_assert_eq(pthread_rwlock_rdlock(l), 0);
	cr_assert_eq(pthread_rwlock_tryrdlock(l), 0);
	cr_assert_eq(in_other_thread(l, pthread_rwlock_tryrdlock), 0); /* left held by it */
	cr_assert_eq(in_other_thread(l, pthread_rwlock_trywrlock), EBUSY);
	cr_assert_eq(pthread_rwlock_trywrlock(l), EBUSY);
	cr_assert_eq(pthread_rwlock_destroy(l), EBUSY);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(pthread_rwlock_unlock(l), 0);
	cr_assert_eq(pthread_rwlock_unlock(l), EPERM);

	cr_assert_eq(pthread_rwlock_wrlock(l), 0);
	cr_assert_eq(pthread_rwlock_wrlock(l), EDEADLK);
	cr_assert_eq(pthread_rwlock_rdlock(l), EDEADLK);
	cr_assert_eq(pthread_rwlock_trywrlock(l), EBUSY);
	cr_assert_eq(in_other_thread(l, pthread_rwlock_tryrdlock), EBUSY);
	cr_assert_eq(in_other_thread(l, pthread_rwlock_trywrlock), EBUSY);
	cr_assert_eq(pthread_rwlock_unlock(l), 0);
	cr_assert_eq(pthread_rwlock_unlock(l), EPERM);
	cr_assert_eq(in_other_thread(l, pthread_rwlock_trywrlock), 0);
	cr_assert_eq(pthread_rwlock_unlock(l), 0); /* POSIX leaves it undefined; works here */
	cr_assert_eq(pthread_rwlock_destroy(l), 0);
}

Test(shim_rwlock, static_initializers)
{
	pthread_rwlock_t d = PTHREAD_RWLOCK_INITIALIZER;
	pthread_rwlock_t w = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;
	check_basics(&d);
	check_basics(&w);
}

Test(shim_rwlock, each_kind)
{
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		pthread_rwlock_t l;
		init_kind(&l, kinds[k], PTHREAD_PROCESS_PRIVATE);
		check_basics(&l);
	}
}

Test(shim_rwlock, bad_arguments)
{
	pthread_rwlock_t l = PTHREAD_RWLOCK_INITIALIZER;
	pthread_rwlockattr_t a;
	struct timespec ts = {0, 1000000000L};
	cr_assert_eq(pthread_rwlock_timedrdlock(&l, &ts), EINVAL);
	cr_assert_eq(pthread_rwlock_timedwrlock(&l, &ts), EINVAL);
	ts.tv_nsec = 0;
	cr_assert_eq(pthread_rwlock_clockrdlock(&l, CLOCK_PROCESS_CPUTIME_ID, &ts), EINVAL);
	cr_assert_eq(pthread_rwlock_clockwrlock(&l, CLOCK_THREAD_CPUTIME_ID, &ts), EINVAL);
	/* Nothing was taken. */
	cr_assert_eq(pthread_rwlock_trywrlock(&l), 0);
	cr_assert_eq(pthread_rwlock_unlock(&l), 0);
	/* A kind glibc would refuse. */
	cr_assert_eq(pthread_rwlockattr_init(&a), 0);
	cr_assert_eq(pthread_rwlockattr_setkind_np(&a, 7), EINVAL);
	pthread_rwlockattr_destroy(&a);
}

/* ------------------------------------------------------------ timeouts */

/* How a struct shim_t_timed takes the lock: read or write; the timed
 * or the clock variant, or (BLOCKING) no deadline at all. A lock it got it
 * drops again. */
#define RW_WRITE    1
#define RW_CLOCKED  2
#define RW_BLOCKING 4

static int rw_call(void *l, int how, clockid_t clk, const struct timespec *dl)
{
	bool write = how & RW_WRITE;
	int r;
	if (how & RW_BLOCKING)
		r = write ? pthread_rwlock_wrlock(l) : pthread_rwlock_rdlock(l);
	else if (how & RW_CLOCKED)
		r = write ? pthread_rwlock_clockwrlock(l, clk, dl)
			  : pthread_rwlock_clockrdlock(l, clk, dl);
	else
		r = write ? pthread_rwlock_timedwrlock(l, dl) : pthread_rwlock_timedrdlock(l, dl);
	if (r == 0)
		pthread_rwlock_unlock(l);
	return r;
}

static int timed_in_thread(pthread_rwlock_t *l, bool write, clockid_t clk, long ms, bool clocked)
{
	struct shim_t_timed t = {.call = rw_call,
				 .obj = l,
				 .how = (write ? RW_WRITE : 0) | (clocked ? RW_CLOCKED : 0),
				 .clk = clk,
				 .ms = ms};
	int r = shim_t_timed_run(&t);
	cr_assert_eq(t.err_after, 4242, "errno changed");
	return r;
}

Test(shim_rwlock, timed_variants)
{
	clockid_t clocks[] = {CLOCK_REALTIME, CLOCK_MONOTONIC};
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		pthread_rwlock_t l;
		init_kind(&l, kinds[k], PTHREAD_PROCESS_PRIVATE);
		for (int c = 0; c < 2; c++) {
			bool clocked = clocks[c] == CLOCK_MONOTONIC;
			for (long ms = -5; ms <= 20; ms += 25) {
				cr_assert_eq(pthread_rwlock_rdlock(&l), 0);
				cr_assert_eq(timed_in_thread(&l, true, clocks[c], ms, clocked),
					     ETIMEDOUT);
				/* With only readers in, readers enter (the writer-
				 * preferring kind: see the next test). */
				if (kinds[k] != PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP)
					cr_assert_eq(
					    timed_in_thread(&l, false, clocks[c], ms, clocked), 0);
				cr_assert_eq(pthread_rwlock_unlock(&l), 0);
				cr_assert_eq(pthread_rwlock_wrlock(&l), 0);
				cr_assert_eq(timed_in_thread(&l, false, clocks[c], ms, clocked),
					     ETIMEDOUT);
				cr_assert_eq(timed_in_thread(&l, true, clocks[c], ms, clocked),
					     ETIMEDOUT);
				cr_assert_eq(pthread_rwlock_unlock(&l), 0);
			}
		}
		/* Free now: taken whatever the deadline says. */
		struct timespec past = {-1, 0};
		cr_assert_eq(pthread_rwlock_timedwrlock(&l, &past), 0);
		cr_assert_eq(pthread_rwlock_unlock(&l), 0);
		cr_assert_eq(pthread_rwlock_destroy(&l), 0);
	}
}

/* A writer that gave up no longer waits: readers enter again while only
 * readers hold the lock, on the writer-preferring kind too. */
Test(shim_rwlock, timed_out_writer_stops_blocking_readers)
{
	pthread_rwlock_t l = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;
	cr_assert_eq(pthread_rwlock_rdlock(&l), 0);
	cr_assert_eq(timed_in_thread(&l, true, CLOCK_MONOTONIC, 5, true), ETIMEDOUT);
	cr_assert_eq(timed_in_thread(&l, false, CLOCK_MONOTONIC, 1000, true), 0);
	cr_assert_eq(pthread_rwlock_unlock(&l), 0);
}

/* ------------------------------------------- reader vs writer preference */

/* Read-lock l, then start a writer on it (blocking wrlock, then unlock):
 * returns once the writer is about to call wrlock. */
static void start_writer(pthread_rwlock_t *l, struct shim_t_timed *w, pthread_t *t)
{
	*w = (struct shim_t_timed){.call = rw_call, .obj = l, .how = RW_WRITE | RW_BLOCKING};
	cr_assert_eq(pthread_rwlock_rdlock(l), 0);
	shim_t_timed_start(w, t);
	shim_t_await(&w->started);
}

/* The writer got the lock once the readers left; l is free again. */
static void join_writer(pthread_rwlock_t *l, struct shim_t_timed *w, pthread_t t)
{
	cr_assert_eq(pthread_join(t, NULL), 0);
	cr_assert_eq(w->ret, 0);
	cr_assert_eq(pthread_rwlock_destroy(l), 0);
}

/* The default kind: with a writer waiting, a thread that holds a read lock
 * takes another (POSIX: recursive read locks work), and so does any reader. */
Test(shim_rwlock, default_kind_reads_recursively_past_a_waiting_writer)
{
	pthread_rwlock_t l = PTHREAD_RWLOCK_INITIALIZER;
	struct shim_t_timed w;
	pthread_t t;
	start_writer(&l, &w, &t);
	/* Wait until the writer has announced itself (the shim's WAITERS bit,
	 * lib/shim/rwlock.c), so the reads below really race a waiting writer. */
	while (!(__atomic_load_n((uint32_t *)(void *)&l, __ATOMIC_ACQUIRE) & 0x40000000u))
		sched_yield();
	cr_assert_eq(pthread_rwlock_rdlock(&l), 0);
	cr_assert_eq(pthread_rwlock_tryrdlock(&l), 0);
	cr_assert_eq(in_other_thread(&l, pthread_rwlock_tryrdlock), 0);
	for (int i = 0; i < 4; i++)
		cr_assert_eq(pthread_rwlock_unlock(&l), 0);
	join_writer(&l, &w, t);
}

/* The writer-preferring kind: once a writer waits, new readers wait too. */
Test(shim_rwlock, writer_nonrecursive_kind_prefers_writers)
{
	pthread_rwlock_t l = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;
	struct shim_t_timed w;
	pthread_t t;
	start_writer(&l, &w, &t);
	int r;
	while ((r = in_other_thread(&l, pthread_rwlock_tryrdlock)) == 0)
		cr_assert_eq(pthread_rwlock_unlock(&l), 0); /* drop that reader's lock */
	cr_assert_eq(r, EBUSY);
	cr_assert_eq(pthread_rwlock_unlock(&l), 0);
	join_writer(&l, &w, t);
}

/* ------------------------------------------------------------ exclusion */

#define THREADS 4
#define ITERS	20000

struct excl {
	pthread_rwlock_t l;
	atomic_int readers, writers;
	long counter, reads;
	bool bad;
};

static void excl_round(struct excl *x, int i)
{
	bool write = i % 4 == 0;
	int r = write ? (i % 8 ? pthread_rwlock_wrlock(&x->l) : pthread_rwlock_trywrlock(&x->l))
		      : (i % 3 ? pthread_rwlock_rdlock(&x->l) : pthread_rwlock_tryrdlock(&x->l));
	if (r == EBUSY)
		return;
	if (r)
		x->bad = true;
	if (write) {
		if (atomic_fetch_add(&x->writers, 1) != 0 || atomic_load(&x->readers) != 0)
			x->bad = true;
		x->counter++;
		atomic_fetch_sub(&x->writers, 1);
	} else {
		atomic_fetch_add(&x->readers, 1);
		if (atomic_load(&x->writers) != 0)
			x->bad = true;
		__atomic_fetch_add(&x->reads, 1, __ATOMIC_RELAXED);
		atomic_fetch_sub(&x->readers, 1);
	}
	if (pthread_rwlock_unlock(&x->l))
		x->bad = true;
}

static void *excl_fn(void *p)
{
	for (int i = 0; i < ITERS; i++)
		excl_round(p, i);
	return NULL;
}

static bool proc_rounds(int n, void *arg)
{
	(void)n;
	excl_fn(arg);
	return !((struct excl *)arg)->bad;
}

Test(shim_rwlock, exclusion_threads)
{
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		struct excl x = {0};
		pthread_t t[THREADS];
		init_kind(&x.l, kinds[k], PTHREAD_PROCESS_PRIVATE);
		for (int i = 0; i < THREADS; i++)
			cr_assert_eq(pthread_create(&t[i], NULL, excl_fn, &x), 0);
		t_join_all(t, THREADS);
		cr_assert(!x.bad, "kind %d: exclusion or an error code broke", kinds[k]);
		cr_assert(x.counter >= (long)THREADS * ITERS / 8, "blocking writes all counted");
		cr_assert_eq(pthread_rwlock_destroy(&x.l), 0);
	}
}

Test(shim_rwlock, exclusion_processes)
{
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		struct excl *x = t_shared_alloc(sizeof(*x));
		init_kind(&x->l, kinds[k], PTHREAD_PROCESS_SHARED);
		cr_assert(t_fork_all(3, proc_rounds, x), "kind %d", kinds[k]);
		cr_assert(x->counter >= 3L * ITERS / 8);
		cr_assert_eq(pthread_rwlock_destroy(&x->l), 0);
		t_shared_free(x, sizeof(*x));
	}
}

/* ------------------------------------------------- ursa's waiter limits */

/* A blocking call (lock, then unlock) by another thread; finish_blocked
 * joins it, 10 s at most, and gives its result. */
static void start_blocked(pthread_rwlock_t *l, bool write, struct shim_t_timed *w, pthread_t *t)
{
	*w = (struct shim_t_timed){
	    .call = rw_call, .obj = l, .how = (write ? RW_WRITE : 0) | RW_BLOCKING};
	shim_t_timed_start(w, t);
	shim_t_await(&w->started);
}

static int finish_blocked(struct shim_t_timed *w, pthread_t t)
{
	struct timespec dl = t_deadline(CLOCK_REALTIME, 10000);
	cr_assert_eq(pthread_timedjoin_np(t, NULL, &dl), 0, "the caller never got the lock");
	cr_assert_eq(w->err_after, 4242, "errno changed");
	return w->ret;
}

/*
 * ursa_rwlock_t counts at most 4095 waiters and refuses one more with
 * -EAGAIN, which POSIX does not allow pthread_rwlock_wrlock (and allows
 * rdlock only for too many read locks). The writer-preferring kind waits
 * instead: timed callers time out, blocked ones stay blocked while the
 * count is full and get the lock once there is room. The count is set
 * directly (4095 real waiters would be 4096 threads).
 */
Test(shim_rwlock, writer_preferring_full_waiter_count_waits)
{
	pthread_rwlock_t l = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;
	uint32_t *st = &shim_rwlock(&l)->wl.__state;
	const uint32_t full = T_RW_COUNT | T_RW_WAITERS; /* write-held, 4095 waiting */
	__atomic_store_n(st, full, __ATOMIC_RELAXED);
	cr_assert_eq(timed_in_thread(&l, true, CLOCK_MONOTONIC, 30, true), ETIMEDOUT);
	cr_assert_eq(timed_in_thread(&l, false, CLOCK_REALTIME, 30, false), ETIMEDOUT);
	cr_assert_eq(__atomic_load_n(st, __ATOMIC_RELAXED), full, "a refusal changed the word");

	struct shim_t_timed wr, rd;
	pthread_t tw, tr;
	start_blocked(&l, true, &wr, &tw);
	start_blocked(&l, false, &rd, &tr);
	t_sleep_ms(50);
	cr_assert(!atomic_load(&wr.done) && !atomic_load(&rd.done),
		  "a call returned while the count was full (writer %d, reader %d)", wr.ret, rd.ret);
	__atomic_store_n(st, 0, __ATOMIC_RELAXED); /* the holder and the 4095 leave */
	cr_assert_eq(finish_blocked(&wr, tw), 0);
	cr_assert_eq(finish_blocked(&rd, tr), 0);
	cr_assert_eq(__atomic_load_n(st, __ATOMIC_RELAXED), 0);

	/* Too many read locks is the one EAGAIN POSIX lists: still said. */
	__atomic_store_n(st, T_RW_MAX_READERS, __ATOMIC_RELAXED);
	cr_assert_eq(pthread_rwlock_tryrdlock(&l), EAGAIN);
	cr_assert_eq(pthread_rwlock_rdlock(&l), EAGAIN);
	__atomic_store_n(st, 0, __ATOMIC_RELAXED);
	cr_assert_eq(pthread_rwlock_destroy(&l), 0);
}

/* The other kinds sleep on an ursa_cond_t, which counts at most 65535
 * sleepers (lib/cond.c) and refuses one more: the lock waits a little with
 * its mutex dropped and looks again, rather than return EAGAIN. */
Test(shim_rwlock, reader_preferring_full_sleeper_count_waits)
{
	const int rp[] = {PTHREAD_RWLOCK_PREFER_READER_NP, PTHREAD_RWLOCK_PREFER_WRITER_NP};
	for (int k = 0; k < 2; k++) {
		pthread_rwlock_t l;
		init_kind(&l, rp[k], PTHREAD_PROCESS_PRIVATE);
		uint32_t *sleepers = &shim_rwlock(&l)->cv.__waiters;
		cr_assert_eq(pthread_rwlock_rdlock(&l), 0);
		__atomic_store_n(sleepers, 0xffffu, __ATOMIC_RELAXED);
		cr_assert_eq(timed_in_thread(&l, true, CLOCK_MONOTONIC, 30, true), ETIMEDOUT);
		cr_assert_eq(__atomic_load_n(sleepers, __ATOMIC_RELAXED), 0xffffu);

		struct shim_t_timed wr;
		pthread_t tw;
		start_blocked(&l, true, &wr, &tw);
		t_sleep_ms(50);
		cr_assert(!atomic_load(&wr.done), "the writer returned %d while the count was full",
			  wr.ret);
		__atomic_store_n(sleepers, 0, __ATOMIC_RELAXED);
		cr_assert_eq(pthread_rwlock_unlock(&l), 0); /* the writer's turn */
		cr_assert_eq(finish_blocked(&wr, tw), 0);
		cr_assert_eq(pthread_rwlock_destroy(&l), 0);
	}
}
