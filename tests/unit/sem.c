/* SPDX-License-Identifier: MIT */
/* tests/unit/sem.c — ursa_sem_t: counts conserved, errors, timeouts, sharing. */
#include "tests/helpers.h"
#include "tests/integration/common.h" /* t_after_us */

#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

TestSuite(sem, .timeout = 60);

Test(sem, sizes)
{
	cr_assert_eq(sizeof(ursa_sem_t), 8);
	cr_assert_eq(_Alignof(ursa_sem_t), 4);
}

Test(sem, zero_is_valid_and_empty)
{
	ursa_sem_t s = URSA_SEM_INIT;
	cr_assert_eq(ursa_sem_value(&s), 0);
	cr_assert_eq(ursa_sem_trywait(&s), -EBUSY);
	cr_assert_eq(ursa_sem_post(&s), 0);
	cr_assert_eq(ursa_sem_value(&s), 1);
	cr_assert_eq(ursa_sem_trywait(&s), 0);
	cr_assert_eq(ursa_sem_trywait(&s), -EBUSY);
	cr_assert_eq(ursa_sem_destroy(&s), 0);
}

Test(sem, init_value_and_wait)
{
	ursa_sem_t s;
	cr_assert_eq(ursa_sem_init(&s, 3, 0), 0);
	cr_assert_eq(ursa_sem_value(&s), 3);
	cr_assert_eq(ursa_sem_wait(&s), 0);
	cr_assert_eq(ursa_sem_timedwait(&s, CLOCK_MONOTONIC, NULL), 0);
	cr_assert_eq(ursa_sem_trywait(&s), 0);
	cr_assert_eq(ursa_sem_value(&s), 0);
	cr_assert_eq(ursa_sem_trywait(&s), -EBUSY);
	cr_assert_eq(ursa_sem_init(&s, URSA_SEM_VALUE_MAX, URSA_SHARED), 0);
	cr_assert_eq(ursa_sem_value(&s), (int)URSA_SEM_VALUE_MAX);
}

Test(sem, bad_input)
{
	ursa_sem_t s;
	struct timespec ts = {0, 0};
	cr_assert_eq(ursa_sem_init(NULL, 0, 0), -EINVAL);
	cr_assert_eq(ursa_sem_init(&s, 0, 0x100), -EINVAL);
	cr_assert_eq(ursa_sem_init(&s, 0, 0x2), -EINVAL);
	cr_assert_eq(ursa_sem_init(&s, URSA_SEM_VALUE_MAX + 1u, 0), -EINVAL);
	cr_assert_eq(ursa_sem_init(&s, 1, 0), 0);
	cr_assert_eq(ursa_sem_post(NULL), -EINVAL);
	cr_assert_eq(ursa_sem_wait(NULL), -EINVAL);
	cr_assert_eq(ursa_sem_trywait(NULL), -EINVAL);
	cr_assert_eq(ursa_sem_timedwait(NULL, CLOCK_MONOTONIC, NULL), -EINVAL);
	cr_assert_eq(ursa_sem_value(NULL), -EINVAL);
	cr_assert_eq(ursa_sem_destroy(NULL), -EINVAL);
	cr_assert_eq(ursa_sem_timedwait(&s, CLOCK_PROCESS_CPUTIME_ID, &ts), -EINVAL);
	cr_assert_eq(ursa_sem_timedwait(&s, CLOCK_BOOTTIME, NULL), -EINVAL);
	ts.tv_nsec = 1000000000L;
	cr_assert_eq(ursa_sem_timedwait(&s, CLOCK_MONOTONIC, &ts), -EINVAL);
	ts.tv_nsec = -1;
	cr_assert_eq(ursa_sem_timedwait(&s, CLOCK_REALTIME, &ts), -EINVAL);
	ts.tv_nsec = 0;
	ts.tv_sec = -1;
	cr_assert_eq(ursa_sem_timedwait(&s, CLOCK_REALTIME, &ts), -EINVAL);
	/* The failed calls took nothing and left it usable. */
	cr_assert_eq(ursa_sem_value(&s), 1);
	cr_assert_eq(ursa_sem_trywait(&s), 0);
	cr_assert_eq(ursa_sem_post(&s), 0);
	cr_assert_eq(ursa_sem_destroy(&s), 0);
}

Test(sem, overflow_at_max_leaves_value)
{
	ursa_sem_t s;
	cr_assert_eq(ursa_sem_init(&s, URSA_SEM_VALUE_MAX - 1, 0), 0);
	cr_assert_eq(ursa_sem_post(&s), 0);
	cr_assert_eq(ursa_sem_post(&s), -EOVERFLOW);
	cr_assert_eq(ursa_sem_post(&s), -EOVERFLOW);
	cr_assert_eq(ursa_sem_value(&s), (int)URSA_SEM_VALUE_MAX);
	cr_assert_eq(ursa_sem_trywait(&s), 0);
	cr_assert_eq(ursa_sem_value(&s), (int)URSA_SEM_VALUE_MAX - 1);
	cr_assert_eq(ursa_sem_post(&s), 0);
	cr_assert_eq(ursa_sem_destroy(&s), 0);
}

/* __waiters' bits (lib/sem.c), for the white-box checks. */
#define SEM_WOKEN  0x04000000u
#define SEM_HANDED 0x02000000u
#define SEM_REQ	   0x01000000u
#define SEM_COUNT  0x001fffffu

/* A unit kept for a waiter (HANDED) counts against the maximum: the waiter
 * may give it back into value instead of taking it (here a ring wait-any
 * that takes an event instead), and a hand-off stays pending for as long as
 * the op's CQE waits for its event loop. White-box: the posts that fill
 * value while the unit is handed are stood in for by one store to __value
 * (each of them, with the woken waiter still on its way, only adds one).
 * Before the post counted the handed unit, the give-back made the count
 * URSA_SEM_VALUE_MAX + 1 and ursa_sem_value negative. */
