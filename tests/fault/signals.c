/* SPDX-License-Identifier: MIT */
/*
 * tests/fault/signals.c — signal storms at every waiting thread.
 *
 * A storm thread sends SIGUSR1 to every worker thread every ~20 us
 * (pthread_kill; timer slack set to 1 ns so the interval is real) while
 * the workers hammer one primitive. The handler only counts. Run with and
 * without SA_RESTART: a futex wait interrupted by a handler returns -EINTR
 * either way (futex(2) is never restarted after a handler), so ursa must
 * absorb it. The contract being checked: no blocking ursa call returns
 * -EINTR or any other spurious error, a deadline far in the future never
 * reports -ETIMEDOUT, and nothing is lost (mutual exclusion, counts
 * conserved, every waiter released).
 *
 * sem_post_from_handlers: POSIX makes sem_post async-signal-safe, and
 * programs wake a waiter from a signal handler with it; the shim's
 * sem_post is ursa_sem_post. Here the handler posts on the waiting
 * threads themselves (interrupting their own sem_wait: registered,
 * asleep, or taking) and on a thread that posts and waits in a loop
 * (interrupting its own sem_post); every post must be taken once.
 */
#include "tests/helpers.h"

#include <criterion/parameterized.h>

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

TestSuite(fault_signals, .timeout = 60);

#define NW 4

enum prim { P_MUTEX, P_RWLOCK, P_COND, P_SEM, P_EVENT, P_WAITQ, P_WAIT_ANY, P_COUNT };
static const char *const prim_name[] = {"mutex", "rwlock", "cond", "sem", "event", "waitq",
					"wait_any"};

struct storm_param {
	enum prim prim;
	int restart; /* SA_RESTART or 0 */
	unsigned flags;
};

static atomic_long handled;

static void on_usr1(int sig)
{
	(void)sig;
	atomic_fetch_add_explicit(&handled, 1, memory_order_relaxed);
}

struct storm {
	pthread_mutex_t lock; /* guards tids/n against threads being joined */
	pthread_t tids[NW + 1];
	int n;
	atomic_bool stop;
	atomic_long sent;
};

static void *storm_fn(void *arg)
{
	struct storm *s = arg;
	prctl(PR_SET_TIMERSLACK, 1UL);
	struct timespec iv = {0, 20 * 1000};
	while (!atomic_load(&s->stop)) {
		pthread_mutex_lock(&s->lock);
		for (int i = 0; i < s->n; i++)
			if (pthread_kill(s->tids[i], SIGUSR1) == 0)
				atomic_fetch_add(&s->sent, 1);
		pthread_mutex_unlock(&s->lock);
		nanosleep(&iv, NULL);
	}
	return NULL;
}

/* A deadline that will not pass during the test: -ETIMEDOUT from it would
 * be a spurious error. */
static struct timespec far(void)
{
	return t_deadline(CLOCK_MONOTONIC, 60 * 1000);
}

/* ---- the workloads ------------------------------------------------------ */

struct ctx {
	unsigned flags;
	int iters;
	atomic_int inside;
	long counter; /* protected */
	ursa_mutex_t m;
	ursa_rwlock_t l;
	ursa_cond_t c;
	ursa_sem_t s;
	ursa_event_t e;
	ursa_waitq_t *q;
	int items, produced, consumed; /* cond, under m */
	atomic_int done_waiters;
	atomic_long flushed;
};

/* The critical section yields now and then, so that the others find the
 * object taken and really go to sleep (where the signals hit them). */
static void cs(struct ctx *c)
{
	cr_assert_eq(atomic_fetch_add(&c->inside, 1), 0, "two holders");
	if ((++c->counter & 7) == 0)
		sched_yield();
	atomic_fetch_sub(&c->inside, 1);
}

static atomic_bool go;

/* A blocking call under the storm returned r: it must be 0. */
static void ok(int r, const char *what)
{
	cr_assert_eq(r, 0, "%s under signals: %d", what, r);
}

static void w_mutex(struct ctx *c, int id)
{
	(void)id;
	for (int i = 0; i < c->iters; i++) {
		struct timespec ts = far();
		ok((i & 1) ? ursa_mutex_timedlock(&c->m, CLOCK_MONOTONIC, &ts) : ursa_mutex_lock(&c->m),
		   "mutex lock");
		cs(c);
		cr_assert_eq(ursa_mutex_unlock(&c->m), 0);
	}
}

