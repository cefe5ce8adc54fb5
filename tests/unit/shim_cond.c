/* SPDX-License-Identifier: MIT */
/* tests/unit/shim_cond.c — libursa-pthread: pthread_cond_* with every mutex. */
#include "tests/unit/shim_test.h"

#include "lib/shim/shim.h" /* the overlay, for the waiter-limit test */

#include <stdio.h>

TestSuite(shim_cond, .timeout = 60, .init = shim_t_require);

enum mkind {
	M_NORMAL,
	M_RECURSIVE,
	M_ERRORCHECK,
	M_ROBUST,
	M_PI,
	M_SHARED_NORMAL,
	M_SHARED_RECURSIVE
};

static void init_mutex_shared(pthread_mutex_t *m, enum mkind k, int pshared)
{
	pthread_mutexattr_t a;
	cr_assert_eq(pthread_mutexattr_init(&a), 0);
	pthread_mutexattr_setpshared(&a, pshared);
	if (k == M_RECURSIVE || k == M_SHARED_RECURSIVE)
		pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
	if (k == M_ERRORCHECK)
		pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
	if (k == M_ROBUST)
		pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	if (k == M_PI)
		pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_INHERIT);
	cr_assert_eq(pthread_mutex_init(m, &a), 0);
	pthread_mutexattr_destroy(&a);
}

static void init_mutex(pthread_mutex_t *m, enum mkind k)
{
	init_mutex_shared(m, k,
			  k == M_SHARED_NORMAL || k == M_SHARED_RECURSIVE
			      ? PTHREAD_PROCESS_SHARED
			      : PTHREAD_PROCESS_PRIVATE);
}

/* Lock m once *count (guarded by m) has reached n; returns holding m. */
static void lock_once_counted(pthread_mutex_t *m, const int *count, int n)
{
	for (;;) {
		cr_assert_eq(pthread_mutex_lock(m), 0);
		if (*count >= n)
			return;
		cr_assert_eq(pthread_mutex_unlock(m), 0);
		sched_yield();
	}
}

/* Wait for a waiter thread's *flag, then take and drop m: a waiter that set
 * flag holding m has released m inside its wait by then, so it is
 * registered with the condvar (one that sets flag before taking m may not
 * be there yet: its caller waits for it to sleep as well). */
static void await_inside_wait(atomic_int *flag, pthread_mutex_t *m)
{
	shim_t_await(flag);
	cr_assert_eq(pthread_mutex_lock(m), 0);
	cr_assert_eq(pthread_mutex_unlock(m), 0);
}

static void init_cond(pthread_cond_t *c, clockid_t clk, int pshared)
{
	pthread_condattr_t a;
	cr_assert_eq(pthread_condattr_init(&a), 0);
	cr_assert_eq(pthread_condattr_setclock(&a, clk), 0);
	cr_assert_eq(pthread_condattr_setpshared(&a, pshared), 0);
	cr_assert_eq(pthread_cond_init(c, &a), 0);
	pthread_condattr_destroy(&a);
}

Test(shim_cond, every_function_is_the_shims)
{
	void *fns[] = {(void *)pthread_cond_init,      (void *)pthread_cond_destroy,
		       (void *)pthread_cond_wait,      (void *)pthread_cond_timedwait,
		       (void *)pthread_cond_clockwait, (void *)pthread_cond_signal,
		       (void *)pthread_cond_broadcast};
	shim_t_resolve_to_shim(fns, sizeof(fns) / sizeof(fns[0]));
}

#define WAITERS 4

/* A waiter: it counts itself in asleep and waits, under m, until go; if
 * consume, it takes a unit of go (go--). It counts in out once out. */
struct herd {
	pthread_mutex_t m;
	pthread_cond_t c;
	int go, asleep;
	bool consume;
	atomic_int out;
};

static void *herd_waiter(void *p)
{
	struct herd *h = p;
	pthread_mutex_lock(&h->m);
	h->asleep++;
	while (!h->go)
		pthread_cond_wait(&h->c, &h->m);
	if (h->consume)
		h->go--;
	pthread_mutex_unlock(&h->m);
	atomic_fetch_add(&h->out, 1);
	return NULL;
}

Test(shim_cond, the_shim_handles_the_calls)
{
	/* glibc's condvar counts a waiter as 8 in __wrefs before it drops the
	 * mutex; the shim keeps only its flags there (0 for this condvar). */
	struct herd x = {.m = PTHREAD_MUTEX_INITIALIZER, .c = PTHREAD_COND_INITIALIZER};
	pthread_t t;
	cr_assert_eq(pthread_create(&t, NULL, herd_waiter, &x), 0);
	for (;;) {
		pthread_mutex_lock(&x.m);
		if (x.c.__data.__g_signals[0] != 0 || x.c.__data.__wrefs != 0 ||
		    x.c.__data.__wseq.__value64 != 0)
			break; /* someone waits (either implementation) */
		pthread_mutex_unlock(&x.m);
		sched_yield();
	}
	cr_assert_eq(x.c.__data.__wrefs, 0, "pthread_cond_wait is glibc's, not the shim's");
	x.go = 1;
	pthread_cond_signal(&x.c);
	pthread_mutex_unlock(&x.m);
	cr_assert_eq(pthread_join(t, NULL), 0);
}