Test(sem, overflow_counts_a_unit_being_handed)
{
	t_require_uring_futex(true);
	struct io_uring r;
	t_ring(&r, 8, 0);
	ursa_sem_t s;
	ursa_event_t e;
	cr_assert_eq(ursa_sem_init(&s, 0, 0), 0);
	cr_assert_eq(ursa_event_init(&e, 0), 0);
	ursa_waitable_t v[2] = {{URSA_WAIT_EVENT, &e}, {URSA_WAIT_SEM, &s}};
	struct ursa_op op __attribute__((aligned(8))) = URSA_OP_INIT;
	cr_assert_eq(ursa_wait_any_async(&r, v, 2, &op), 0);
	io_uring_submit(&r);
	/* Wake it and take the unit back: once it has slept, past
	 * URSA_FAIR_NS its next step asks for a hand-off. (The wake misses
	 * while its wait is not armed yet: under SQPOLL the kernel thread
	 * may not have taken the SQE. Then again.) */
	uint32_t w = 0;
	for (int i = 0; i < 100 && !(w & SEM_REQ); i++) {
		cr_assert_eq(ursa_sem_post(&s), 0);
		cr_assert_eq(ursa_sem_trywait(&s), 0);
		usleep(5000);
		cr_assert_eq(t_drain(&r, 20), 0);
		w = __atomic_load_n(&s.__waiters, __ATOMIC_RELAXED);
	}
	cr_assert_eq(w & (SEM_REQ | SEM_COUNT), SEM_REQ | 1, "no hand-off asked (__waiters %#x)", w);
	/* This post keeps its unit for the op and wakes it. */
	cr_assert_eq(ursa_sem_post(&s), 0);
	w = __atomic_load_n(&s.__waiters, __ATOMIC_RELAXED);
	cr_assert(w & SEM_HANDED, "not handed (__waiters %#x)", w);
	cr_assert_eq(ursa_sem_value(&s), 0);
	/* (Bit 31 of __value, REG, says the op is registered: kept.) */
	__atomic_store_n(&s.__value, (s.__value & ~URSA_SEM_VALUE_MAX) | (URSA_SEM_VALUE_MAX - 1),
			 __ATOMIC_RELAXED);
	cr_assert_eq(ursa_sem_post(&s), -EOVERFLOW, "the handed unit was not counted");
	cr_assert_eq(ursa_sem_value(&s), (int)URSA_SEM_VALUE_MAX - 1);
	/* The op takes the event and gives the unit back. */
	cr_assert_eq(ursa_event_set(&e), 0);
	cr_assert_eq(t_reap(&r, NULL, 10000), &op);
	cr_assert_eq(op.res, 0, "wait-any took %d", op.res);
	w = __atomic_load_n(&s.__waiters, __ATOMIC_RELAXED);
	cr_assert_eq(w & (SEM_COUNT | SEM_HANDED | SEM_WOKEN | SEM_REQ), 0, "__waiters %#x", w);
	cr_assert_eq(ursa_sem_value(&s), (int)URSA_SEM_VALUE_MAX);
	cr_assert_eq(ursa_sem_post(&s), -EOVERFLOW);
	cr_assert_eq(ursa_sem_trywait(&s), 0);
	cr_assert_eq(ursa_sem_value(&s), (int)URSA_SEM_VALUE_MAX - 1);
	cr_assert_eq(ursa_sem_destroy(&s), 0);
	cr_assert_eq(ursa_event_destroy(&e), 0);
	io_uring_queue_exit(&r);
}

Test(sem, timed_past_deadline_no_sleep)
{
	ursa_sem_t s = URSA_SEM_INIT;
	clockid_t clks[] = {CLOCK_MONOTONIC, CLOCK_REALTIME};
	for (int i = 0; i < 2; i++) {
		struct timespec past = t_deadline(clks[i], -10);
		cr_assert_eq(ursa_sem_post(&s), 0);
		cr_assert_eq(ursa_sem_timedwait(&s, clks[i], &past), 0, "available: taken");
		long sw = t_nvcsw();
		int r = ursa_sem_timedwait(&s, clks[i], &past);
		sw = t_nvcsw() - sw;
		cr_assert_eq(r, -ETIMEDOUT);
		cr_assert_eq(sw, 0, "must not sleep: %ld voluntary context switches", sw);
		cr_assert_eq(ursa_sem_destroy(&s), 0, "no waiter left registered");
	}
}

Test(sem, timed_short_timeout_both_clocks)
{
	ursa_sem_t s;
	cr_assert_eq(ursa_sem_init(&s, 0, URSA_SHARED), 0);
	clockid_t clks[] = {CLOCK_MONOTONIC, CLOCK_REALTIME};
	for (int i = 0; i < 2; i++) {
		struct timespec dl = t_deadline(clks[i], 30);
		cr_assert_eq(ursa_sem_timedwait(&s, clks[i], &dl), -ETIMEDOUT);
		struct timespec now;
		clock_gettime(clks[i], &now);
		cr_assert(now.tv_sec > dl.tv_sec ||
				  (now.tv_sec == dl.tv_sec && now.tv_nsec >= dl.tv_nsec),
			  "returned before the deadline");
		cr_assert_eq(ursa_sem_destroy(&s), 0, "timeout left no waiter registered");
	}
	cr_assert_eq(ursa_sem_value(&s), 0);
	cr_assert_eq(ursa_sem_post(&s), 0);
	cr_assert_eq(ursa_sem_trywait(&s), 0);
}

/* ---- a blocked waiter is woken by a post; destroy sees it ------------- */

struct one {
	ursa_sem_t s;
	int timed;
};

static int one_wait(void *arg)
{
	struct one *o = arg;
	if (o->timed) {
		struct timespec dl = t_deadline(CLOCK_REALTIME, 30000);
		return ursa_sem_timedwait(&o->s, CLOCK_REALTIME, &dl);
	}
	return ursa_sem_wait(&o->s);
}

static void run_one(int timed, unsigned flags)
{
	static struct one o;
	static struct t_waiter w;
	memset(&o, 0, sizeof(o));
	cr_assert_eq(ursa_sem_init(&o.s, 0, flags), 0);
	o.timed = timed;
	t_waiter_start(&w, one_wait, &o);
	cr_assert_eq(ursa_sem_destroy(&o.s), -EBUSY, "a waiter sleeps on it");
	cr_assert_eq(ursa_sem_post(&o.s), 0);
	cr_assert_eq(t_waiter_join(&w), 0);
	cr_assert_eq(ursa_sem_value(&o.s), 0);
	cr_assert_eq(ursa_sem_destroy(&o.s), 0);
}