/* Two writers, two readers. */
static void w_rwlock(struct ctx *c, int id)
{
	struct timespec ts = far();
	for (int i = 0; i < c->iters; i++) {
		if (id < 2) {
			ok((i & 1) ? ursa_rwlock_timedwrlock(&c->l, CLOCK_MONOTONIC, &ts)
				   : ursa_rwlock_wrlock(&c->l),
			   "wrlock");
			cs(c);
			cr_assert_eq(ursa_rwlock_wrunlock(&c->l), 0);
			continue;
		}
		ok((i & 1) ? ursa_rwlock_timedrdlock(&c->l, CLOCK_MONOTONIC, &ts)
			   : ursa_rwlock_rdlock(&c->l),
		   "rdlock");
		cr_assert_eq(atomic_load(&c->inside), 0, "reader with a writer inside");
		cr_assert_eq(ursa_rwlock_rdunlock(&c->l), 0);
	}
}

/* Two producers, two consumers, a one-slot "buffer" (items); m is held.
 * A producer's waits alternate by its own count, a consumer's by the
 * items consumed so far. */
static void cond_wait_until(struct ctx *c, int id, int i, const struct timespec *ts)
{
	int total = 2 * c->iters;
	while (id < 2 ? c->items > 0 : (c->items == 0 && c->consumed < total)) {
		bool timed = (id < 2 ? i : c->consumed) & 1;
		ok(timed ? ursa_cond_timedwait(&c->c, &c->m, CLOCK_MONOTONIC, ts)
			 : ursa_cond_wait(&c->c, &c->m),
		   "cond wait");
	}
}

static void w_cond(struct ctx *c, int id)
{
	struct timespec ts = far();
	cr_assert_eq(ursa_mutex_lock(&c->m), 0);
	for (int i = 0; id >= 2 || i < c->iters; i++) {
		cond_wait_until(c, id, i, &ts);
		if (id < 2) {
			c->items++;
			c->produced++;
		} else if (c->consumed == 2 * c->iters) {
			break;
		} else {
			c->items--;
			c->consumed++;
		}
		cr_assert_eq(ursa_cond_broadcast(&c->c), 0);
	}
	cr_assert_eq(ursa_mutex_unlock(&c->m), 0);
}

/* Two posters, two waiters; the waiters take exactly what was posted. */
static void w_sem(struct ctx *c, int id)
{
	struct timespec ts = far();
	for (int i = 0; i < c->iters; i++) {
		if (id < 2) {
			cr_assert_eq(ursa_sem_post(&c->s), 0);
			if (i % 16 == 0)
				sched_yield();
			continue;
		}
		ok((i & 1) ? ursa_sem_timedwait(&c->s, CLOCK_MONOTONIC, &ts) : ursa_sem_wait(&c->s),
		   "sem wait");
		atomic_fetch_add(&c->done_waiters, 1);
	}
}

/* Auto-reset event as a token: wait, work alone, set. */
static void w_event(struct ctx *c, int id)
{
	(void)id;
	struct timespec ts = far();
	for (int i = 0; i < c->iters; i++) {
		ok((i & 1) ? ursa_event_timedwait(&c->e, CLOCK_MONOTONIC, &ts) : ursa_event_wait(&c->e),
		   "event wait");
		cs(c);
		cr_assert_eq(ursa_event_set(&c->e), 0);
	}
}

/* Waiters 1..3 wait for `flushed` to pass their targets; waiter 0 wakes. */
static void w_waitq(struct ctx *c, int id)
{
	while (id == 0 && atomic_load(&c->done_waiters) < NW - 1) {
		atomic_fetch_add(&c->flushed, 1);
		cr_assert_geq(ursa_waitq_wake_upto(c->q, (uint64_t)atomic_load(&c->flushed), NULL),
			      0);
		sched_yield();
	}
	if (id == 0)
		return;
	uint32_t slot = (uint32_t)id;
	for (long t = 1; t <= c->iters; t++) {
		while (atomic_load(&c->flushed) < t) {
			cr_assert_eq(ursa_waitq_prepare(c->q, slot, (uint64_t)t), 0);
			if (atomic_load(&c->flushed) >= t) {
				int r = ursa_waitq_cancel(c->q, slot);
				cr_assert(r == 0 || r == 1);
				break;
			}
			struct timespec ts = far();
			ok(ursa_waitq_wait(c->q, slot, CLOCK_MONOTONIC, (t & 1) ? &ts : NULL),
			   "waitq wait");
		}
	}
	atomic_fetch_add(&c->done_waiters, 1);
}

