/* SPDX-License-Identifier: MIT */
/* tests/unit/sem.c — ursa_sem_t: counts conserved, errors, timeouts, sharing. */
#include "tests/helpers.h"

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