Test(sem, post_wakes_sleeper_destroy_ebusy)
{
	run_one(0, 0);
}

Test(sem, post_wakes_timed_sleeper_shared_flag)
{
	run_one(1, URSA_SHARED);
}

/* ---- counts conserved under threads ---------------------------------- */

struct cons {
	ursa_sem_t s;
	long per_waiter;
	long per_poster;
	atomic_long taken;
	atomic_long posted;
	atomic_long overflow;
};

static void *cons_poster(void *arg)
{
	struct cons *c = *(struct cons **)arg;
	for (long i = 0; i < c->per_poster; i++) {
		cr_assert_eq(ursa_sem_post(&c->s), 0);
		atomic_fetch_add(&c->posted, 1);
		if ((i & 255) == 0)
			sched_yield();
	}
	return NULL;
}

static void *cons_waiter(void *arg)
{
	struct cons *c = *(struct cons **)arg;
	for (long i = 0; i < c->per_waiter; i++) {
		switch (i % 4) {
		case 0:
		case 1:
			cr_assert_eq(ursa_sem_wait(&c->s), 0);
			break;
		case 2: {
			/* Short deadlines: many time out and retry, which
			 * exercises abandon racing with posts. */
			int r;
			do {
				struct timespec dl = t_deadline(CLOCK_MONOTONIC, (i & 8) ? 1 : 0);
				r = ursa_sem_timedwait(&c->s, CLOCK_MONOTONIC, &dl);
			} while (r == -ETIMEDOUT);
			cr_assert_eq(r, 0);
			break;
		}
		default:
			while (ursa_sem_trywait(&c->s) != 0)
				sched_yield();
			break;
		}
		atomic_fetch_add(&c->taken, 1);
	}
	return NULL;
}

static void run_cons(unsigned flags, unsigned initial, int nposters, int nwaiters, long total)
{
	static struct cons c;
	memset(&c, 0, sizeof(c));
	cr_assert_eq(ursa_sem_init(&c.s, initial, flags), 0);
	c.per_poster = total / nposters;
	c.per_waiter = total / nwaiters;
	struct cons *pc[16];
	pthread_t t[16];
	for (int i = 0; i < 16; i++)
		pc[i] = &c;
	t_spawn(t, nwaiters, cons_waiter, pc, sizeof(pc[0]));
	t_spawn(t + nwaiters, nposters, cons_poster, pc, sizeof(pc[0]));
	t_join_all(t, nwaiters + nposters);
	cr_assert_eq(atomic_load(&c.posted), (long)nposters * c.per_poster);
	cr_assert_eq(atomic_load(&c.taken), (long)nwaiters * c.per_waiter);
	cr_assert_eq((long)ursa_sem_value(&c.s),
		     (long)initial + atomic_load(&c.posted) - atomic_load(&c.taken),
		     "count conserved");
	cr_assert_eq(ursa_sem_destroy(&c.s), 0);
}

Test(sem, counts_conserved_threads)
{
	run_cons(0, 0, 4, 4, 120000);
}

Test(sem, counts_conserved_threads_initial_value_shared_flag)
{
	run_cons(URSA_SHARED, 7, 2, 6, 60000);
}

Test(sem, counts_conserved_many_waiters_one_poster)
{
	/* Waiters outnumber posts in flight: every post must find a sleeper. */
	run_cons(0, 0, 1, 8, 40000);
}

/* ---- ping-pong: every hand-over needs a wake ------------------------- */

struct pp {
	ursa_sem_t a, b;
	long iters;
};

static void *pp_peer(void *arg)
{
	struct pp *p = arg;
	for (long i = 0; i < p->iters; i++) {
		cr_assert_eq(ursa_sem_wait(&p->a), 0);
		cr_assert_eq(ursa_sem_post(&p->b), 0);
	}
	return NULL;
}

Test(sem, ping_pong_threads)
{
	static struct pp p;
	memset(&p, 0, sizeof(p));
	p.iters = 30000;
	pthread_t t;
	cr_assert_eq(pthread_create(&t, NULL, pp_peer, &p), 0);
	for (long i = 0; i < p.iters; i++) {
		cr_assert_eq(ursa_sem_post(&p.a), 0);
		cr_assert_eq(ursa_sem_wait(&p.b), 0);
	}
	cr_assert_eq(pthread_join(t, NULL), 0);
	cr_assert_eq(ursa_sem_value(&p.a), 0);
	cr_assert_eq(ursa_sem_value(&p.b), 0);
}

/* ---- processes: URSA_SHARED in MAP_SHARED memory ---------------------- */

struct pcons {
	ursa_sem_t s;
	ursa_sem_t a, b; /* ping-pong pair */
	long taken;
	long posted;
};

#define P_ITERS 20000

static bool pcons_child(int idx, void *arg)
{
	t_die_with_parent();
	struct pcons *c = arg;
	if (idx < 2) { /* posters */
		for (int i = 0; i < P_ITERS; i++) {
			if (ursa_sem_post(&c->s) != 0)
				return false;
			__atomic_fetch_add(&c->posted, 1, __ATOMIC_RELAXED);
		}
		return true;
	}
	if (idx < 4) { /* waiters */
		for (int i = 0; i < P_ITERS; i++) {
			int r;
			if (i & 1) {
				r = ursa_sem_wait(&c->s);
			} else {
				struct timespec dl = t_deadline(CLOCK_MONOTONIC, 1);
				while ((r = ursa_sem_timedwait(&c->s, CLOCK_MONOTONIC, &dl)) ==
				       -ETIMEDOUT)
					dl = t_deadline(CLOCK_MONOTONIC, 1);
			}
			if (r != 0)
				return false;
			__atomic_fetch_add(&c->taken, 1, __ATOMIC_RELAXED);
		}
		return true;
	}
	/* Ping-pong pair across two processes. */
	for (int i = 0; i < P_ITERS / 2; i++) {
		if (idx == 4) {
			if (ursa_sem_post(&c->a) || ursa_sem_wait(&c->b))
				return false;
		} else {
			if (ursa_sem_wait(&c->a) || ursa_sem_post(&c->b))
				return false;
		}
	}
	return true;
}