/* wait_any over {sem, mutex}: units are posted by waiter 0, which also
 * holds the mutex in bursts. */
static void w_wait_any(struct ctx *c, int id)
{
	int posts = id == 0 ? c->iters * (NW - 1) : 0;
	for (int i = 0; i < posts; i++) {
		if (i % 4 == 0)
			cr_assert_eq(ursa_mutex_lock(&c->m), 0);
		cr_assert_eq(ursa_sem_post(&c->s), 0);
		sched_yield(); /* let the waiters drain it and sleep */
		if (i % 4 == 3)
			cr_assert_eq(ursa_mutex_unlock(&c->m), 0);
	}
	if (id == 0) {
		if (posts % 4 != 0)
			cr_assert_eq(ursa_mutex_unlock(&c->m), 0);
		return;
	}
	ursa_waitable_t v[2] = {{URSA_WAIT_SEM, &c->s}, {URSA_WAIT_MUTEX, &c->m}};
	int got = 0;
	while (got < c->iters) {
		struct timespec ts = far();
		int r = ursa_wait_any(v, 2, CLOCK_MONOTONIC, (got & 1) ? &ts : NULL);
		cr_assert(r == 0 || r == 1, "wait_any under signals: %d", r);
		if (r == 1)
			cr_assert_eq(ursa_mutex_unlock(&c->m), 0);
		else
			got++;
	}
}

static void (*const workers[P_COUNT])(struct ctx *, int) = {
	w_mutex, w_rwlock, w_cond, w_sem, w_event, w_waitq, w_wait_any};

static void init_ctx(struct ctx *c, unsigned flags)
{
	memset(c, 0, sizeof(*c));
	c->flags = flags;
	c->iters = 3000;
	cr_assert_eq(ursa_mutex_init(&c->m, flags), 0);
	cr_assert_eq(ursa_rwlock_init(&c->l, flags), 0);
	cr_assert_eq(ursa_cond_init(&c->c, flags), 0);
	cr_assert_eq(ursa_sem_init(&c->s, 0, flags), 0);
	cr_assert_eq(ursa_event_init(&c->e, flags | URSA_EVENT_AUTO_RESET), 0);
	cr_assert_eq(ursa_event_set(&c->e), 0);
	size_t sz = ursa_waitq_size(NW);
	c->q = aligned_alloc(8, (sz + 7) & ~(size_t)7);
	cr_assert_eq(ursa_waitq_init(c->q, NW, flags), 0);
}

static void check_round(struct ctx *c, enum prim prim)
{
	switch (prim) {
	case P_MUTEX:
	case P_RWLOCK:
		cr_assert_eq(c->counter, (long)(prim == P_MUTEX ? NW : 2) * c->iters, "counter %ld",
			     c->counter);
		break;
	case P_EVENT:
		cr_assert_eq(c->counter, (long)NW * c->iters);
		cr_assert_eq(ursa_event_trywait(&c->e), 0, "the token survived");
		break;
	case P_COND:
		cr_assert_eq(c->produced, 2 * c->iters);
		cr_assert_eq(c->consumed, 2 * c->iters);
		break;
	case P_SEM:
		cr_assert_eq(atomic_load(&c->done_waiters), 2 * c->iters);
		cr_assert_eq(ursa_sem_value(&c->s), 0);
		break;
	case P_WAIT_ANY:
		cr_assert_eq(ursa_sem_value(&c->s), 0, "units lost or duplicated");
		break;
	default:
		break;
	}
	cr_assert_eq(ursa_mutex_destroy(&c->m), 0);
	cr_assert_eq(ursa_rwlock_destroy(&c->l), 0);
	cr_assert_eq(ursa_cond_destroy(&c->c), 0);
	cr_assert_eq(ursa_sem_destroy(&c->s), 0);
	free(c->q);
}

struct entry {
	struct ctx *c;
	int id;
	enum prim prim;
	atomic_int *done;
};

