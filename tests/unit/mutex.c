/* SPDX-License-Identifier: MIT */
/* tests/unit/mutex.c — ursa_mutex_t: exclusion, errors, timeouts, sharing. */
#include "tests/helpers.h"

#include <errno.h>
#include <stdatomic.h>
#include <unistd.h>

TestSuite(mutex, .timeout = 60);

Test(mutex, zero_is_unlocked)
{
	ursa_mutex_t m = URSA_MUTEX_INIT;
	cr_assert_eq(ursa_mutex_trylock(&m), 0);
	cr_assert_eq(ursa_mutex_trylock(&m), -EBUSY);
	cr_assert_eq(ursa_mutex_unlock(&m), 0);
	cr_assert_eq(ursa_mutex_destroy(&m), 0);
}

Test(mutex, sizes)
{
	cr_assert_eq(sizeof(ursa_mutex_t), 4);
	cr_assert_eq(_Alignof(ursa_mutex_t), 4);
}

Test(mutex, bad_input)
{
	ursa_mutex_t m;
	struct timespec ts = {0, 0};
	cr_assert_eq(ursa_mutex_init(NULL, 0), -EINVAL);
	cr_assert_eq(ursa_mutex_init(&m, 0x100), -EINVAL);
	cr_assert_eq(ursa_mutex_init(&m, 0), 0);
	cr_assert_eq(ursa_mutex_lock(NULL), -EINVAL);
	cr_assert_eq(ursa_mutex_trylock(NULL), -EINVAL);
	cr_assert_eq(ursa_mutex_unlock(NULL), -EINVAL);
	cr_assert_eq(ursa_mutex_destroy(NULL), -EINVAL);
	cr_assert_eq(ursa_mutex_timedlock(NULL, CLOCK_MONOTONIC, NULL), -EINVAL);
	cr_assert_eq(ursa_mutex_timedlock(&m, CLOCK_PROCESS_CPUTIME_ID, &ts), -EINVAL);
	ts.tv_nsec = 1000000000L;
	cr_assert_eq(ursa_mutex_timedlock(&m, CLOCK_MONOTONIC, &ts), -EINVAL);
	ts.tv_nsec = -1;
	cr_assert_eq(ursa_mutex_timedlock(&m, CLOCK_REALTIME, &ts), -EINVAL);
	/* Nothing was taken by the failed calls. */
	cr_assert_eq(ursa_mutex_trylock(&m), 0);
	cr_assert_eq(ursa_mutex_unlock(&m), 0);
}

Test(mutex, unlock_unlocked_is_eperm)
{
	ursa_mutex_t m = URSA_MUTEX_INIT, s;
	cr_assert_eq(ursa_mutex_unlock(&m), -EPERM);
	cr_assert_eq(ursa_mutex_init(&s, URSA_SHARED), 0);
	cr_assert_eq(ursa_mutex_unlock(&s), -EPERM);
	/* The error left both usable. */
	cr_assert_eq(ursa_mutex_lock(&m), 0);
	cr_assert_eq(ursa_mutex_lock(&s), 0);
	cr_assert_eq(ursa_mutex_unlock(&m), 0);
	cr_assert_eq(ursa_mutex_unlock(&s), 0);
}

Test(mutex, destroy_locked_is_ebusy)
{
	ursa_mutex_t m = URSA_MUTEX_INIT;
	cr_assert_eq(ursa_mutex_lock(&m), 0);
	cr_assert_eq(ursa_mutex_destroy(&m), -EBUSY);
	cr_assert_eq(ursa_mutex_unlock(&m), 0);
	cr_assert_eq(ursa_mutex_destroy(&m), 0);
}

Test(mutex, exported_symbols_match_inline)
{
	/* Function pointers reach the exported, out-of-line versions. */
	int (*lock)(ursa_mutex_t *) = &ursa_mutex_lock;
	int (*unlock)(ursa_mutex_t *) = &ursa_mutex_unlock;
	int (*trylock)(ursa_mutex_t *) = &ursa_mutex_trylock;
	ursa_mutex_t m = URSA_MUTEX_INIT;
	cr_assert_eq(lock(&m), 0);
	cr_assert_eq(trylock(&m), -EBUSY);
	cr_assert_eq(unlock(&m), 0);
	cr_assert_eq(unlock(&m), -EPERM);
}

/* The word's bits (lib/mutex.c), for the layout tests below. */
#define T_LOCKED  0x1u
#define T_HANDED  0x8u
#define T_CNT_ONE 0x100u