/* ---------------------------------------------------- producer/consumer */

#define ITEMS 20000
#define PAIRS 2
#define SLOTS 4

struct queue {
	pthread_mutex_t m;
	pthread_cond_t not_empty, not_full;
	enum mkind kind;
	int n, head, tail;
	int buf[SLOTS];
	long sum_in, sum_out;
	int taken;
	bool bad;
};

static void q_lock(struct queue *q)
{
	int r = pthread_mutex_lock(&q->m);
	if (r)
		q->bad = true;
	if (q->kind == M_RECURSIVE && pthread_mutex_lock(&q->m))
		q->bad = true;
}

static void q_unlock(struct queue *q)
{
	if (q->kind == M_RECURSIVE && pthread_mutex_unlock(&q->m))
		q->bad = true;
	if (pthread_mutex_unlock(&q->m))
		q->bad = true;
}

static void *producer(void *p)
{
	struct queue *q = p;
	for (int i = 1; i <= ITEMS; i++) {
		q_lock(q);
		while (q->n == SLOTS)
			if (pthread_cond_wait(&q->not_full, &q->m))
				q->bad = true;
		q->buf[q->tail] = i;
		q->tail = (q->tail + 1) % SLOTS;
		q->n++;
		q->sum_in += i;
		/* Alternate signal and broadcast: both must do. */
		if ((i & 1 ? pthread_cond_signal : pthread_cond_broadcast)(&q->not_empty))
			q->bad = true;
		q_unlock(q);
	}
	return NULL;
}

static void *consumer(void *p)
{
	struct queue *q = p;
	for (;;) {
		q_lock(q);
		while (q->n == 0 && q->taken < PAIRS * ITEMS)
			if (pthread_cond_wait(&q->not_empty, &q->m))
				q->bad = true;
		if (q->taken == PAIRS * ITEMS) {
			q_unlock(q);
			return NULL;
		}
		q->sum_out += q->buf[q->head];
		q->head = (q->head + 1) % SLOTS;
		q->n--;
		if (++q->taken == PAIRS * ITEMS)
			pthread_cond_broadcast(&q->not_empty); /* release the others */
		pthread_cond_signal(&q->not_full);
		q_unlock(q);
	}
}

static void run_queue(enum mkind kind, int cond_pshared)
{
	struct queue *q = t_shared_alloc(sizeof(*q));
	pthread_t t[2 * PAIRS];
	q->kind = kind;
	init_mutex(&q->m, kind);
	init_cond(&q->not_empty, CLOCK_MONOTONIC, cond_pshared);
	init_cond(&q->not_full, CLOCK_REALTIME, cond_pshared);
	for (int i = 0; i < PAIRS; i++) {
		cr_assert_eq(pthread_create(&t[2 * i], NULL, producer, q), 0);
		cr_assert_eq(pthread_create(&t[2 * i + 1], NULL, consumer, q), 0);
	}
	t_join_all(t, 2 * PAIRS);
	cr_assert(!q->bad, "kind %d: an error came back", kind);
	cr_assert_eq(q->taken, PAIRS * ITEMS);
	cr_assert_eq(q->sum_in, q->sum_out, "each item consumed exactly once");
	cr_assert_eq(pthread_cond_destroy(&q->not_empty), 0);
	cr_assert_eq(pthread_cond_destroy(&q->not_full), 0);
	cr_assert_eq(pthread_mutex_destroy(&q->m), 0);
	t_shared_free(q, sizeof(*q));
}

Test(shim_cond, queue_normal_mutex)
{
	run_queue(M_NORMAL, PTHREAD_PROCESS_PRIVATE);
}

Test(shim_cond, queue_recursive_mutex_held_twice)
{
	run_queue(M_RECURSIVE, PTHREAD_PROCESS_PRIVATE);
}

Test(shim_cond, queue_errorcheck_mutex)
{
	run_queue(M_ERRORCHECK, PTHREAD_PROCESS_PRIVATE);
}

/* Bridged through the condvar's guard: glibc's mutexes, and a mutex whose
 * privacy differs from the condvar's (both directions). */
Test(shim_cond, queue_robust_mutex_bridged)
{
	run_queue(M_ROBUST, PTHREAD_PROCESS_PRIVATE);
}

Test(shim_cond, queue_pi_mutex_bridged)
{
	run_queue(M_PI, PTHREAD_PROCESS_PRIVATE);
}