Test(sem, processes_shared)
{
	struct pcons *c = t_shared_alloc(sizeof(*c));
	cr_assert_eq(ursa_sem_init(&c->s, 0, URSA_SHARED), 0);
	cr_assert_eq(ursa_sem_init(&c->a, 0, URSA_SHARED), 0);
	cr_assert_eq(ursa_sem_init(&c->b, 0, URSA_SHARED), 0);
	cr_assert(t_fork_all(6, pcons_child, c));
	cr_assert_eq(c->posted, 2L * P_ITERS);
	cr_assert_eq(c->taken, 2L * P_ITERS);
	cr_assert_eq(ursa_sem_value(&c->s), 0);
	cr_assert_eq(ursa_sem_value(&c->a), 0);
	cr_assert_eq(ursa_sem_value(&c->b), 0);
	cr_assert_eq(ursa_sem_destroy(&c->s), 0);
	cr_assert_eq(ursa_sem_destroy(&c->a), 0);
	cr_assert_eq(ursa_sem_destroy(&c->b), 0);
	t_shared_free(c, sizeof(*c));
}

/* ---- the fair hand-off (lib/sem.c, "Fairness") ------------------------
 *
 * A semaphore of count 1 used as a lock by two hogs and a long holder.
 * One hog waits and posts in a loop, the other barges (trywait in a loop:
 * a newcomer that never sleeps); both yield while they hold the unit (a
 * holder preempted). The long holder, in cycles, waits for the unit,
 * holds it for 2 ms (longer than URSA_FAIR_NS), posts and takes it
 * straight back. A waiter that slept through the long hold is woken by
 * that post, finds the unit taken again and goes back to sleep asking for
 * a hand-off (REQ); the long holder holds on until it sees REQ (or 5 ms
 * passed), and its next post keeps its unit in HANDED for the woken
 * waiter, where trywait and the spin cannot take it. Each test adds
 * waiters of one kind — a plain sleeper, timed waits with deadlines of
 * microseconds, ring waits that are cancelled, wait-any over a second
 * semaphore — and checks what must hold whatever the interleaving:
 * exclusion, every thread done, and at the end the one unit back in
 * __value with nothing registered, woken, requested or handed (no unit,
 * wake or registration leaked). Whether a hand-off happens is still
 * up to the library and the scheduler: each poster looks at __waiters
 * just after its post, and a watcher thread polls it, for HANDED; the
 * sleeper adds rounds (bounded) until they saw HAND_MIN hand-offs, and
 * each test asserts they saw one, so a change that makes the hand-off
 * unreachable fails instead of passing untested. (Without the long hold,
 * the waiters often settle into taking turns and nobody waits 1 ms: 1 run
 * in 10 saw no hand-off in 40000 rounds. With the waiting hog holding long
 * every 64th round, a starved hog held long rarely: 686 rounds, 17954 of
 * the sleeper to see ten hand-offs; and in one CI run under SQPOLL, with
 * another test beside it on the 2 CPUs, none in 20000. The long holder's
 * cycles do not depend on how often a hog gets in.)
 */

#define HAND_MIN 10
#define HAND_LONG_NS 2000000ull	 /* the long hold: longer than URSA_FAIR_NS */
#define HAND_REQ_WAIT_NS 5000000ull /* the longest wait for a waiter's REQ */

/* How a holder holds the unit: yielding once (preempted), for
 * HAND_LONG_NS, or until a waiter asks for a hand-off (REQ set, at most
 * HAND_REQ_WAIT_NS). */
enum hand_hold { HOLD_YIELD, HOLD_LONG, HOLD_UNTIL_REQ };

struct hand {
	ursa_sem_t s;
	struct t_excl x;
	atomic_int stop;	  /* hogs and watcher: finish */
	atomic_long entries;	  /* units taken, all threads */
	atomic_long handed_post;  /* posts just after which HANDED was set */
	atomic_long handed_watch; /* HANDED set, as the watcher saw it */
	atomic_long hog_rounds;
	atomic_long long_holds; /* the long holder's cycles */
	atomic_long errors; /* a wait or post that failed, in a thread */
	atomic_int hogs_done;
	pthread_t t[4]; /* waiting hog, barging hog, long holder, watcher */
};

static long hand_seen(struct hand *h)
{
	return atomic_load(&h->handed_post) + atomic_load(&h->handed_watch);
}

static bool hand_stopping(struct hand *h)
{
	return atomic_load_explicit(&h->stop, memory_order_relaxed);
}

static void hand_error(struct hand *h)
{
	atomic_fetch_add(&h->errors, 1);
}

static bool hand_held_on(struct hand *h, enum hand_hold how, uint64_t t0)
{
	uint64_t dt = t_now_ns() - t0;
	if (how == HOLD_LONG)
		return dt < HAND_LONG_NS;
	if (how == HOLD_UNTIL_REQ)
		return dt < HAND_REQ_WAIT_NS &&
		       !(__atomic_load_n(&h->s.__waiters, __ATOMIC_RELAXED) & SEM_REQ);
	return false;
}

/* Holding the unit: the exclusion check, and a section that yields, held
 * as how says. */
static void hand_section(struct hand *h, enum hand_hold how)
{
	t_excl_enter(&h->x);
	t_excl_write(&h->x);
	for (volatile int k = 0; k < 200; k++)
		;
	uint64_t t0 = t_now_ns();
	do
		sched_yield();
	while (hand_held_on(h, how, t0));
	t_excl_leave(&h->x);
	atomic_fetch_add_explicit(&h->entries, 1, memory_order_relaxed);
}

/* After a wait that returned r: 0, the section and the post (noting a
 * hand-off pending just after it); else count an error. */
static bool hand_held_as(struct hand *h, int r, enum hand_hold how)
{
	if (r != 0) {
		hand_error(h);
		return false;
	}
	hand_section(h, how);
	if (ursa_sem_post(&h->s) != 0)
		hand_error(h);
	if (__atomic_load_n(&h->s.__waiters, __ATOMIC_RELAXED) & SEM_HANDED)
		atomic_fetch_add_explicit(&h->handed_post, 1, memory_order_relaxed);
	return true;
}

