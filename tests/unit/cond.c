/* SPDX-License-Identifier: MIT */
/* tests/unit/cond.c — ursa_cond_t with ursa_mutex_t: no lost signal,
 * exactly-once hand-over, errors, timeouts, sharing across processes. */
#include "tests/helpers.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

TestSuite(cond, .timeout = 60);

Test(cond, sizes)
{
	cr_assert_eq(sizeof(ursa_cond_t), 8);
	cr_assert_eq(_Alignof(ursa_cond_t), 4);
}

/* Another thread's view of m: -EBUSY while anyone holds it. */
static void *other_trylock(void *arg)
{
	ursa_mutex_t *m = arg;
	intptr_t r = ursa_mutex_trylock(m);
	if (r == 0)
		ursa_mutex_unlock(m);
	return (void *)r;
}

static int trylock_from_other_thread(ursa_mutex_t *m)
{
	pthread_t t;
	void *res;
	cr_assert_eq(pthread_create(&t, NULL, other_trylock, m), 0);
	cr_assert_eq(pthread_join(t, &res), 0);
	return (int)(intptr_t)res;
}

Test(cond, zero_is_valid)
{
	ursa_cond_t c = URSA_COND_INIT;
	ursa_mutex_t m = URSA_MUTEX_INIT;
	cr_assert_eq(ursa_cond_signal(&c), 0);
	cr_assert_eq(ursa_cond_broadcast(&c), 0);
	cr_assert_eq(ursa_cond_destroy(&c), 0);
	struct timespec past = t_deadline(CLOCK_MONOTONIC, -1);
	cr_assert_eq(ursa_mutex_lock(&m), 0);
	cr_assert_eq(ursa_cond_timedwait(&c, &m, CLOCK_MONOTONIC, &past), -ETIMEDOUT);
	cr_assert_eq(trylock_from_other_thread(&m), -EBUSY, "m held again after the wait");
	cr_assert_eq(ursa_mutex_unlock(&m), 0);
	cr_assert_eq(ursa_cond_destroy(&c), 0, "the timed-out waiter deregistered");
	cr_assert_eq(ursa_mutex_destroy(&m), 0);
}

Test(cond, bad_input)
{
	ursa_cond_t c;
	ursa_mutex_t m = URSA_MUTEX_INIT;
	struct timespec ts = {0, 0};
	cr_assert_eq(ursa_cond_init(NULL, 0), -EINVAL);
	cr_assert_eq(ursa_cond_init(&c, 0x2), -EINVAL);
	cr_assert_eq(ursa_cond_init(&c, ~0u), -EINVAL);
	cr_assert_eq(ursa_cond_init(&c, 0), 0);
	cr_assert_eq(ursa_cond_signal(NULL), -EINVAL);
	cr_assert_eq(ursa_cond_broadcast(NULL), -EINVAL);
	cr_assert_eq(ursa_cond_destroy(NULL), -EINVAL);
	cr_assert_eq(ursa_mutex_lock(&m), 0);
	cr_assert_eq(ursa_cond_wait(NULL, &m), -EINVAL);
	cr_assert_eq(ursa_cond_wait(&c, NULL), -EINVAL);
	cr_assert_eq(ursa_cond_timedwait(NULL, &m, CLOCK_MONOTONIC, NULL), -EINVAL);
	cr_assert_eq(ursa_cond_timedwait(&c, NULL, CLOCK_MONOTONIC, NULL), -EINVAL);
	/* Bad clocks and malformed deadlines: refused before waiting, m held. */
	cr_assert_eq(ursa_cond_timedwait(&c, &m, CLOCK_PROCESS_CPUTIME_ID, &ts), -EINVAL);
	cr_assert_eq(ursa_cond_timedwait(&c, &m, CLOCK_BOOTTIME, NULL), -EINVAL);
	ts.tv_nsec = 1000000000L;
	cr_assert_eq(ursa_cond_timedwait(&c, &m, CLOCK_MONOTONIC, &ts), -EINVAL);
	ts.tv_nsec = -1;
	cr_assert_eq(ursa_cond_timedwait(&c, &m, CLOCK_REALTIME, &ts), -EINVAL);
	ts.tv_nsec = 0;
	ts.tv_sec = -5;
	cr_assert_eq(ursa_cond_timedwait(&c, &m, CLOCK_REALTIME, &ts), -EINVAL);
	cr_assert_eq(trylock_from_other_thread(&m), -EBUSY, "m still held");
	cr_assert_eq(ursa_cond_destroy(&c), 0, "nothing registered");
	/* Still usable. */
	struct timespec past = t_deadline(CLOCK_REALTIME, -1);
	cr_assert_eq(ursa_cond_timedwait(&c, &m, CLOCK_REALTIME, &past), -ETIMEDOUT);
	cr_assert_eq(ursa_mutex_unlock(&m), 0);
	cr_assert_eq(ursa_cond_signal(&c), 0);
	cr_assert_eq(ursa_cond_destroy(&c), 0);
}