Test(shim_cond, queue_shared_mutex_private_cond_bridged)
{
	run_queue(M_SHARED_NORMAL, PTHREAD_PROCESS_PRIVATE);
}

Test(shim_cond, queue_private_mutex_shared_cond_bridged)
{
	run_queue(M_NORMAL, PTHREAD_PROCESS_SHARED);
}

/* ------------------------------------------------------------ timeouts */

static void check_timeout(pthread_cond_t *c, enum mkind kind, clockid_t attr_clk)
{
	pthread_mutex_t m;
	clockid_t clocks[] = {CLOCK_REALTIME, CLOCK_MONOTONIC};
	init_mutex(&m, kind);
	cr_assert_eq(pthread_mutex_lock(&m), 0);
	for (long ms = -5; ms <= 20; ms += 25) {
		struct timespec ts = t_deadline(attr_clk, ms);
		errno = 4242;
		cr_assert_eq(pthread_cond_timedwait(c, &m, &ts), ETIMEDOUT, "kind %d clock %d",
			     kind, (int)attr_clk);
		cr_assert_eq(errno, 4242);
		for (int i = 0; i < 2; i++) {
			ts = t_deadline(clocks[i], ms);
			cr_assert_eq(pthread_cond_clockwait(c, &m, clocks[i], &ts), ETIMEDOUT);
		}
	}
	/* The mutex came back each time, owned by us. */
	if (kind == M_ERRORCHECK)
		cr_assert_eq(pthread_mutex_lock(&m), EDEADLK);
	cr_assert_eq(pthread_mutex_unlock(&m), 0);
	cr_assert_eq(pthread_mutex_destroy(&m), 0);
}

Test(shim_cond, timeouts_on_each_clock)
{
	pthread_cond_t c = PTHREAD_COND_INITIALIZER, mono;
	init_cond(&mono, CLOCK_MONOTONIC, PTHREAD_PROCESS_PRIVATE);
	for (enum mkind k = M_NORMAL; k <= M_SHARED_NORMAL; k++) {
		check_timeout(&c, k, CLOCK_REALTIME);
		check_timeout(&mono, k, CLOCK_MONOTONIC);
	}
	cr_assert_eq(pthread_cond_destroy(&c), 0);
	cr_assert_eq(pthread_cond_destroy(&mono), 0);
}

Test(shim_cond, monotonic_attribute_is_used)
{
	/* A deadline 10 s ahead on CLOCK_REALTIME is far in the past on
	 * CLOCK_MONOTONIC (which counts from boot) only if the condvar really
	 * reads it on the clock of its attribute: use a MONOTONIC deadline a
	 * moment ahead, which on REALTIME would be decades in the past. */
	pthread_cond_t c;
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	struct timespec ts = t_deadline(CLOCK_MONOTONIC, 30);
	uint64_t t0 = t_now_ns();
	init_cond(&c, CLOCK_MONOTONIC, PTHREAD_PROCESS_PRIVATE);
	pthread_mutex_lock(&m);
	while (pthread_cond_timedwait(&c, &m, &ts) != ETIMEDOUT)
		;
	pthread_mutex_unlock(&m);
	cr_assert(t_now_ns() - t0 >= 30000000ull, "timed out before the MONOTONIC deadline");
}

Test(shim_cond, bad_arguments)
{
	pthread_cond_t c = PTHREAD_COND_INITIALIZER;
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	pthread_mutex_t e = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
	struct timespec ts = {0, 1000000000L};
	pthread_mutex_lock(&m);
	cr_assert_eq(pthread_cond_timedwait(&c, &m, &ts), EINVAL);
	cr_assert_eq(pthread_cond_clockwait(&c, &m, CLOCK_PROCESS_CPUTIME_ID, &ts), EINVAL);
	ts.tv_nsec = 0;
	cr_assert_eq(pthread_cond_clockwait(&c, &m, CLOCK_THREAD_CPUTIME_ID, &ts), EINVAL);
	pthread_mutex_unlock(&m);
	/* errorcheck mutex not held: EPERM, nothing waited. */
	cr_assert_eq(pthread_cond_wait(&c, &e), EPERM);
	cr_assert_eq(pthread_mutex_trylock(&e), 0);
	cr_assert_eq(pthread_mutex_unlock(&e), 0);
	/* Still usable. */
	pthread_mutex_lock(&m);
	ts = t_deadline(CLOCK_REALTIME, 1);
	cr_assert_eq(pthread_cond_timedwait(&c, &m, &ts), ETIMEDOUT);
	pthread_mutex_unlock(&m);
}

/* The same through the bridge (a mutex of glibc's, or of the other
 * privacy): a mutex the caller does not hold is EPERM, and the condvar is
 * left as it was (no waiter counted: it can be destroyed). */