static bool hand_held(struct hand *h, int r)
{
	return hand_held_as(h, r, HOLD_YIELD);
}

static void *hand_hog(void *arg)
{
	struct hand *h = arg;
	while (!hand_stopping(h)) {
		if (!hand_held(h, ursa_sem_wait(&h->s)))
			break;
		atomic_fetch_add_explicit(&h->hog_rounds, 1, memory_order_relaxed);
	}
	atomic_fetch_add(&h->hogs_done, 1);
	return NULL;
}

/* The long holder's cycle: wait for the unit, hold it long and post
 * (waking the waiter longest asleep), take it straight back (unless
 * someone was quicker), hold on until a waiter asks for a hand-off (at
 * most 5 ms) and post again; then 2 ms off, the others taking turns. */
static void *hand_long_holder(void *arg)
{
	struct hand *h = arg;
	while (!hand_stopping(h)) {
		if (!hand_held_as(h, ursa_sem_wait(&h->s), HOLD_LONG))
			break;
		atomic_fetch_add(&h->long_holds, 1);
		int r = -EBUSY;
		for (int k = 0; k < 1000 && r != 0; k++)
			r = ursa_sem_trywait(&h->s);
		if (r == 0 && !hand_held_as(h, 0, HOLD_UNTIL_REQ))
			break;
		struct timespec off = {0, HAND_LONG_NS};
		nanosleep(&off, NULL);
	}
	atomic_fetch_add(&h->hogs_done, 1);
	return NULL;
}

static void *hand_barger(void *arg)
{
	struct hand *h = arg;
	for (;;) {
		int r = -EBUSY;
		for (int k = 1; r != 0 && !hand_stopping(h); k++)
			if ((r = ursa_sem_trywait(&h->s)) != 0 && (k & 1023) == 0)
				sched_yield();
		if (r != 0 || !hand_held(h, r))
			break;
		atomic_fetch_add_explicit(&h->hog_rounds, 1, memory_order_relaxed);
	}
	atomic_fetch_add(&h->hogs_done, 1);
	return NULL;
}

static void *hand_watcher(void *arg)
{
	struct hand *h = arg;
	bool was = false;
	for (unsigned i = 0; !hand_stopping(h); i++) {
		bool now = __atomic_load_n(&h->s.__waiters, __ATOMIC_RELAXED) & SEM_HANDED;
		if (now && !was)
			atomic_fetch_add_explicit(&h->handed_watch, 1, memory_order_relaxed);
		was = now;
		if ((i & 63) == 0)
			sched_yield();
	}
	return NULL;
}

/* A new fixture (count 1, flags), its hogs and watcher running. */
static struct hand *hand_start(unsigned flags)
{
	static struct hand h;
	memset(&h, 0, sizeof(h));
	cr_assert_eq(ursa_sem_init(&h.s, 1, flags), 0);
	cr_assert_eq(pthread_create(&h.t[0], NULL, hand_hog, &h), 0);
	cr_assert_eq(pthread_create(&h.t[1], NULL, hand_barger, &h), 0);
	cr_assert_eq(pthread_create(&h.t[2], NULL, hand_long_holder, &h), 0);
	cr_assert_eq(pthread_create(&h.t[3], NULL, hand_watcher, &h), 0);
	while (atomic_load(&h.hog_rounds) < 100)
		sched_yield(); /* the hogs are running */
	return &h;
}

/* Stop the hogs and the watcher, join them, and check what must hold. */
static void hand_finish(struct hand *h)
{
	atomic_store(&h->stop, 1);
	t_join_all(h->t, 4);
	cr_assert_eq(atomic_load(&h->hogs_done), 3, "every hog and the long holder finished");
	cr_assert_eq(atomic_load(&h->errors), 0, "a wait or post failed");
	t_excl_check(&h->x, atomic_load(&h->entries));
	uint32_t w = __atomic_load_n(&h->s.__waiters, __ATOMIC_RELAXED);
	cr_assert_eq(ursa_sem_value(&h->s), 1, "the one unit conserved (__waiters %#x)", w);
	cr_assert_eq(ursa_sem_destroy(&h->s), 0, "left registered or handed (__waiters %#x)", w);
	cr_assert_eq(w & (SEM_WOKEN | SEM_HANDED | SEM_REQ | SEM_COUNT), 0,
		     "nothing woken, handed, requested or registered: __waiters %#x", w);
	/* The unit is in __value (a newcomer takes it), not handed. */
	cr_assert_eq(ursa_sem_trywait(&h->s), 0);
	cr_assert_eq(ursa_sem_trywait(&h->s), -EBUSY);
	cr_assert_eq(ursa_sem_post(&h->s), 0);
}

static void hand_assert_seen(struct hand *h, long rounds)
{
	cr_assert_geq(hand_seen(h), 1,
		      "hand-off not exercised: HANDED seen after %ld posts and %ld times by the "
		      "watcher, in %ld rounds of the sleeper and %ld long holds",
		      atomic_load(&h->handed_post), atomic_load(&h->handed_watch), rounds,
		      atomic_load(&h->long_holds));
}

/* The sleeper: plain waits, at least min rounds, then more (up to 20
 * times as many) until the hand-off was seen HAND_MIN times. */
struct sleeper {
	struct hand *h;
	long min, max;
	long rounds; /* done */
	pthread_t t;
};

static void *hand_sleeper(void *arg)
{
	struct sleeper *sl = arg;
	struct hand *h = sl->h;
	long i;
	for (i = 0; i < sl->max && (i < sl->min || hand_seen(h) < HAND_MIN); i++)
		if (!hand_held(h, ursa_sem_wait(&h->s)))
			break;
	sl->rounds = i;
	return NULL;
}

static void sleeper_start(struct sleeper *sl, struct hand *h, long min)
{
	*sl = (struct sleeper){.h = h, .min = t_iters(min), .max = 20 * t_iters(min)};
	cr_assert_eq(pthread_create(&sl->t, NULL, hand_sleeper, sl), 0);
}