static void check_eperm(unsigned flags)
{
	ursa_cond_t c;
	ursa_mutex_t m;
	struct timespec dl = t_deadline(CLOCK_MONOTONIC, 1000);
	cr_assert_eq(ursa_cond_init(&c, flags), 0);
	cr_assert_eq(ursa_mutex_init(&m, flags), 0);
	cr_assert_eq(ursa_cond_wait(&c, &m), -EPERM);
	cr_assert_eq(ursa_cond_timedwait(&c, &m, CLOCK_MONOTONIC, &dl), -EPERM);
	cr_assert_eq(ursa_cond_timedwait(&c, &m, CLOCK_REALTIME, NULL), -EPERM);
	cr_assert_eq(ursa_cond_destroy(&c), 0, "nothing registered");
	/* m was left unlocked, and both still work. */
	cr_assert_eq(ursa_mutex_trylock(&m), 0);
	struct timespec past = t_deadline(CLOCK_MONOTONIC, -1);
	cr_assert_eq(ursa_cond_timedwait(&c, &m, CLOCK_MONOTONIC, &past), -ETIMEDOUT);
	cr_assert_eq(ursa_mutex_unlock(&m), 0);
	cr_assert_eq(ursa_mutex_destroy(&m), 0);
	cr_assert_eq(ursa_cond_destroy(&c), 0);
}

Test(cond, wait_without_mutex_is_eperm)
{
	check_eperm(0);
	check_eperm(URSA_SHARED);
}

Test(cond, privacy_mismatch_is_einval)
{
	for (int i = 0; i < 2; i++) {
		ursa_cond_t c;
		ursa_mutex_t m;
		struct timespec dl = t_deadline(CLOCK_MONOTONIC, 1000);
		cr_assert_eq(ursa_cond_init(&c, i ? URSA_SHARED : 0), 0);
		cr_assert_eq(ursa_mutex_init(&m, i ? 0 : URSA_SHARED), 0);
		cr_assert_eq(ursa_mutex_lock(&m), 0);
		cr_assert_eq(ursa_cond_wait(&c, &m), -EINVAL);
		cr_assert_eq(ursa_cond_timedwait(&c, &m, CLOCK_MONOTONIC, &dl), -EINVAL);
		cr_assert_eq(trylock_from_other_thread(&m), -EBUSY, "m still held");
		cr_assert_eq(ursa_cond_destroy(&c), 0, "nothing registered");
		cr_assert_eq(ursa_mutex_unlock(&m), 0);
		/* The check comes before the lock check: unlocked m, same answer. */
		cr_assert_eq(ursa_cond_wait(&c, &m), -EINVAL);
		cr_assert_eq(ursa_mutex_destroy(&m), 0);
	}
}

static void assert_past(clockid_t clk, struct timespec dl)
{
	struct timespec now;
	clock_gettime(clk, &now);
	cr_assert(now.tv_sec > dl.tv_sec || (now.tv_sec == dl.tv_sec && now.tv_nsec >= dl.tv_nsec),
		  "returned before the deadline");
}