Test(shim_cond, bad_arguments_bridged)
{
	enum mkind kinds[] = {M_ROBUST, M_SHARED_RECURSIVE};
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
		pthread_cond_t c;
		pthread_mutex_t m;
		cr_assert_eq(pthread_cond_init(&c, NULL), 0);
		init_mutex(&m, kinds[i]);
		cr_assert_eq(pthread_cond_wait(&c, &m), EPERM, "kind %d", kinds[i]);
		struct timespec ts = t_deadline(CLOCK_REALTIME, 1);
		cr_assert_eq(pthread_cond_timedwait(&c, &m, &ts), EPERM, "kind %d", kinds[i]);
		/* Held, it waits and times out as usual. */
		cr_assert_eq(pthread_mutex_lock(&m), 0);
		ts = t_deadline(CLOCK_REALTIME, 1);
		cr_assert_eq(pthread_cond_timedwait(&c, &m, &ts), ETIMEDOUT, "kind %d", kinds[i]);
		cr_assert_eq(pthread_mutex_unlock(&m), 0);
		cr_assert_eq(pthread_mutex_unlock(&m), EPERM, "kind %d: held once, released once",
			     kinds[i]);
		cr_assert_eq(pthread_cond_destroy(&c), 0, "kind %d: a waiter left counted",
			     kinds[i]);
		cr_assert_eq(pthread_mutex_destroy(&m), 0);
	}
}

/* --------------------------------------------------- recursive release */

/* The signaller takes m once the waiter waits (possible only if the wait
 * released all levels of a recursive m), sets flag and signals; then
 * unlocks m, or (die_holding) exits holding it. */
struct rec {
	pthread_mutex_t m;
	pthread_cond_t c;
	atomic_int waiting;
	int flag;
	bool die_holding;
};

static void *rec_signaller(void *p)
{
	struct rec *r = p;
	shim_t_await(&r->waiting);
	pthread_mutex_lock(&r->m);
	r->flag = 1;
	pthread_cond_signal(&r->c);
	if (!r->die_holding)
		pthread_mutex_unlock(&r->m);
	return NULL;
}

Test(shim_cond, recursive_mutex_released_fully_and_restored)
{
	struct rec r = {.m = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP, .c = PTHREAD_COND_INITIALIZER};
	pthread_t t;
	for (int i = 0; i < 3; i++)
		cr_assert_eq(pthread_mutex_lock(&r.m), 0);
	cr_assert_eq(pthread_create(&t, NULL, rec_signaller, &r), 0);
	atomic_store(&r.waiting, 1);
	while (!r.flag)
		cr_assert_eq(pthread_cond_wait(&r.c, &r.m), 0);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(pthread_mutex_unlock(&r.m), 0);
	cr_assert_eq(pthread_mutex_unlock(&r.m), EPERM);
	cr_assert_eq(pthread_join(t, NULL), 0);
}

/* ------------------------------------------------------------ robust */

Test(shim_cond, robust_owner_death_reaches_the_waiter)
{
	struct rec r = {.c = PTHREAD_COND_INITIALIZER, .die_holding = true};
	pthread_t t;
	int ret = 0;
	init_mutex(&r.m, M_ROBUST);
	cr_assert_eq(pthread_mutex_lock(&r.m), 0);
	cr_assert_eq(pthread_create(&t, NULL, rec_signaller, &r), 0);
	atomic_store(&r.waiting, 1);
	while (!r.flag && ret == 0)
		ret = pthread_cond_wait(&r.c, &r.m);
	cr_assert_eq(ret, EOWNERDEAD);
	cr_assert_eq(pthread_mutex_consistent(&r.m), 0);
	cr_assert_eq(pthread_mutex_unlock(&r.m), 0);
	cr_assert_eq(pthread_join(t, NULL), 0);
	cr_assert_eq(pthread_cond_destroy(&r.c), 0);
}

/* ------------------------------------------------- broadcast, destroy */

static void run_herd(enum mkind kind)
{
	struct herd *h = calloc(1, sizeof(*h));
	pthread_t t[WAITERS];
	init_mutex(&h->m, kind);
	cr_assert_eq(pthread_cond_init(&h->c, NULL), 0);
	for (int i = 0; i < WAITERS; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, herd_waiter, h), 0);
	lock_once_counted(&h->m, &h->asleep, WAITERS);
	/* One broadcast wakes every waiter; then, still holding the mutex,
	 * destroy the condvar and poison its memory (POSIX allows destroying
	 * it once no thread is blocked on it). */
	h->go = 1;
	cr_assert_eq(pthread_cond_broadcast(&h->c), 0);
	cr_assert_eq(pthread_cond_destroy(&h->c), 0);
	memset(&h->c, 0xa5, sizeof(h->c));
	pthread_mutex_unlock(&h->m);
	t_join_all(t, WAITERS);
	cr_assert_eq(atomic_load(&h->out), WAITERS);
	free(h);
}