Test(mutex, handed_off_is_held_for_newcomers)
{
	/* A hand-off keeps bit 0 set (URSA_0.2), so the inline lock's
	 * bit-test-and-set, the exported trylock and a timed lock that may not
	 * wait all find the mutex held: it stays handed to its one registered
	 * waiter. (The timed lock registers and gives up, which may leave the
	 * SLEEPERS mark, bit 1, for the next unlock to clear.) */
	int (*trylock)(ursa_mutex_t *) = &ursa_mutex_trylock;
	for (int sh = 0; sh < 2; sh++) {
		uint32_t w = T_LOCKED | T_HANDED | T_CNT_ONE | (sh ? URSA__MUTEX_SHARED : 0);
		ursa_mutex_t m = {w};
		struct timespec past = {0, 0};
		cr_assert_eq(ursa_mutex_trylock(&m), -EBUSY);
		cr_assert_eq(trylock(&m), -EBUSY);
		cr_assert_eq(ursa__mutex_trylock_slow(&m), -EBUSY);
		cr_assert_eq(m.__word, w, "word %#x, was %#x", m.__word, w);
		/* Nor does an unlock: the mutex is held for the waiter, not us. */
		cr_assert_eq(ursa_mutex_unlock(&m), -EPERM);
		cr_assert_eq(m.__word, w, "word %#x, was %#x", m.__word, w);
		cr_assert_eq(ursa_mutex_destroy(&m), -EBUSY);
		cr_assert_eq(ursa_mutex_timedlock(&m, CLOCK_MONOTONIC, &past), -ETIMEDOUT);
		cr_assert_eq(m.__word & ~0x2u, w, "word %#x, was %#x", m.__word, w);
	}
}

/* Pins (lib/mutex.c): an unlock that wakes holds one between its release
 * and its last look at the word, and destroy waits for them. A pin left
 * behind (its process killed inside an unlock of a URSA_SHARED mutex) must
 * not make destroy hang: -EBUSY after about a second. With all 7 pins
 * taken, lock and unlock still work (an unlock that wakes then waits a
 * second for one to go, and takes none: tests/unit/pins.c). White-box:
 * the pins are bits 5-7. */
static void *lock_unlock(void *p)
{
	cr_assert_eq(ursa_mutex_lock(p), 0);
	cr_assert_eq(ursa_mutex_unlock(p), 0);
	return NULL;
}

Test(mutex, a_pin_left_behind_makes_destroy_say_busy)
{
	ursa_mutex_t m = {0x20u};
	cr_assert_eq(ursa_mutex_destroy(&m), -EBUSY);
	m.__word = 0xe0u;
	cr_assert_eq(ursa_mutex_lock(&m), 0);
	cr_assert_eq(ursa_mutex_trylock(&m), -EBUSY);
	cr_assert_eq(ursa_mutex_unlock(&m), 0);
	cr_assert_eq(m.__word, 0xe0u, "word %#x", m.__word);
	/* An unlock that wakes, with the pins full. */
	static ursa_mutex_t pm = {0xe0u};
	cr_assert_eq(ursa_mutex_lock(&pm), 0);
	pthread_t t;
	cr_assert_eq(pthread_create(&t, NULL, lock_unlock, &pm), 0);
	while (__atomic_load_n(&pm.__word, __ATOMIC_RELAXED) < 0x100u)
		sched_yield(); /* registered */
	cr_assert_eq(ursa_mutex_unlock(&pm), 0);
	cr_assert_eq(pthread_join(t, NULL), 0);
	cr_assert_eq(pm.__word, 0xe0u, "word %#x", pm.__word);
	cr_assert_eq(ursa_mutex_destroy(&m), -EBUSY);
	m.__word = 0;
	cr_assert_eq(ursa_mutex_destroy(&m), 0);
}

Test(mutex, entry_points_of_older_programs)
{
	/* Programs built before URSA_0.2 inline a compare-and-swap from 0 and,
	 * when it fails, call ursa__mutex_lock_slow / _trylock_slow: a free
	 * mutex with a waiter registered fails that swap, and those calls take
	 * it. Programs built since call ursa__mutex_lock_held / _trylock_held
	 * after their bit-test-and-set found bit 0 set. */
	ursa_mutex_t m = {T_CNT_ONE};
	cr_assert_eq(ursa__mutex_trylock_slow(&m), 0);
	cr_assert_eq(m.__word, T_CNT_ONE | T_LOCKED);
	cr_assert_eq(ursa__mutex_trylock_slow(&m), -EBUSY);
	cr_assert_eq(ursa__mutex_trylock_held(&m), -EBUSY);
	cr_assert_eq(ursa_mutex_unlock(&m), 0);
	cr_assert_eq(m.__word, T_CNT_ONE);
	cr_assert_eq(ursa__mutex_lock_slow(&m), 0);
	cr_assert_eq(m.__word, T_CNT_ONE | T_LOCKED);
	cr_assert_eq(ursa_mutex_unlock(&m), 0);
	cr_assert_eq(ursa_mutex_lock(&m), 0); /* the inline path, waiter or not */
	cr_assert_eq(m.__word, T_CNT_ONE | T_LOCKED);
	cr_assert_eq(ursa_mutex_unlock(&m), 0);
	cr_assert_eq(ursa__mutex_lock_slow(NULL), -EINVAL);
	cr_assert_eq(ursa__mutex_trylock_slow(NULL), -EINVAL);
	cr_assert_eq(ursa__mutex_lock_held(NULL), -EINVAL);
	cr_assert_eq(ursa__mutex_trylock_held(NULL), -EINVAL);
}