Test(cond, timedwait_times_out_holding_mutex)
{
	clockid_t clks[] = {CLOCK_MONOTONIC, CLOCK_REALTIME};
	for (unsigned f = 0; f <= URSA_SHARED; f++) {
		for (int i = 0; i < 2; i++) {
			ursa_cond_t c;
			ursa_mutex_t m;
			cr_assert_eq(ursa_cond_init(&c, f), 0);
			cr_assert_eq(ursa_mutex_init(&m, f), 0);
			cr_assert_eq(ursa_mutex_lock(&m), 0);
			struct timespec dl = t_deadline(clks[i], 20);
			cr_assert_eq(ursa_cond_timedwait(&c, &m, clks[i], &dl), -ETIMEDOUT);
			assert_past(clks[i], dl);
			cr_assert_eq(trylock_from_other_thread(&m), -EBUSY, "m held on -ETIMEDOUT");
			/* A past deadline: no sleep, same result. */
			struct timespec past = t_deadline(clks[i], -20);
			cr_assert_eq(ursa_cond_timedwait(&c, &m, clks[i], &past), -ETIMEDOUT);
			cr_assert_eq(trylock_from_other_thread(&m), -EBUSY);
			cr_assert_eq(ursa_mutex_unlock(&m), 0);
			cr_assert_eq(ursa_cond_destroy(&c), 0, "timed-out waiters deregistered");
			cr_assert_eq(ursa_mutex_destroy(&m), 0);
		}
	}
}

/* ---- waiters and wakers ---------------------------------------------- */

struct gate {
	ursa_mutex_t m;
	ursa_cond_t c;
	int nwaiting; /* under m: waiters that entered the wait loop */
	int go;	      /* under m */
	int tokens;   /* under m */
	int woken;    /* under m */
	long deadline_ms;
	atomic_int errors;
};

static void *gate_waiter(void *arg)
{
	struct gate *g = arg;
	if (ursa_mutex_lock(&g->m) != 0) {
		atomic_fetch_add(&g->errors, 1);
		return NULL;
	}
	g->nwaiting++;
	while (!g->go) {
		int r;
		if (g->deadline_ms) {
			struct timespec dl = t_deadline(CLOCK_MONOTONIC, g->deadline_ms);
			r = ursa_cond_timedwait(&g->c, &g->m, CLOCK_MONOTONIC, &dl);
		} else {
			r = ursa_cond_wait(&g->c, &g->m);
		}
		if (r != 0)
			atomic_fetch_add(&g->errors, 1); /* a timeout is a lost wake */
	}
	g->woken++;
	ursa_mutex_unlock(&g->m);
	return NULL;
}

/* Wait (polling under m) until n waiters are inside cond_wait: each
 * counted itself under m and then released m only by waiting. */
static void wait_for_waiters(struct gate *g, int n)
{
	for (;;) {
		cr_assert_eq(ursa_mutex_lock(&g->m), 0);
		if (g->nwaiting == n)
			return; /* returns holding m */
		cr_assert_eq(ursa_mutex_unlock(&g->m), 0);
		sched_yield();
	}
}

/* One more gate_waiter; returns holding m once n waiters have counted
 * themselves (this one the n-th). */
static pthread_t gate_start(struct gate *g, int n)
{
	pthread_t t;
	cr_assert_eq(pthread_create(&t, NULL, gate_waiter, g), 0);
	wait_for_waiters(g, n);
	return t;
}

/* Open the gate, signal `signals` times and unlock m; join the waiter. */
static void gate_release(struct gate *g, pthread_t t, int signals)
{
	g->go = 1;
	for (int i = 0; i < signals; i++)
		cr_assert_eq(ursa_cond_signal(&g->c), 0);
	cr_assert_eq(ursa_mutex_unlock(&g->m), 0);
	cr_assert_eq(pthread_join(t, NULL), 0);
}

static void check_broadcast_wakes_all(unsigned flags, long deadline_ms)
{
	enum { K = 6 };
	static struct gate g;
	memset(&g, 0, sizeof(g));
	cr_assert_eq(ursa_mutex_init(&g.m, flags), 0);
	cr_assert_eq(ursa_cond_init(&g.c, flags), 0);
	g.deadline_ms = deadline_ms;
	pthread_t t[K];
	t_spawn(t, K, gate_waiter, &g, 0);
	wait_for_waiters(&g, K);
	cr_assert_eq(ursa_cond_destroy(&g.c), -EBUSY, "waiters are registered");
	/* One broadcast, and never another: a waiter it missed hangs. */
	g.go = 1;
	cr_assert_eq(ursa_cond_broadcast(&g.c), 0);
	cr_assert_eq(ursa_mutex_unlock(&g.m), 0);
	t_join_all(t, K);
	cr_assert_eq(atomic_load(&g.errors), 0);
	cr_assert_eq(g.woken, K);
	cr_assert_eq(ursa_cond_destroy(&g.c), 0);
	cr_assert_eq(ursa_mutex_destroy(&g.m), 0);
}