Test(shim_cond, broadcast_then_destroy)
{
	run_herd(M_NORMAL);
}

Test(shim_cond, broadcast_then_destroy_bridged)
{
	run_herd(M_ROBUST);
}

/* ------------------------------------------------------------ processes */

#define ROUNDS 2000

struct pingpong {
	pthread_mutex_t m;
	pthread_cond_t c;
	int turn; /* 0: parent's, 1: child's */
	int count;
};

static void play(struct pingpong *p, int me)
{
	for (int i = 0; i < ROUNDS; i++) {
		pthread_mutex_lock(&p->m);
		while (p->turn != me)
			pthread_cond_wait(&p->c, &p->m);
		p->count++;
		p->turn = !me;
		pthread_cond_signal(&p->c);
		pthread_mutex_unlock(&p->m);
	}
}

static bool child_plays(void *arg)
{
	play(arg, 1);
	return true;
}

static void run_pingpong(enum mkind kind)
{
	struct pingpong *p = t_shared_alloc(sizeof(*p));
	init_mutex_shared(&p->m, kind, PTHREAD_PROCESS_SHARED);
	init_cond(&p->c, CLOCK_MONOTONIC, PTHREAD_PROCESS_SHARED);
	pid_t pid = shim_t_spawn(child_plays, p);
	play(p, 0);
	cr_assert(shim_t_reaped_ok(pid));
	cr_assert_eq(p->count, 2 * ROUNDS);
	t_shared_free(p, sizeof(*p));
}

Test(shim_cond, process_shared_pingpong)
{
	run_pingpong(M_NORMAL);
}

Test(shim_cond, process_shared_pingpong_errorcheck)
{
	run_pingpong(M_ERRORCHECK);
}

Test(shim_cond, process_shared_pingpong_robust_bridged)
{
	run_pingpong(M_ROBUST);
}

/* ------------------------------------------------------- destroy waits */

struct late {
	pthread_mutex_t m;
	pthread_cond_t c;
	atomic_int in;
	int res;
};

static void *late_leaver(void *p)
{
	struct late *x = p;
	struct timespec dl = t_deadline(CLOCK_REALTIME, 400);
	pthread_mutex_lock(&x->m);
	atomic_store(&x->in, 1);
	x->res = pthread_cond_timedwait(&x->c, &x->m, &dl);
	pthread_mutex_unlock(&x->m);
	return NULL;
}

static double ts_diff(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) + (double)(b->tv_nsec - a->tv_nsec) / 1e9;
}

/* pthread_cond_destroy waits for the waiters to leave (as glibc's does for
 * woken ones); here one leaves only at its timeout. The destroying thread
 * must sleep meanwhile, not spin: its own CPU time over the call is
 * measured against the wall time it waited: under a tenth of it (an
 * observation of how it waits; a yielding loop takes a CPU's share). */
static void run_late(enum mkind kind)
{
	struct late *x = calloc(1, sizeof(*x));
	pthread_t t;
	init_mutex(&x->m, kind);
	cr_assert_eq(pthread_cond_init(&x->c, NULL), 0);
	cr_assert_eq(pthread_create(&t, NULL, late_leaver, x), 0);
	await_inside_wait(&x->in, &x->m);
	struct timespec w0, w1, c0, c1;
	clock_gettime(CLOCK_MONOTONIC, &w0);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
	int r = pthread_cond_destroy(&x->c);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
	clock_gettime(CLOCK_MONOTONIC, &w1);
	cr_assert_eq(r, 0);
	cr_assert_eq(pthread_join(t, NULL), 0);
	cr_assert_eq(x->res, ETIMEDOUT);
	double wall = ts_diff(&w0, &w1), cpu = ts_diff(&c0, &c1);
	cr_assert_lt(cpu, wall / 10, "destroy used %.1f ms of CPU over %.1f ms waiting", cpu * 1e3,
		     wall * 1e3);
	free(x);
}

Test(shim_cond, destroy_sleeps_until_the_waiters_leave)
{
	run_late(M_NORMAL);
}

Test(shim_cond, destroy_sleeps_until_the_waiters_leave_bridged)
{
	run_late(M_ROBUST);
}

/* ------------------------------------------------------------ cancel */

struct asleep {
	struct herd h; /* m, c; the predicate go; plain waiters, consuming */
	bool timed;
	atomic_int tid;
	atomic_int cleanup_ran;
	int cleanup_unlock;	/* what pthread_mutex_unlock said in the handler */
	int took;		/* predicate_fn consumed the predicate, under m */
	atomic_int cancel_sent; /* pending_fn waits for it */
};

static void *pending_fn(void *p)
{
	struct asleep *x = p;
	pthread_mutex_lock(&x->h.m);
	shim_t_await(&x->cancel_sent); /* the request is pending before the wait */
	for (;;)
		pthread_cond_wait(&x->h.c, &x->h.m);
	return NULL;
}