static void sleeper_join(struct sleeper *sl)
{
	cr_assert_eq(pthread_join(sl->t, NULL), 0);
}

/* After hand_finish (which reports a failed wait first). */
static void sleeper_check(struct sleeper *sl)
{
	cr_assert_geq(sl->rounds, sl->min, "the sleeper did %ld of its %ld rounds", sl->rounds,
		      sl->min);
}

Test(sem, handoff_serves_sleeping_waiter_against_hogs)
{
	struct hand *h = hand_start(0);
	struct sleeper sl;
	sleeper_start(&sl, h, 2000);
	sleeper_join(&sl);
	hand_finish(h);
	sleeper_check(&sl);
	hand_assert_seen(h, sl.rounds);
}

/* A long queue. With more than 7 waiters registered, the time after which
 * a waiter asks for a hand-off grows with the queue (131 us a waiter, as
 * the mutex's). Twelve threads that each take the unit of a semaphore of
 * count 1 at least 200 times (holding it ~1 us), beside two more that take
 * it and post at once, must all finish, with exclusion held and the unit
 * conserved. The run must have had more than 7 waiters registered at once
 * (bits 0-23 of __waiters, seen by the holders): the workers run on until
 * a holder has seen that (or 100 x their 200 turns), and until then each
 * holder yields once while it holds the unit (a holder preempted), so that
 * the threads that run meanwhile find it held and register. (Without that
 * yield, one run of the suite in about 200, with another test beside it
 * on the 2 CPUs, saw at most 7 in 20000 turns of each worker: presumably
 * the waiters took the unit while spinning, and few slept.) */
struct sem_queue {
	ursa_sem_t s;
	struct t_excl check;
	atomic_uint most_registered;
	atomic_long done;
	atomic_int stop;
};

static void sem_queue_hold(struct sem_queue *q, int spin)
{
	t_excl_enter(&q->check);
	unsigned n = __atomic_load_n(&q->s.__waiters, __ATOMIC_RELAXED) & 0x00ffffffu;
	unsigned most = atomic_load(&q->most_registered);
	while (n > most && !atomic_compare_exchange_weak(&q->most_registered, &most, n))
		;
	for (volatile int k = 0; k < spin; k++)
		;
	if (most < 8)
		sched_yield();
	t_excl_leave(&q->check);
}

static void *sem_queue_worker(void *arg)
{
	struct sem_queue *q = *(struct sem_queue **)arg;
	for (int i = 0; i < 200 || (atomic_load(&q->most_registered) < 8 && i < 20000); i++) {
		cr_assert_eq(ursa_sem_wait(&q->s), 0);
		sem_queue_hold(q, 300);
		atomic_fetch_add(&q->done, 1);
		cr_assert_eq(ursa_sem_post(&q->s), 0);
	}
	return NULL;
}

static void *sem_queue_hog(void *arg)
{
	struct sem_queue *q = *(struct sem_queue **)arg;
	while (!atomic_load(&q->stop)) {
		cr_assert_eq(ursa_sem_wait(&q->s), 0);
		sem_queue_hold(q, 200);
		atomic_fetch_add(&q->done, 1);
		cr_assert_eq(ursa_sem_post(&q->s), 0);
	}
	return NULL;
}

Test(sem, long_queue_every_waiter_progresses_against_hogs)
{
	static struct sem_queue q;
	enum { N = 12, H = 2 };
	struct sem_queue *args[N];
	pthread_t t[N], hogs[H];
	memset(&q, 0, sizeof(q));
	cr_assert_eq(ursa_sem_init(&q.s, 1, 0), 0);
	for (int i = 0; i < N; i++)
		args[i] = &q;
	t_spawn(hogs, H, sem_queue_hog, args, sizeof(args[0]));
	t_spawn(t, N, sem_queue_worker, args, sizeof(args[0]));
	t_join_all(t, N);
	atomic_store(&q.stop, 1);
	t_join_all(hogs, H);
	t_excl_check(&q.check, atomic_load(&q.done));
	unsigned most = atomic_load(&q.most_registered);
	cr_assert_geq(most, 8, "at most %u waiters were registered at once: no long queue", most);
	cr_assert_eq(ursa_sem_value(&q.s), 1, "the unit was not conserved");
	cr_assert_eq(ursa_sem_destroy(&q.s), 0);
}

/* ---- timed waits that time out among hand-offs ----------------------- */

struct timed {
	struct hand *h;
	long min, max;
	atomic_long ok, ok_slept;	/* took a unit (after sleeping) */
	atomic_long timeouts, to_slept; /* timed out (after sleeping) */
	long iters[2];
};

static bool timed_enough(struct timed *tm)
{
	return atomic_load(&tm->ok_slept) >= HAND_MIN && atomic_load(&tm->to_slept) >= HAND_MIN;
}

static void *hand_timed(void *arg)
{
	struct timed *tm = *(struct timed **)arg;
	static atomic_int ids;
	int id = atomic_fetch_add(&ids, 1) & 1;
	struct hand *h = tm->h;
	long i;
	for (i = 0; i < tm->max && (i < tm->min || !timed_enough(tm)); i++) {
		/* Deadlines 0..50 us from now. */
		struct timespec dl = t_after_us(CLOCK_MONOTONIC, (i * 7 + id * 13) % 51);
		long sw = t_nvcsw();
		int r = ursa_sem_timedwait(&h->s, CLOCK_MONOTONIC, &dl);
		bool slept = t_nvcsw() != sw;
		if (r == -ETIMEDOUT) {
			atomic_fetch_add(&tm->timeouts, 1);
			if (slept)
				atomic_fetch_add(&tm->to_slept, 1);
			continue;
		}
		if (r == 0) {
			atomic_fetch_add(&tm->ok, 1);
			if (slept)
				atomic_fetch_add(&tm->ok_slept, 1);
		}
		if (!hand_held(h, r))
			break;
	}
	tm->iters[id] = i;
	return NULL;
}

/* Two threads' timed waits with deadlines 0..50 us away: some time out
 * after sleeping (a wake or a hand-off meant for them may be passed on),
 * some take a unit after sleeping. The semaphore is URSA_SHARED here: the
 * same paths over the shared futex operations. */