Test(mutex, timed_past_deadline_no_sleep)
{
	ursa_mutex_t m = URSA_MUTEX_INIT;
	clockid_t clks[] = {CLOCK_MONOTONIC, CLOCK_REALTIME};
	for (int i = 0; i < 2; i++) {
		struct timespec past = t_deadline(clks[i], -10);
		cr_assert_eq(ursa_mutex_timedlock(&m, clks[i], &past), 0, "free: taken despite past deadline");
		long sw = t_nvcsw();
		int r = ursa_mutex_timedlock(&m, clks[i], &past);
		sw = t_nvcsw() - sw;
		cr_assert_eq(r, -ETIMEDOUT);
		cr_assert_eq(sw, 0, "must not sleep: %ld voluntary context switches", sw);
		/* The observation can fail: a wait that sleeps is counted. */
		struct timespec soon = t_deadline(clks[i], 2);
		sw = t_nvcsw();
		cr_assert_eq(ursa_mutex_timedlock(&m, clks[i], &soon), -ETIMEDOUT);
		cr_assert_gt(t_nvcsw() - sw, 0, "a 2 ms wait on a held mutex did not sleep");
		cr_assert_eq(ursa_mutex_unlock(&m), 0);
	}
}

Test(mutex, timed_short_timeout_both_clocks)
{
	ursa_mutex_t m = URSA_MUTEX_INIT;
	cr_assert_eq(ursa_mutex_lock(&m), 0);
	clockid_t clks[] = {CLOCK_MONOTONIC, CLOCK_REALTIME};
	for (int i = 0; i < 2; i++) {
		struct timespec dl = t_deadline(clks[i], 30);
		cr_assert_eq(ursa_mutex_timedlock(&m, clks[i], &dl), -ETIMEDOUT);
		struct timespec now;
		clock_gettime(clks[i], &now);
		cr_assert(now.tv_sec > dl.tv_sec || (now.tv_sec == dl.tv_sec && now.tv_nsec >= dl.tv_nsec),
			  "returned before the deadline");
	}
	cr_assert_eq(ursa_mutex_unlock(&m), 0);
	cr_assert_eq(ursa_mutex_destroy(&m), 0, "timeouts left no state behind");
}

/* ---- mutual exclusion under threads ---------------------------------- */

struct excl {
	ursa_mutex_t m;
	struct t_excl check;
	long iters;
	int timed;
	int nthreads;
	int ready;	 /* start gate: the workers begin together */
	long want_held;	 /* 0, or run on (up to 50 x iters) until this many */
	long found_held; /* lock calls that found the word non-zero */
	long done;	 /* lock calls made, all workers */
};