/* The wait acts on a pending request, and the thread goes holding the mutex
 * (POSIX: cleanup handlers run with it held). No cleanup handler here: the
 * mutex left locked by the cancelled thread shows it. */
Test(shim_cond, cancellation_pending_at_entry)
{
	struct asleep x = {
	    .h = {.m = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP, .c = PTHREAD_COND_INITIALIZER}};
	pthread_t t;
	void *ret;
	cr_assert_eq(pthread_create(&t, NULL, pending_fn, &x), 0);
	cr_assert_eq(pthread_cancel(t), 0);
	atomic_store(&x.cancel_sent, 1);
	cr_assert_eq(pthread_join(t, &ret), 0);
	cr_assert_eq(ret, PTHREAD_CANCELED);
	cr_assert_eq(pthread_mutex_trylock(&x.h.m), EBUSY);
	cr_assert_eq(pthread_mutex_unlock(&x.h.m), EPERM, "held by the cancelled thread");
}

/* While asleep: the thread goes at once, its cleanup handler runs holding
 * the mutex, and the condvar works on. */

static void asleep_cleanup(void *p)
{
	struct asleep *x = p;
	x->cleanup_unlock = pthread_mutex_unlock(&x->h.m);
	atomic_store(&x->cleanup_ran, 1);
}

static void *asleep_fn(void *p)
{
	struct asleep *x = p;
	struct timespec far = t_deadline(CLOCK_REALTIME, 3600 * 1000);
	atomic_store(&x->tid, (int)gettid());
	pthread_mutex_lock(&x->h.m);
	pthread_cleanup_push(asleep_cleanup, x);
	for (;;) {
		if (x->timed)
			pthread_cond_timedwait(&x->h.c, &x->h.m, &far);
		else
			pthread_cond_wait(&x->h.c, &x->h.m);
	}
	pthread_cleanup_pop(1);
	return NULL;
}

/* Let a sleeper go, to report (rescues for shim_t_join_within): a bare
 * signal; or one more unit of the predicate, and a signal. */
static void signal_cond(void *c)
{
	pthread_cond_signal(c);
}

static void signal_once(void *p)
{
	struct herd *h = p;
	pthread_mutex_lock(&h->m);
	h->go++;
	pthread_cond_signal(&h->c);
	pthread_mutex_unlock(&h->m);
}

static void run_cancel_asleep(enum mkind kind, bool timed)
{
	struct asleep *x = calloc(1, sizeof(*x));
	pthread_t t, w[2];
	init_mutex(&x->h.m, kind);
	x->h.consume = true;
	cr_assert_eq(pthread_cond_init(&x->h.c, NULL), 0);
	x->timed = timed;
	cr_assert_eq(pthread_create(&t, NULL, asleep_fn, x), 0);
	await_inside_wait(&x->tid, &x->h.m);
	/* Without cancellation of a sleeping waiter this would wait for the
	 * next signal: bounded, so the test fails rather than hangs. */
	shim_t_cancel_asleep(t, atomic_load(&x->tid), &x->cleanup_ran, signal_cond, &x->h.c);
	cr_assert_eq(x->cleanup_unlock, 0, "the cleanup handler did not hold the mutex");
	/* The condvar and the mutex still work: a signal and a broadcast reach
	 * the waiters that come next; then both can be destroyed. */
	for (int i = 0; i < 2; i++)
		cr_assert_eq(pthread_create(&w[i], NULL, herd_waiter, &x->h), 0);
	t_sleep_ms(50);
	pthread_mutex_lock(&x->h.m);
	x->h.go = 1;
	cr_assert_eq(pthread_cond_signal(&x->h.c), 0);
	pthread_mutex_unlock(&x->h.m);
	while (atomic_load(&x->h.out) < 1)
		sched_yield();
	pthread_mutex_lock(&x->h.m);
	x->h.go = 1;
	cr_assert_eq(pthread_cond_broadcast(&x->h.c), 0);
	pthread_mutex_unlock(&x->h.m);
	t_join_all(w, 2);
	cr_assert_eq(atomic_load(&x->h.out), 2);
	cr_assert_eq(pthread_cond_destroy(&x->h.c), 0);
	cr_assert_eq(pthread_mutex_destroy(&x->h.m), 0);
	free(x);
}

Test(shim_cond, cancel_asleep_in_wait)
{
	run_cancel_asleep(M_NORMAL, false);
}

Test(shim_cond, cancel_asleep_in_timedwait)
{
	run_cancel_asleep(M_NORMAL, true);
}

Test(shim_cond, cancel_asleep_errorcheck_mutex)
{
	run_cancel_asleep(M_ERRORCHECK, false);
}

Test(shim_cond, cancel_asleep_recursive_mutex)
{
	run_cancel_asleep(M_RECURSIVE, true);
}