Test(sem, handoff_with_timeouts_conserves_units)
{
	struct hand *h = hand_start(URSA_SHARED);
	struct sleeper sl;
	static struct timed tm;
	memset(&tm, 0, sizeof(tm));
	tm.h = h;
	tm.min = t_iters(2000);
	tm.max = 20 * tm.min;
	struct timed *ptm[2] = {&tm, &tm};
	pthread_t t[2];
	t_spawn(t, 2, hand_timed, ptm, sizeof(ptm[0]));
	sleeper_start(&sl, h, 1000);
	t_join_all(t, 2);
	sleeper_join(&sl);
	hand_finish(h);
	cr_assert_geq(tm.iters[0], tm.min, "a timed thread did %ld of %ld rounds", tm.iters[0],
		      tm.min);
	cr_assert_geq(tm.iters[1], tm.min, "a timed thread did %ld of %ld rounds", tm.iters[1],
		      tm.min);
	cr_assert_geq(atomic_load(&tm.to_slept), 1,
		      "no timed wait timed out after sleeping (%ld timeouts in all)",
		      atomic_load(&tm.timeouts));
	cr_assert_geq(atomic_load(&tm.ok_slept), 1,
		      "no timed wait took a unit after sleeping (%ld took one in all)",
		      atomic_load(&tm.ok));
	sleeper_check(&sl);
	hand_assert_seen(h, sl.rounds);
}

/* ---- ring waits cancelled among hand-offs ----------------------------- */

Test(sem, handoff_with_cancelled_ring_waits_conserves_units)
{
	t_require_uring_futex(false);
	struct io_uring r;
	t_ring(&r, 8, 0);
	struct hand *h = hand_start(0);
	struct sleeper sl;
	sleeper_start(&sl, h, 1000);
	/* Ring waits from this thread: three in four cancelled, at once, after
	 * a yield or after a spin of varying length, racing the posts; the
	 * fourth left to be woken. Until both a cancel and a wake won
	 * (HAND_MIN times each), bounded. */
	long min = t_iters(2000), max = 20 * min, i;
	long at_once = 0, took = 0, cancelled = 0, cancel_lost = 0;
	for (i = 0; i < max && (i < min || cancelled < HAND_MIN || took < HAND_MIN); i++) {
		struct ursa_op op = URSA_OP_INIT;
		int rc = ursa_sem_wait_async(&r, &h->s, &op);
		cr_assert(rc == 0 || rc == 1, "start: %d (round %ld)", rc, i);
		if (rc == 1) {
			cr_assert_eq(op.res, 0, "finished at once: res %d", op.res);
			at_once++;
			hand_held(h, 0);
			continue;
		}
		io_uring_submit(&r);
		int mode = (int)(i & 3);
		if (mode == 1)
			sched_yield();
		else if (mode == 2)
			for (volatile int k = 0; k < (i * 37) % 4000; k++)
				;
		if (mode != 3)
			cr_assert_eq(ursa_op_cancel(&r, &op), 0);
		struct ursa_op *done = t_reap(&r, NULL, 10000);
		cr_assert_eq(done, &op, "the op never finished (round %ld)", i);
		if (op.res == -ECANCELED) {
			cr_assert_neq(mode, 3, "cancelled, and no cancel was asked for");
			cancelled++;
			continue;
		}
		cr_assert_eq(op.res, 0, "res %d (round %ld)", op.res, i);
		took++;
		cancel_lost += mode != 3;
		hand_held(h, 0);
	}
	cr_assert_eq(t_drain(&r, 20), 0, "an application CQE appeared");
	io_uring_queue_exit(&r);
	sleeper_join(&sl);
	hand_finish(h);
	cr_assert_geq(cancelled, 1,
		      "no ring wait was cancelled in %ld (%ld finished at once, %ld took a unit, "
		      "%ld of them despite a cancel)",
		      i, at_once, took, cancel_lost);
	cr_assert_geq(took, 1,
		      "no ring wait in flight took a unit in %ld (%ld finished at once, %ld "
		      "cancelled)",
		      i, at_once, cancelled);
	sleeper_check(&sl);
	hand_assert_seen(h, sl.rounds);
}

/* ---- wait-any over two semaphores among hand-offs --------------------- */

struct other {
	ursa_sem_t s2;
	atomic_int stop;
	atomic_long posted;
	atomic_long errors;
};

/* Post s2 now and then, when it is 0. */
static void *other_poster(void *arg)
{
	struct other *o = arg;
	while (!atomic_load(&o->stop)) {
		if (ursa_sem_value(&o->s2) == 0) {
			if (ursa_sem_post(&o->s2) != 0)
				atomic_fetch_add(&o->errors, 1);
			atomic_fetch_add(&o->posted, 1);
		}
		struct timespec d = {0, 20000};
		nanosleep(&d, NULL);
	}
	return NULL;
}

Test(sem, handoff_with_wait_any_conserves_units)
{
	t_require_futex_waitv();
	static struct other o;
	memset(&o, 0, sizeof(o));
	cr_assert_eq(ursa_sem_init(&o.s2, 0, 0), 0);
	struct hand *h = hand_start(0);
	struct sleeper sl;
	sleeper_start(&sl, h, 1000);
	pthread_t tp;
	cr_assert_eq(pthread_create(&tp, NULL, other_poster, &o), 0);
	/* s2 first: a wait-any woken for the semaphore (a post or a hand-off)
	 * that finds s2 posted takes s2 and must pass the semaphore's unit
	 * on. Until both were taken after a sleep HAND_MIN times, bounded. */
	ursa_waitable_t v[2] = {{URSA_WAIT_SEM, &o.s2}, {URSA_WAIT_SEM, &h->s}};
	long min = t_iters(2000), max = 20 * min, i;
	long took[2] = {0, 0}, slept[2] = {0, 0};
	for (i = 0; i < max && (i < min || slept[0] < HAND_MIN || slept[1] < HAND_MIN); i++) {
		long sw = t_nvcsw();
		int r = ursa_wait_any(v, 2, CLOCK_MONOTONIC, NULL);
		cr_assert(r == 0 || r == 1, "wait-any: %d (round %ld)", r, i);
		took[r]++;
		slept[r] += t_nvcsw() != sw;
		if (r == 1)
			hand_held(h, 0);
	}
	atomic_store(&o.stop, 1);
	cr_assert_eq(pthread_join(tp, NULL), 0);
	sleeper_join(&sl);
	hand_finish(h);
	cr_assert_eq(atomic_load(&o.errors), 0);
	cr_assert_eq(took[0] + ursa_sem_value(&o.s2), atomic_load(&o.posted),
		     "s2: taken + left == posted");
	cr_assert_eq(ursa_sem_destroy(&o.s2), 0);
	cr_assert_geq(slept[0], 1, "wait-any never took s2 after sleeping (%ld in all)", took[0]);
	cr_assert_geq(slept[1], 1, "wait-any never took the semaphore after sleeping (%ld in all)",
		      took[1]);
	sleeper_check(&sl);
	hand_assert_seen(h, sl.rounds);
}