/* Workers start once the storm is blowing. */
static void *worker_entry(void *arg)
{
	struct entry *e = arg;
	while (!atomic_load(&go))
		sched_yield();
	workers[e->prim](e->c, e->id);
	atomic_fetch_add(e->done, 1);
	return NULL;
}

/* Rounds of the workload run under one storm until enough signals have
 * landed (a slow machine, e.g. an emulated one, needs more rounds); each
 * round's invariants are checked. */
#define TARGET_SIGNALS 300
#define MAX_ROUNDS 40

static void run_storm(struct storm_param *p)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sa.sa_flags = p->restart;
	sigemptyset(&sa.sa_mask);
	cr_assert_eq(sigaction(SIGUSR1, &sa, NULL), 0);

	static struct ctx c;
	if (p->prim == P_WAIT_ANY)
		t_require_futex_waitv();

	static struct storm st;
	memset(&st, 0, sizeof(st));
	pthread_mutex_init(&st.lock, NULL);
	pthread_t storm;
	atomic_store(&handled, 0);
	cr_assert_eq(pthread_create(&storm, NULL, storm_fn, &st), 0);
	atomic_store(&go, true);
	int rounds = 0;
	do {
		init_ctx(&c, p->flags);
		atomic_int done = 0;
		struct entry args[NW];
		pthread_mutex_lock(&st.lock);
		for (int i = 0; i < NW; i++) {
			args[i] = (struct entry){&c, i, p->prim, &done};
			cr_assert_eq(pthread_create(&st.tids[i], NULL, worker_entry, &args[i]), 0);
		}
		st.n = NW;
		pthread_mutex_unlock(&st.lock);
		while (atomic_load(&done) < NW)
			t_sleep_ms(1); /* poll without stealing the workers' CPU */
		pthread_mutex_lock(&st.lock);
		st.n = 0;
		pthread_mutex_unlock(&st.lock);
		for (int i = 0; i < NW; i++)
			cr_assert_eq(pthread_join(st.tids[i], NULL), 0);
		check_round(&c, p->prim);
	} while (++rounds < MAX_ROUNDS && atomic_load(&handled) < TARGET_SIGNALS);
	atomic_store(&st.stop, true);
	cr_assert_eq(pthread_join(storm, NULL), 0);

	/* The storm really happened. */
	cr_assert_gt(atomic_load(&handled), 0, "no signal was handled");
	cr_log_info("%s %s%s: %d rounds, %ld signals sent, %ld handled", prim_name[p->prim],
		    p->flags ? "shared " : "", p->restart ? "SA_RESTART" : "no SA_RESTART", rounds,
		    (long)atomic_load(&st.sent), (long)atomic_load(&handled));
}

ParameterizedTestParameters(fault_signals, storm)
{
	static struct storm_param params[P_COUNT * 3];
	size_t n = 0;
	for (int p = 0; p < P_COUNT; p++) {
		params[n++] = (struct storm_param){(enum prim)p, SA_RESTART, 0};
		params[n++] = (struct storm_param){(enum prim)p, 0, 0};
		params[n++] = (struct storm_param){(enum prim)p, 0, URSA_SHARED};
	}
	return cr_make_param_array(struct storm_param, params, n);
}

ParameterizedTest(struct storm_param *p, fault_signals, storm)
{
	run_storm(p);
}

/* ---- posting from a signal handler --------------------------------------- */

#define HP_WAITERS 3
#define HP_POSTS   3000

static ursa_sem_t hp_sem;
static atomic_long hp_posts, hp_in_wait, hp_in_post, hp_bad;
static _Thread_local volatile sig_atomic_t hp_waiting, hp_posting;

static void hp_handler(int sig)
{
	(void)sig;
	int saved = errno;
	if (hp_waiting)
		atomic_fetch_add_explicit(&hp_in_wait, 1, memory_order_relaxed);
	if (hp_posting)
		atomic_fetch_add_explicit(&hp_in_post, 1, memory_order_relaxed);
	if (ursa_sem_post(&hp_sem) != 0)
		atomic_fetch_add(&hp_bad, 1);
	else
		atomic_fetch_add_explicit(&hp_posts, 1, memory_order_relaxed);
	if (errno != saved)
		atomic_fetch_add(&hp_bad, 1); /* a handler must leave errno alone */
}

struct hp_waiter {
	atomic_bool *stop;
	long taken;
};