Test(shim_cond, cancel_asleep_bridged)
{
	run_cancel_asleep(M_ROBUST, false);
}

/* Bridged with one of the shim's own mutexes (a process-shared one under
 * a private condvar): the cleanup re-takes it the shim's way, recursion
 * level and owner included. */
Test(shim_cond, cancel_asleep_bridged_shared_recursive)
{
	run_cancel_asleep(M_SHARED_RECURSIVE, true);
}

/* A signal that lands just before the cancel may wake the waiter that is
 * then cancelled: the signal must not be lost for the other waiter (POSIX:
 * a cancelled waiter consumes no signal while others wait). Repeated, the
 * signal and the cancel racing; the thread either takes the signal and
 * returns normally, or is cancelled and the other waiter is woken. */
static void *predicate_fn(void *p)
{
	struct asleep *x = p;
	atomic_store(&x->tid, (int)gettid());
	pthread_mutex_lock(&x->h.m);
	pthread_cleanup_push(asleep_cleanup, x);
	while (!x->h.go)
		pthread_cond_wait(&x->h.c, &x->h.m);
	x->h.go--;
	x->took = 1;
	pthread_cleanup_pop(1);
	return NULL;
}

Test(shim_cond, cancel_does_not_eat_a_signal)
{
	int cancelled = 0;
	for (int round = 0; round < 40; round++) {
		struct asleep *x = calloc(1, sizeof(*x));
		pthread_t t, w;
		void *ret;
		init_mutex(&x->h.m, M_NORMAL);
		x->h.consume = true;
		cr_assert_eq(pthread_cond_init(&x->h.c, NULL), 0);
		cr_assert_eq(pthread_create(&t, NULL, predicate_fn, x), 0);
		await_inside_wait(&x->tid, &x->h.m);
		t_wait_sleeping(atomic_load(&x->tid));
		cr_assert_eq(pthread_create(&w, NULL, herd_waiter, &x->h), 0);
		/* The plain waiter is inside its wait once we can take m after
		 * its count (it queued after the first). */
		lock_once_counted(&x->h.m, &x->h.asleep, 1);
		x->h.go = 1;
		cr_assert_eq(pthread_cond_signal(&x->h.c), 0);
		cr_assert_eq(pthread_mutex_unlock(&x->h.m), 0);
		cr_assert_eq(pthread_cancel(t), 0);
		cr_assert_eq(pthread_join(t, &ret), 0);
		/* Whether it was cancelled before it took the predicate, not
		 * what join says: glibc's cancellation signal, delivered late
		 * (after the thread left its async window, or after its start
		 * routine returned), still sets its result to PTHREAD_CANCELED. */
		if (!x->took) {
			cr_assert_eq(ret, PTHREAD_CANCELED);
			cancelled++;
			int jr = shim_t_join_within(w, NULL, signal_once, &x->h);
			cr_assert_eq(jr, 0,
				     "round %d: the signal went down with the cancelled waiter",
				     round);
		} else {
			/* It took the signal: the other waiter needs its own. */
			signal_once(&x->h);
			cr_assert_eq(pthread_join(w, NULL), 0);
		}
		cr_assert_eq(pthread_cond_destroy(&x->h.c), 0);
		free(x);
	}
	cr_assert_gt(cancelled, 0, "no round cancelled a waiter woken by the signal");
}

/* POSIX lets a program destroy a condvar once no thread waits on it. A
 * waiter cancelled after a signal passes that signal on (above); it must do
 * so before it stops waiting, not after its cleanup has re-taken the mutex:
 * the thread that holds the mutex may destroy the condvar and reuse its
 * memory meanwhile. W1 and W2 wait, W2 queued second; holding m, the main
 * thread signals (W1 is woken, and the sequence moves past W2's snapshot),
 * cancels W2, destroys the condvar (it returns once W2 has left), fills its
 * memory with other data and lets m go. Nothing may write that memory
 * afterwards (before: W2's cleanup signalled into it once it had m). */
static union {
	pthread_cond_t c;
	uint32_t w[sizeof(pthread_cond_t) / 4];
} cd_u;
static pthread_mutex_t cd_m = PTHREAD_MUTEX_INITIALIZER;
static int cd_ready; /* guarded by cd_m */
static atomic_int cd_tid[2];

static void cd_unlock(void *p)
{
	(void)p;
	pthread_mutex_unlock(&cd_m);
}

static void *cd_waiter(void *p)
{
	int i = (int)(intptr_t)p;
	atomic_store(&cd_tid[i], (int)gettid());
	pthread_mutex_lock(&cd_m);
	cd_ready++;
	pthread_cleanup_push(cd_unlock, NULL);
	pthread_cond_wait(&cd_u.c, &cd_m); /* once: W1 is signalled, W2 cancelled */
	pthread_cleanup_pop(1);
	return NULL;
}