Test(cond, broadcast_wakes_every_waiter)
{
	check_broadcast_wakes_all(0, 0);
	check_broadcast_wakes_all(URSA_SHARED, 0);
	check_broadcast_wakes_all(0, 30000); /* timed waiters, far deadline */
}

static void *token_waiter(void *arg)
{
	struct gate *g = arg;
	ursa_mutex_lock(&g->m);
	g->nwaiting++;
	while (g->tokens == 0)
		if (ursa_cond_wait(&g->c, &g->m) != 0)
			atomic_fetch_add(&g->errors, 1);
	g->tokens--;
	g->woken++;
	ursa_mutex_unlock(&g->m);
	return NULL;
}

/* K sleepers, K signals, each with one token: every sleeper must leave.
 * A signal that wakes nobody (or the wrong, already-woken waiter) leaves
 * a token with no one to take it and a sleeper that hangs. */
static void check_signals_not_lost(unsigned flags, bool signal_under_m)
{
	enum { K = 6 };
	static struct gate g;
	memset(&g, 0, sizeof(g));
	cr_assert_eq(ursa_mutex_init(&g.m, flags), 0);
	cr_assert_eq(ursa_cond_init(&g.c, flags), 0);
	pthread_t t[K];
	t_spawn(t, K, token_waiter, &g, 0);
	wait_for_waiters(&g, K);
	cr_assert_eq(ursa_mutex_unlock(&g.m), 0);
	for (int i = 0; i < K; i++) {
		cr_assert_eq(ursa_mutex_lock(&g.m), 0);
		g.tokens++;
		if (signal_under_m)
			cr_assert_eq(ursa_cond_signal(&g.c), 0);
		cr_assert_eq(ursa_mutex_unlock(&g.m), 0);
		if (!signal_under_m)
			cr_assert_eq(ursa_cond_signal(&g.c), 0);
	}
	t_join_all(t, K);
	cr_assert_eq(atomic_load(&g.errors), 0);
	cr_assert_eq(g.woken, K);
	cr_assert_eq(g.tokens, 0);
	cr_assert_eq(ursa_cond_destroy(&g.c), 0);
}

Test(cond, signals_are_not_lost)
{
	for (int rep = 0; rep < 20; rep++) {
		check_signals_not_lost(0, true);
		check_signals_not_lost(URSA_SHARED, false);
	}
}

Test(cond, destroy_with_waiter_is_ebusy)
{
	static struct gate g;
	memset(&g, 0, sizeof(g));
	pthread_t t = gate_start(&g, 1);
	cr_assert_eq(ursa_cond_destroy(&g.c), -EBUSY);
	gate_release(&g, t, 1);
	cr_assert_eq(atomic_load(&g.errors), 0);
	cr_assert_eq(ursa_cond_destroy(&g.c), 0);
}

/* Signals while the one waiter is woken but not yet gone make no new wake
 * (it is on its way); once it has left, the count of signalled waiters is
 * back to zero, so the next waiter's signal wakes it. A count left too high
 * would skip that signal and leave the second waiter asleep. */
Test(cond, signals_to_a_waiter_on_its_way_leave_no_debt)
{
	static struct gate g;
	for (int rep = 0; rep < 50; rep++) {
		memset(&g, 0, sizeof(g));
		/* A is woken by the first signal; the others find it signalled. */
		gate_release(&g, gate_start(&g, 1), 3);
		cr_assert_eq(ursa_cond_destroy(&g.c), 0, "A left: nobody registered");
		g.go = 0;
		gate_release(&g, gate_start(&g, 2), 1);
		cr_assert_eq(atomic_load(&g.errors), 0);
		cr_assert_eq(g.woken, 2);
	}
}