/* ---- the poster's turn: posting the same semaphore again --------------- */

/* sched_yield, counted per thread: this program's definition comes before
 * libc's for the library too (lib/mutex.c's turn clock calls it). Not
 * instrumented: the sanitizers' runtimes call it as well. */
static _Thread_local long turn_yields;

__attribute__((no_sanitize("address", "thread", "undefined"))) int sched_yield(void)
{
	turn_yields++;
	return (int)syscall(SYS_sched_yield);
}

struct turn_sleeper {
	ursa_sem_t s;
	atomic_int stop;
	atomic_long tid;
	atomic_long took; /* the sleeper won the unit (it posts it back) */
};

/* Waits of at most 500 us: none waits long enough to ask for a hand-off
 * (which would make the poster hand the unit over instead of posting). */
static void *turn_sleeper_fn(void *arg)
{
	struct turn_sleeper *t = arg;
	atomic_store(&t->tid, (long)syscall(SYS_gettid));
	while (!atomic_load(&t->stop)) {
		struct timespec dl = t_after_us(CLOCK_MONOTONIC, 500);
		int r = ursa_sem_timedwait(&t->s, CLOCK_MONOTONIC, &dl);
		cr_assert(r == 0 || r == -ETIMEDOUT, "timedwait: %d", r);
		if (r == 0 && !atomic_load(&t->stop)) {
			/* Give it back, and let the poster take it. */
			atomic_fetch_add(&t->took, 1);
			cr_assert_eq(ursa_sem_post(&t->s), 0);
			while (ursa_sem_value(&t->s) > 0 && !atomic_load(&t->stop))
				sched_yield();
		}
	}
	return NULL;
}

/* Wait until the thread sleeps (t_is_sleeping: its only sleep is the
 * futex wait in ursa_sem_timedwait, so it is registered and has stepped
 * since its last wake). Not t_wait_sleeping: that yields, and this
 * thread's yields are what the tests count. */
static void turn_wait_asleep(struct turn_sleeper *t)
{
	long tid;
	while ((tid = atomic_load(&t->tid)) == 0)
		;
	uint64_t end = t_now_ns() + 2000000000ull;
	while (!t_is_sleeping((pid_t)tid))
		cr_assert(t_now_ns() < end, "the sleeper did not go back to sleep within 2 s");
}

/* Post the sleeper's semaphore (it sleeps: this post wakes it) and take
 * the unit back before it can, or after it gave it back. */
static void turn_post_retake(struct turn_sleeper *t)
{
	turn_wait_asleep(t);
	cr_assert_eq(ursa_sem_post(&t->s), 0);
	while (ursa_sem_trywait(&t->s) != 0)
		; /* the sleeper won it: it posts it back */
}

static void turn_start(struct turn_sleeper *t, pthread_t *tp)
{
	memset(t, 0, sizeof(*t));
	cr_assert_eq(ursa_sem_init(&t->s, 0, 0), 0);
	cr_assert_eq(pthread_create(tp, NULL, turn_sleeper_fn, t), 0);
}

static void turn_finish(struct turn_sleeper *t, pthread_t tp)
{
	atomic_store(&t->stop, 1);
	cr_assert_eq(ursa_sem_post(&t->s), 0);
	cr_assert_eq(pthread_join(tp, NULL), 0);
	cr_assert_eq(ursa_sem_destroy(&t->s), 0);
}

/* A thread that keeps posting a semaphore and taking the unit back while
 * a waiter sleeps on it keeps that waiter out: each post wakes it, it
 * finds the unit gone and sleeps again, so no post finds a woken waiter
 * still on its way. Such a poster must still get its turn clock run
 * (lib/sem.c, "Turns") and yield. The posts here are spread over well
 * more than 100 us (each waits for the sleeper to sleep again). */
Test(sem, reposting_the_same_semaphore_yields_its_turn)
{
	struct turn_sleeper t;
	pthread_t tp;
	turn_start(&t, &tp);
	turn_yields = 0;
	int i;
	for (i = 0; i < 2000 && turn_yields == 0; i++)
		turn_post_retake(&t);
	long yields = turn_yields;
	turn_finish(&t, tp);
	cr_assert_geq(yields, 1,
		      "%d posts of one semaphore, each waking its sleeper, and no yield (it won the unit %ld times)",
		      i, atomic_load(&t.took));
}

/* Posting one waiter's semaphore after another's (PostgreSQL's backends,
 * a semaphore per waiter), each post waking a waiter that sleeps, keeps
 * nobody out: that poster does not yield, however long it goes on. */
Test(sem, posting_different_semaphores_in_turn_does_not_yield)
{
	struct turn_sleeper t[2];
	pthread_t tp[2];
	turn_start(&t[0], &tp[0]);
	turn_start(&t[1], &tp[1]);
	turn_yields = 0;
	for (int i = 0; i < 1000; i++)
		turn_post_retake(&t[i & 1]);
	long yields = turn_yields;
	turn_finish(&t[0], tp[0]);
	turn_finish(&t[1], tp[1]);
	cr_assert_eq(yields, 0, "%ld yields posting two semaphores in turn", yields);
}