Test(shim_cond, cancelled_waiter_leaves_the_condvar_before_its_cleanup)
{
	for (int round = 0; round < 10; round++) {
		cr_assert_eq(pthread_cond_init(&cd_u.c, NULL), 0);
		cd_ready = 0;
		atomic_store(&cd_tid[0], 0);
		atomic_store(&cd_tid[1], 0);
		pthread_t t[2];
		for (int i = 0; i < 2; i++) {
			cr_assert_eq(pthread_create(&t[i], NULL, cd_waiter, (void *)(intptr_t)i), 0);
			/* Inside its wait once m is free after its count. */
			lock_once_counted(&cd_m, &cd_ready, i + 1);
			cr_assert_eq(pthread_mutex_unlock(&cd_m), 0);
			t_wait_sleeping(atomic_load(&cd_tid[i]));
		}
		cr_assert_eq(pthread_mutex_lock(&cd_m), 0);
		cr_assert_eq(pthread_cond_signal(&cd_u.c), 0);
		cr_assert_eq(pthread_cancel(t[1]), 0);
		cr_assert_eq(pthread_cond_destroy(&cd_u.c), 0);
		/* Other data: (as a condvar) 5 waiters, none signalled. */
		for (size_t k = 0; k < sizeof(cd_u.w) / 4; k++)
			cd_u.w[k] = 5u;
		cr_assert_eq(pthread_mutex_unlock(&cd_m), 0);
		void *ret;
		cr_assert_eq(pthread_join(t[0], &ret), 0);
		cr_assert_null(ret);
		cr_assert_eq(pthread_join(t[1], &ret), 0);
		cr_assert_eq(ret, PTHREAD_CANCELED);
		for (size_t k = 0; k < sizeof(cd_u.w) / 4; k++)
			cr_assert_eq(cd_u.w[k], 5u,
				     "round %d: word %zu of the destroyed condvar written: %#x", round,
				     k, cd_u.w[k]);
	}
}

/* ------------------------------------------------- ursa's waiter limit */

struct full_taker {
	pthread_mutex_t *m;
	atomic_int got;
};

static void *full_take(void *p)
{
	struct full_taker *t = p;
	cr_assert_eq(pthread_mutex_lock(t->m), 0);
	atomic_store(&t->got, 1);
	cr_assert_eq(pthread_mutex_unlock(t->m), 0);
	return NULL;
}

/*
 * ursa_cond_t counts at most 65535 waiters and refuses one more with
 * -EAGAIN, the mutex still held: POSIX lists no such error for
 * pthread_cond_wait. The shim lets the mutex go for a while, as a wait
 * would, and returns 0 (a spurious wakeup): another thread gets the mutex
 * meanwhile, and a timed wait ends with ETIMEDOUT. With an ursa-kind mutex
 * and with one handed to glibc (the bridged wait). The count is set
 * directly.
 */
static void check_full(enum mkind k)
{
	pthread_mutex_t m;
	pthread_cond_t c = PTHREAD_COND_INITIALIZER;
	init_mutex(&m, k);
	uint32_t *count = &shim_cond(&c)->c.__waiters;
	__atomic_store_n(count, 0xffffu, __ATOMIC_RELAXED);
	cr_assert_eq(pthread_mutex_lock(&m), 0);
	struct full_taker t = {.m = &m};
	pthread_t th;
	cr_assert_eq(pthread_create(&th, NULL, full_take, &t), 0);
	int waits = 0;
	uint64_t give_up = t_now_ns() + 10000000000ull;
	while (!atomic_load(&t.got) && t_now_ns() < give_up) {
		cr_assert_eq(pthread_cond_wait(&c, &m), 0);
		waits++;
	}
	cr_assert(atomic_load(&t.got), "no wait let the mutex go (%d waits)", waits);
	struct timespec dl = t_deadline(CLOCK_REALTIME, 20);
	int r;
	while ((r = pthread_cond_timedwait(&c, &m, &dl)) == 0)
		;
	cr_assert_eq(r, ETIMEDOUT);
	cr_assert_eq(pthread_mutex_unlock(&m), 0, "the waits returned without the mutex");
	cr_assert_eq(pthread_join(th, NULL), 0);
	cr_assert_eq(__atomic_load_n(count, __ATOMIC_RELAXED), 0xffffu, "a refusal registered");
	__atomic_store_n(count, 0, __ATOMIC_RELAXED);
	cr_assert_eq(pthread_cond_destroy(&c), 0);
	cr_assert_eq(pthread_mutex_destroy(&m), 0);
}

Test(shim_cond, full_waiter_count_is_a_spurious_wakeup)
{
	check_full(M_ERRORCHECK);
}

Test(shim_cond, full_waiter_count_is_a_spurious_wakeup_bridged)
{
	check_full(M_ROBUST);
}