static void *excl_worker(void *arg)
{
	struct excl *x = *(struct excl **)arg;
	int idx = __atomic_fetch_add(&x->ready, 1, __ATOMIC_ACQ_REL);
	while (__atomic_load_n(&x->ready, __ATOMIC_ACQUIRE) < x->nthreads)
		sched_yield();
	/* With want_held, the first worker, at every 4th entry until enough
	 * lock calls have met the mutex held, holds it until one more has (at
	 * most 200 us), yielding meanwhile: the others meet it held even on a
	 * loaded machine, where they seldom run beside it. */
	bool holder = x->want_held && idx == 0;
	long i;
	for (i = 0; i < x->iters ||
		    (x->want_held && i < 50 * x->iters &&
		     __atomic_load_n(&x->found_held, __ATOMIC_RELAXED) < x->want_held);
	     i++) {
		if (__atomic_load_n(&x->m.__word, __ATOMIC_RELAXED) & ~URSA__MUTEX_SHARED)
			__atomic_fetch_add(&x->found_held, 1, __ATOMIC_RELAXED);
		if (x->timed && (i & 1)) {
			struct timespec dl = t_deadline(CLOCK_MONOTONIC, 1000);
			int r;
			while ((r = ursa_mutex_timedlock(&x->m, CLOCK_MONOTONIC, &dl)) == -ETIMEDOUT)
				dl = t_deadline(CLOCK_MONOTONIC, 1000);
			cr_assert_eq(r, 0);
		} else if (i % 7 == 3 && !x->want_held) {
			/* Not with want_held: a trylock loop never queues, so
			 * the holder (which re-takes the mutex at once and then
			 * keeps it waiting for a new lock call) could starve it
			 * for the whole run (seen: 1 in 20 runs under load). */
			while (ursa_mutex_trylock(&x->m) != 0)
				sched_yield(); /* the holder may need this CPU */
		} else {
			cr_assert_eq(ursa_mutex_lock(&x->m), 0);
		}
		t_excl_enter(&x->check);
		if ((i & 63) == 0)
			sched_yield(); /* hold it across a reschedule now and then */
		if (holder && (i & 3) == 0 &&
		    __atomic_load_n(&x->found_held, __ATOMIC_RELAXED) < x->want_held) {
			long seen = __atomic_load_n(&x->found_held, __ATOMIC_RELAXED);
			uint64_t until = t_now_ns() + 200000;
			while (__atomic_load_n(&x->found_held, __ATOMIC_RELAXED) == seen &&
			       t_now_ns() < until)
				sched_yield();
		}
		t_excl_leave(&x->check);
		cr_assert_eq(ursa_mutex_unlock(&x->m), 0);
	}
	__atomic_fetch_add(&x->done, i, __ATOMIC_RELAXED);
	return NULL;
}

/* nthreads workers make iters lock calls each; with want_held, each runs on
 * (up to 50 x iters) until that many calls in all found the mutex held.
 * Returns how many did. */
static long run_excl(unsigned flags, int nthreads, long iters, int timed, long want_held)
{
	static struct excl x;
	memset(&x, 0, sizeof(x));
	cr_assert_eq(ursa_mutex_init(&x.m, flags), 0);
	x.iters = iters;
	x.timed = timed;
	x.nthreads = nthreads;
	x.want_held = want_held;
	struct excl *px[16];
	pthread_t t[16];
	for (int i = 0; i < nthreads; i++)
		px[i] = &x;
	t_spawn(t, nthreads, excl_worker, px, sizeof(px[0]));
	t_join_all(t, nthreads);
	cr_assert_geq(x.done, (long)nthreads * iters);
	t_excl_check(&x.check, x.done);
	cr_assert_eq(ursa_mutex_destroy(&x.m), 0);
	return x.found_held;
}

Test(mutex, exclusion_threads_private)
{
	run_excl(0, 4, t_iters(200000), 0, 0);
}

Test(mutex, exclusion_threads_shared_flag)
{
	run_excl(URSA_SHARED, 4, t_iters(100000), 0, 0);
}

Test(mutex, exclusion_threads_timed)
{
	run_excl(0, 4, t_iters(100000), 1, 0);
}

/* The many-CPU spin (kernel/arch.h: PAUSE backoff, sleepers or not) is
 * chosen by the CPU count; URSA_TEST_CPUS makes this process count 64, so
 * the spin runs here on any machine. Exclusion must hold, and the run must
 * have been contended: lockers that found the mutex held (and so took the
 * slow path, the spin first). On a loaded machine the workers may seldom
 * overlap, so they run on until 1000 such calls (or 50 x their share). */
Test(mutex, exclusion_threads_backoff_spin)
{
	setenv("URSA_TEST_CPUS", "64", 1);
	long iters = t_iters(100000);
	long held = run_excl(0, 4, iters, 0, 1000);
	cr_assert_geq(held, 1000,
		     "only %ld lock calls found the mutex held: the spin was not exercised", held);
	unsetenv("URSA_TEST_CPUS");
}

/* Where the process may run on one CPU only, the lock spin ends 300 us
 * after its first yield (kernel/arch.h). Pinned to one CPU before the
 * first lock (so the library counts one), exclusion must hold and the run
 * must have been contended: lockers that found the mutex held took that
 * spin (a holder preempted in its section, or yielding across it). */
Test(mutex, exclusion_threads_one_cpu_spin)
{
	t_pin_one_cpu();
	long held = run_excl(0, 4, t_iters(50000), 0, 1000);
	cr_assert_geq(held, 1000,
		     "only %ld lock calls found the mutex held: the spin was not exercised", held);
}

/* ---- mutual exclusion across processes ------------------------------- */

struct pexcl {
	ursa_mutex_t m;
	struct t_excl check;
};