static void *hp_wait_fn(void *arg)
{
	struct hp_waiter *w = arg;
	while (!atomic_load(w->stop)) {
		hp_waiting = 1;
		int r = ursa_sem_wait(&hp_sem);
		hp_waiting = 0;
		if (r != 0)
			atomic_fetch_add(&hp_bad, 1);
		else
			w->taken++;
	}
	return NULL;
}

/* Posts and tries to take back, in a loop that never sleeps: signals land
 * inside its posts. */
static void *hp_poster_fn(void *arg)
{
	struct hp_waiter *w = arg;
	while (!atomic_load(w->stop)) {
		hp_posting = 1;
		int r = ursa_sem_post(&hp_sem);
		hp_posting = 0;
		if (r != 0)
			atomic_fetch_add(&hp_bad, 1);
		else
			w->taken--; /* one unit of its own in */
		if (ursa_sem_trywait(&hp_sem) == 0)
			w->taken++; /* (or a waiter took it) */
	}
	return NULL;
}

Test(fault_signals, sem_post_from_handlers, .timeout = 60)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = hp_handler;
	sigemptyset(&sa.sa_mask);
	cr_assert_eq(sigaction(SIGUSR2, &sa, NULL), 0);
	cr_assert_eq(ursa_sem_init(&hp_sem, 0, 0), 0);
	atomic_bool stop = false;
	struct hp_waiter w[HP_WAITERS + 1];
	pthread_t t[HP_WAITERS + 1];
	for (int i = 0; i <= HP_WAITERS; i++) {
		w[i] = (struct hp_waiter){&stop, 0};
		void *(*fn)(void *) = i < HP_WAITERS ? hp_wait_fn : hp_poster_fn;
		cr_assert_eq(pthread_create(&t[i], NULL, fn, &w[i]), 0);
	}
	/* Signal the waiters and the poster in turn, each signal one post,
	 * until HP_POSTS have been made (or 20 s: a slow machine). The
	 * poster's own posts and takes net out in w[].taken. */
	prctl(PR_SET_TIMERSLACK, 1UL);
	struct timespec iv = {0, 20 * 1000};
	uint64_t end = t_now_ns() + 20000000000ull;
	long sent = 0;
	for (int i = 0; atomic_load(&hp_posts) < HP_POSTS && t_now_ns() < end; i++) {
		if (pthread_kill(t[i % (HP_WAITERS + 1)], SIGUSR2) == 0)
			sent++;
		nanosleep(&iv, NULL);
	}
	/* Stop: let the signals still pending be handled (signals sent to a
	 * thread that had one pending merge, so fewer posts than signals is
	 * normal) until the count stays put for 50 ms, then release each
	 * thread with one more unit. */
	for (long last = -1; last != atomic_load(&hp_posts);) {
		last = atomic_load(&hp_posts);
		t_sleep_ms(50);
	}
	atomic_store(&stop, true);
	for (int i = 0; i <= HP_WAITERS; i++)
		cr_assert_eq(ursa_sem_post(&hp_sem), 0);
	long taken = 0;
	for (int i = 0; i <= HP_WAITERS; i++)
		cr_assert_eq(pthread_join(t[i], NULL), 0);
	for (int i = 0; i <= HP_WAITERS; i++)
		taken += w[i].taken;
	long posts = atomic_load(&hp_posts) + HP_WAITERS + 1;
	int left = ursa_sem_value(&hp_sem);
	cr_assert_eq(atomic_load(&hp_bad), 0, "a post or wait failed, or errno changed");
	cr_assert_eq(taken + left, posts, "units: %ld taken + %d left != %ld posted", taken, left,
		     posts);
	cr_assert_eq(ursa_sem_destroy(&hp_sem), 0, "a waiter left registered");
	/* The races were there: posts from a handler that interrupted its
	 * own thread inside ursa_sem_wait, and inside ursa_sem_post. */
	cr_assert_gt(atomic_load(&hp_in_wait), 0, "no post interrupted a wait");
	cr_assert_gt(atomic_load(&hp_in_post), 0, "no post interrupted a post");
	cr_log_info("sem_post from handlers: %ld signals, %ld posts, %ld inside a wait, %ld inside "
		    "a post, %ld taken",
		    sent, (long)atomic_load(&hp_posts), (long)atomic_load(&hp_in_wait),
		    (long)atomic_load(&hp_in_post), taken);
}