/* 65535 waiters at once is the limit (the count's width, lib/cond.c): one
 * more is -EAGAIN, with m still held and nothing registered. The count is
 * set directly (the word layout is lib/cond.c's), then put back. */
Test(cond, too_many_waiters_is_eagain)
{
	ursa_mutex_t m = URSA_MUTEX_INIT;
	ursa_cond_t c = URSA_COND_INIT;
	cr_assert_eq(ursa_mutex_lock(&m), 0);
	c.__waiters = 0xffffu;
	struct timespec dl = t_deadline(CLOCK_MONOTONIC, 0);
	cr_assert_eq(ursa_cond_wait(&c, &m), -EAGAIN);
	cr_assert_eq(ursa_cond_timedwait(&c, &m, CLOCK_MONOTONIC, &dl), -EAGAIN);
	cr_assert_eq(trylock_from_other_thread(&m), -EBUSY, "m still held");
	cr_assert_eq(c.__waiters, 0xffffu, "nothing registered");
	c.__waiters = 0;
	cr_assert_eq(ursa_cond_timedwait(&c, &m, CLOCK_MONOTONIC, &dl), -ETIMEDOUT);
	cr_assert_eq(ursa_cond_destroy(&c), 0);
	cr_assert_eq(ursa_mutex_unlock(&m), 0);
}

/* A timed waiter that is signalled returns 0, not -ETIMEDOUT, and holds m. */
Test(cond, timedwait_signalled_returns_zero)
{
	static struct gate g;
	memset(&g, 0, sizeof(g));
	g.deadline_ms = 30000;
	gate_release(&g, gate_start(&g, 1), 1);
	cr_assert_eq(atomic_load(&g.errors), 0, "the signalled timed wait failed");
	cr_assert_eq(g.woken, 1);
}

/* ---- producer/consumer: every item consumed exactly once -------------- */

#define PC_ITEMS 20000
#define PC_QLEN	 8

struct pc {
	ursa_mutex_t m;
	ursa_cond_t not_empty;
	ursa_cond_t not_full;
	int q[PC_QLEN]; /* ring, under m */
	int head, count;
	int producers_left;
	bool broadcast;
	atomic_int errors;
	int seen[PC_ITEMS + 1]; /* per item, under m */
};

static void pc_wake(struct pc *p, ursa_cond_t *c)
{
	int r = p->broadcast ? ursa_cond_broadcast(c) : ursa_cond_signal(c);
	if (r != 0)
		atomic_fetch_add(&p->errors, 1);
}

static bool pc_put(struct pc *p, int item)
{
	if (ursa_mutex_lock(&p->m) != 0)
		return false;
	while (p->count == PC_QLEN)
		if (ursa_cond_wait(&p->not_full, &p->m) != 0)
			return false;
	p->q[(p->head + p->count) % PC_QLEN] = item;
	p->count++;
	pc_wake(p, &p->not_empty);
	return ursa_mutex_unlock(&p->m) == 0;
}

static int pc_get(struct pc *p)
{
	if (ursa_mutex_lock(&p->m) != 0)
		return -2;
	while (p->count == 0)
		if (ursa_cond_wait(&p->not_empty, &p->m) != 0)
			return -2;
	int item = p->q[p->head];
	p->head = (p->head + 1) % PC_QLEN;
	p->count--;
	if (item > 0)
		p->seen[item]++;
	pc_wake(p, &p->not_full);
	if (ursa_mutex_unlock(&p->m) != 0)
		return -2;
	return item;
}

/* Producer idx of nprod makes items idx+1, idx+1+nprod, ... The last
 * producer to finish queues one end marker (0) per consumer. */
static bool pc_produce(struct pc *p, int idx, int nprod, int ncons)
{
	for (int item = idx + 1; item <= PC_ITEMS; item += nprod)
		if (!pc_put(p, item))
			return false;
	if (ursa_mutex_lock(&p->m) != 0)
		return false;
	bool last = --p->producers_left == 0;
	if (ursa_mutex_unlock(&p->m) != 0)
		return false;
	for (int i = 0; last && i < ncons; i++)
		if (!pc_put(p, 0))
			return false;
	return true;
}

static bool pc_consume(struct pc *p)
{
	for (;;) {
		int item = pc_get(p);
		if (item < 0)
			return false;
		if (item == 0)
			return true;
	}
}