static bool pexcl_child(int idx, void *arg)
{
	struct pexcl *x = arg;
	for (int i = 0; i < 50000; i++) {
		if (ursa_mutex_lock(&x->m) != 0)
			return false;
		t_excl_enter(&x->check);
		t_excl_leave(&x->check);
		if (ursa_mutex_unlock(&x->m) != 0)
			return false;
	}
	return true;
}

Test(mutex, exclusion_processes_shared)
{
	struct pexcl *x = t_shared_alloc(sizeof(*x));
	cr_assert_eq(ursa_mutex_init(&x->m, URSA_SHARED), 0);
	cr_assert(t_fork_all(4, pexcl_child, x));
	t_excl_check(&x->check, 4L * 50000);
	cr_assert_eq(ursa_mutex_destroy(&x->m), 0);
	t_shared_free(x, sizeof(*x));
}

/* ---- a sleeper is always woken; no waiter starves -------------------- */

Test(mutex, sleeping_waiter_progresses_against_hogs)
{
	static ursa_mutex_t m;
	static struct t_hogs h;
	long acquired = 0;
	cr_assert_eq(ursa_mutex_init(&m, 0), 0);
	t_hogs_start(&h, &m, 2, 200);
	/* A third thread that always sleeps before trying must still get in
	 * many times while two threads hammer the lock. */
	for (int i = 0; i < 2000; i++) {
		cr_assert_eq(ursa_mutex_lock(&m), 0);
		acquired++;
		cr_assert_eq(ursa_mutex_unlock(&m), 0);
	}
	t_hogs_stop(&h);
	cr_assert_eq(acquired, 2000);
}

/* A long queue. With more than 7 waiters registered, the time after which
 * a waiter asks for a hand-off grows with the queue (131 us a waiter:
 * lib/mutex.c, "Hand-offs"). Twelve threads that each take the mutex at
 * least 200 times (holding it ~1 us), beside two hogs that re-take it at
 * once, must all finish, with exclusion held. The run must have had more
 * than 7 waiters registered at once (COUNT, bits 5-30 of the word, seen by
 * the holders), or the scaled time was never in force: the workers run on
 * until a holder has seen that (or 100 x their 200 turns), and until then
 * each yields once while it holds the mutex (a holder preempted), so that
 * the threads that run meanwhile find it held and register. (Without that
 * yield, 1 of 18 runs of this suite in a loop of every suite, under the
 * SQPOLL ring setup, saw at most 7 in 20000 turns of each worker, as
 * tests/unit/sem.c's long queue did.) */
struct queue_run {
	ursa_mutex_t m;
	struct t_excl check;
	atomic_uint most_registered;
	atomic_long done;
};

static void *queue_worker(void *arg)
{
	struct queue_run *q = *(struct queue_run **)arg;
	for (int i = 0; i < 200 || (atomic_load(&q->most_registered) < 8 && i < 20000); i++) {
		cr_assert_eq(ursa_mutex_lock(&q->m), 0);
		t_excl_enter(&q->check);
		unsigned n = (__atomic_load_n(&q->m.__word, __ATOMIC_RELAXED) & 0x7fffff00u) >> 8;
		unsigned most = atomic_load(&q->most_registered);
		while (n > most && !atomic_compare_exchange_weak(&q->most_registered, &most, n))
			;
		for (volatile int k = 0; k < 300; k++)
			;
		if (most < 8)
			sched_yield();
		t_excl_leave(&q->check);
		cr_assert_eq(ursa_mutex_unlock(&q->m), 0);
		atomic_fetch_add(&q->done, 1);
	}
	return NULL;
}

Test(mutex, long_queue_every_waiter_progresses_against_hogs)
{
	static struct queue_run q;
	static struct t_hogs h;
	enum { N = 12 };
	struct queue_run *args[N];
	pthread_t t[N];
	memset(&q, 0, sizeof(q));
	cr_assert_eq(ursa_mutex_init(&q.m, 0), 0);
	for (int i = 0; i < N; i++)
		args[i] = &q;
	t_hogs_start(&h, &q.m, 2, 200);
	t_spawn(t, N, queue_worker, args, sizeof(args[0]));
	t_join_all(t, N);
	t_hogs_stop(&h);
	cr_assert_geq(atomic_load(&q.done), N * 200);
	t_excl_check(&q.check, atomic_load(&q.done));
	unsigned most = atomic_load(&q.most_registered);
	cr_assert_geq(most, 8, "at most %u waiters were registered at once: no long queue", most);
	cr_assert_eq(ursa_mutex_destroy(&q.m), 0);
}