struct pc_arg {
	struct pc *p;
	int idx;
};

static void *pc_thread(void *arg)
{
	struct pc_arg *a = arg;
	bool ok = a->idx < 2 ? pc_produce(a->p, a->idx, 2, 2) : pc_consume(a->p);
	if (!ok)
		atomic_fetch_add(&a->p->errors, 1);
	return NULL;
}

static void pc_init(struct pc *p, unsigned flags, bool broadcast)
{
	memset(p, 0, sizeof(*p));
	cr_assert_eq(ursa_mutex_init(&p->m, flags), 0);
	cr_assert_eq(ursa_cond_init(&p->not_empty, flags), 0);
	cr_assert_eq(ursa_cond_init(&p->not_full, flags), 0);
	p->producers_left = 2;
	p->broadcast = broadcast;
}

static void pc_check(struct pc *p)
{
	cr_assert_eq(atomic_load(&p->errors), 0);
	for (int i = 1; i <= PC_ITEMS; i++)
		cr_assert_eq(p->seen[i], 1, "item %d consumed %d times", i, p->seen[i]);
	cr_assert_eq(p->count, 0);
	cr_assert_eq(ursa_cond_destroy(&p->not_empty), 0);
	cr_assert_eq(ursa_cond_destroy(&p->not_full), 0);
	cr_assert_eq(ursa_mutex_destroy(&p->m), 0);
}

static void run_pc_threads(unsigned flags, bool broadcast)
{
	static struct pc p;
	pc_init(&p, flags, broadcast);
	struct pc_arg a[4];
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		a[i] = (struct pc_arg){&p, i};
	t_spawn(t, 4, pc_thread, a, sizeof(a[0]));
	t_join_all(t, 4);
	pc_check(&p);
}

Test(cond, producer_consumer_signal)
{
	run_pc_threads(0, false);
}

Test(cond, producer_consumer_broadcast)
{
	run_pc_threads(0, true);
}

Test(cond, producer_consumer_shared_flag_threads)
{
	run_pc_threads(URSA_SHARED, false);
}

static bool pc_child(int idx, void *arg)
{
	struct pc *p = arg;
	return idx < 2 ? pc_produce(p, idx, 2, 2) : pc_consume(p);
}

static void run_pc_processes(bool broadcast)
{
	struct pc *p = t_shared_alloc(sizeof(*p));
	pc_init(p, URSA_SHARED, broadcast);
	cr_assert(t_fork_all(4, pc_child, p), "a child failed");
	pc_check(p);
	t_shared_free(p, sizeof(*p));
}

Test(cond, producer_consumer_processes_signal)
{
	run_pc_processes(false);
}

Test(cond, producer_consumer_processes_broadcast)
{
	run_pc_processes(true);
}

/* A process sleeping in cond_wait is woken by a signal from another. */
static bool gate_child(int idx, void *arg)
{
	(void)idx;
	struct gate *g = arg;
	if (ursa_mutex_lock(&g->m) != 0)
		return false;
	g->nwaiting++;
	while (!g->go)
		if (ursa_cond_wait(&g->c, &g->m) != 0)
			return false;
	g->woken++;
	return ursa_mutex_unlock(&g->m) == 0;
}

Test(cond, processes_broadcast_wakes_all)
{
	struct gate *g = t_shared_alloc(sizeof(*g));
	cr_assert_eq(ursa_mutex_init(&g->m, URSA_SHARED), 0);
	cr_assert_eq(ursa_cond_init(&g->c, URSA_SHARED), 0);
	pid_t pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		t_die_with_parent();
		_exit(t_fork_all(4, gate_child, g) ? 0 : 1);
	}
	wait_for_waiters(g, 4);
	cr_assert_eq(ursa_cond_destroy(&g->c), -EBUSY);
	g->go = 1;
	cr_assert_eq(ursa_cond_broadcast(&g->c), 0);
	cr_assert_eq(ursa_mutex_unlock(&g->m), 0);
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	cr_assert_eq(g->woken, 4);
	cr_assert_eq(ursa_cond_destroy(&g->c), 0);
	t_shared_free(g, sizeof(*g));
}
