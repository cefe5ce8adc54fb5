/* SPDX-License-Identifier: MIT */
/* tests/unit/shim_sem.c — libursa-pthread: unnamed POSIX semaphores. */
#include "tests/unit/shim_test.h"

#include <fcntl.h>
#include <limits.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>

TestSuite(shim_sem, .timeout = 60, .init = shim_t_require);

Test(shim_sem, every_function_is_the_shims)
{
	void *fns[] = {(void *)sem_init,    (void *)sem_destroy,   (void *)sem_wait,
		       (void *)sem_trywait, (void *)sem_timedwait, (void *)sem_clockwait,
		       (void *)sem_post,    (void *)sem_getvalue};
	shim_t_resolve_to_shim(fns, sizeof(fns) / sizeof(fns[0]));
}

Test(shim_sem, the_shim_handles_the_calls)
{
	/* ursa's semaphores carry the shim's marker after glibc's 16 bytes. */
	sem_t s;
	cr_assert_eq(sem_init(&s, 0, 5), 0);
	cr_assert_eq(memcmp((char *)&s + 16, "1mesasru", 8), 0);
	cr_assert_eq(sem_destroy(&s), 0);
}

static int err_of(int ret)
{
	return ret == 0 ? 0 : ret == -1 ? errno : -1000;
}

Test(shim_sem, counts_and_errors)
{
	sem_t s;
	int v = -1;
	struct timespec ts = {0, 1000000000L};
	cr_assert_eq(err_of(sem_init(&s, 0, (unsigned)SEM_VALUE_MAX + 1)), EINVAL);
	cr_assert_eq(sem_init(&s, 0, 2), 0);
	cr_assert_eq(sem_trywait(&s), 0);
	cr_assert_eq(sem_wait(&s), 0);
	errno = 0;
	cr_assert_eq(err_of(sem_trywait(&s)), EAGAIN);
	cr_assert_eq(err_of(sem_timedwait(&s, &ts)), EINVAL);
	ts.tv_nsec = 0;
	cr_assert_eq(err_of(sem_clockwait(&s, CLOCK_PROCESS_CPUTIME_ID, &ts)), EINVAL);
	cr_assert_eq(err_of(sem_timedwait(&s, &ts)), ETIMEDOUT);
	ts.tv_sec = -1;
	cr_assert_eq(err_of(sem_clockwait(&s, CLOCK_MONOTONIC, &ts)), ETIMEDOUT);
	cr_assert_eq(sem_post(&s), 0);
	cr_assert_eq(sem_getvalue(&s, &v), 0);
	cr_assert_eq(v, 1);
	/* A unit there now is taken whatever the deadline says. */
	ts.tv_nsec = -5;
	cr_assert_eq(sem_timedwait(&s, &ts), 0);
	cr_assert_eq(sem_destroy(&s), 0);

	cr_assert_eq(sem_init(&s, 1, SEM_VALUE_MAX), 0);
	cr_assert_eq(err_of(sem_post(&s)), EOVERFLOW);
	cr_assert_eq(sem_getvalue(&s, &v), 0);
	cr_assert_eq(v, SEM_VALUE_MAX);
	cr_assert_eq(sem_trywait(&s), 0);
	cr_assert_eq(sem_post(&s), 0);
	cr_assert_eq(sem_destroy(&s), 0);
}

/* For struct shim_t_timed: the error of sem_timedwait on CLOCK_REALTIME,
 * of sem_clockwait on the others, or (how == UNTIMED) of sem_wait. */
#define UNTIMED 1

static int timed_wait(void *s, int how, clockid_t clk, const struct timespec *dl)
{
	if (how == UNTIMED)
		return err_of(sem_wait(s));
	return err_of(clk == CLOCK_REALTIME ? sem_timedwait(s, dl) : sem_clockwait(s, clk, dl));
}

Test(shim_sem, timeouts_on_each_clock)
{
	sem_t s;
	clockid_t clocks[] = {CLOCK_REALTIME, CLOCK_MONOTONIC};
	cr_assert_eq(sem_init(&s, 0, 0), 0);
	for (int c = 0; c < 2; c++) {
		for (long ms = -5; ms <= 20; ms += 25) {
			struct shim_t_timed t = {
			    .call = timed_wait, .obj = &s, .clk = clocks[c], .ms = ms};
			cr_assert_eq(shim_t_timed_run(&t), ETIMEDOUT, "clock %d ms %ld: %d", c, ms,
				     t.ret);
		}
	}
	/* A waiter with a long deadline gets a post. */
	struct shim_t_timed t = {
	    .call = timed_wait, .obj = &s, .clk = CLOCK_MONOTONIC, .ms = 20000};
	pthread_t th;
	shim_t_timed_start(&t, &th);
	cr_assert_eq(sem_post(&s), 0);
	cr_assert_eq(pthread_join(th, NULL), 0);
	cr_assert_eq(t.ret, 0);
	cr_assert_eq(sem_destroy(&s), 0);
}

/* ------------------------------------------------- threads, processes */

#define THREADS 4
#define ITEMS	20000

struct pc {
	sem_t items, lock;
	long sum_in, sum_out, counter;
	atomic_int inside;
	bool bad;
};

static void *poster(void *p)
{
	struct pc *x = p;
	for (int i = 1; i <= ITEMS; i++) {
		__atomic_fetch_add(&x->sum_in, i, __ATOMIC_RELAXED);
		if (sem_post(&x->items))
			x->bad = true;
	}
	return NULL;
}

static void *taker(void *p)
{
	struct pc *x = p;
	for (int i = 1; i <= ITEMS; i++) {
		int r = i % 3 ? sem_wait(&x->items) : sem_trywait(&x->items);
		if (r && errno == EAGAIN) {
			i--;
			continue;
		}
		if (r)
			x->bad = true;
		/* The binary semaphore as a lock. */
		if (sem_wait(&x->lock))
			x->bad = true;
		if (atomic_fetch_add(&x->inside, 1) != 0)
			x->bad = true;
		x->sum_out += i;
		atomic_fetch_sub(&x->inside, 1);
		sem_post(&x->lock);
	}
	return NULL;
}

Test(shim_sem, threads_conserve_units)
{
	struct pc x = {0};
	pthread_t t[THREADS];
	int v = -1;
	cr_assert_eq(sem_init(&x.items, 0, 0), 0);
	cr_assert_eq(sem_init(&x.lock, 0, 1), 0);
	for (int i = 0; i < THREADS; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, i % 2 ? poster : taker, &x), 0);
	t_join_all(t, THREADS);
	cr_assert(!x.bad);
	cr_assert_eq(x.sum_in, x.sum_out, "each unit taken exactly once");
	cr_assert_eq(sem_getvalue(&x.items, &v), 0);
	cr_assert_eq(v, 0);
	cr_assert_eq(sem_destroy(&x.items), 0);
	cr_assert_eq(sem_destroy(&x.lock), 0);
}

static bool proc_taker(int i, void *arg)
{
	struct pc *x = arg;
	(void)i;
	taker(x);
	return !x->bad;
}

static bool proc_posts_twice(void *arg)
{
	struct pc *x = arg;
	poster(x);
	poster(x);
	return !x->bad;
}

Test(shim_sem, process_shared_across_fork)
{
	struct pc *x = t_shared_alloc(sizeof(*x));
	cr_assert_eq(sem_init(&x->items, 1, 0), 0);
	cr_assert_eq(sem_init(&x->lock, 1, 1), 0);
	pid_t pid = shim_t_spawn(proc_posts_twice, x);
	cr_assert(t_fork_all(2, proc_taker, x));
	cr_assert(shim_t_reaped_ok(pid));
	cr_assert_eq(x->sum_out, 2L * ITEMS * (ITEMS + 1) / 2);
	t_shared_free(x, sizeof(*x));
}

/* ---------------------------------------------------------------- EINTR */

static atomic_int handled;

static void on_signal(int sig)
{
	(void)sig;
	atomic_fetch_add(&handled, 1);
}

/* A waiter on s, through sem_clockwait (30 s ahead) or sem_wait. */
static void start_waiter(struct shim_t_timed *w, sem_t *s, bool timed, pthread_t *t)
{
	*w = (struct shim_t_timed){.call = timed_wait,
				   .obj = s,
				   .how = timed ? 0 : UNTIMED,
				   .clk = CLOCK_MONOTONIC,
				   .ms = 30000};
	shim_t_timed_start(w, t);
}

static void set_handler(int flags)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sa.sa_flags = flags;
	sigemptyset(&sa.sa_mask);
	cr_assert_eq(sigaction(SIGUSR1, &sa, NULL), 0);
}

/* Signal the waiter until it returns (a signal that lands before it sleeps
 * only runs the handler), pacing the signals by a millisecond. */
static void interrupt_until_done(pthread_t t, struct shim_t_timed *w)
{
	while (!atomic_load(&w->done)) {
		pthread_kill(t, SIGUSR1);
		t_sleep_ms(1);
	}
}

static void check_eintr(bool timed)
{
	sem_t s;
	struct shim_t_timed w;
	pthread_t t;
	int v = -1;
	set_handler(0); /* no SA_RESTART */
	cr_assert_eq(sem_init(&s, 0, 0), 0);
	start_waiter(&w, &s, timed, &t);
	interrupt_until_done(t, &w);
	cr_assert_eq(pthread_join(t, NULL), 0);
	cr_assert_eq(w.ret, EINTR);
	/* Nothing was taken or left registered: the semaphore works on. */
	cr_assert_eq(sem_getvalue(&s, &v), 0);
	cr_assert_eq(v, 0);
	cr_assert_eq(sem_post(&s), 0);
	cr_assert_eq(sem_wait(&s), 0);
	cr_assert_eq(sem_destroy(&s), 0);
	signal(SIGUSR1, SIG_DFL);
}

Test(shim_sem, eintr_from_sem_wait)
{
	check_eintr(false);
}

Test(shim_sem, eintr_from_sem_clockwait)
{
	check_eintr(true);
}

Test(shim_sem, sa_restart_keeps_waiting)
{
	sem_t s;
	struct shim_t_timed w;
	pthread_t t;
	set_handler(SA_RESTART);
	atomic_store(&handled, 0);
	cr_assert_eq(sem_init(&s, 0, 0), 0);
	start_waiter(&w, &s, false, &t);
	while (atomic_load(&handled) < 5) {
		pthread_kill(t, SIGUSR1);
		t_sleep_ms(1);
	}
	cr_assert(!atomic_load(&w.done), "the wait ended without a post");
	cr_assert_eq(sem_post(&s), 0);
	cr_assert_eq(pthread_join(t, NULL), 0);
	cr_assert_eq(w.ret, 0);
	signal(SIGUSR1, SIG_DFL);
}

/* A timed wait that a handler installed with SA_RESTART interrupts fails
 * with EINTR under glibc (the kernel restarts futex(2)'s timed wait only
 * when no handler ran), and so through the shim; an untimed one restarts
 * (sa_restart_keeps_waiting). glibc's own semaphore, a named one, is the
 * reference, checked beside the shim's on this kernel. */
static void check_sa_restart_ends_timed_wait(sem_t *s, clockid_t clk)
{
	struct shim_t_timed w = {.call = timed_wait, .obj = s, .clk = clk, .ms = 30000};
	pthread_t t;
	int v = -1;
	set_handler(SA_RESTART);
	atomic_store(&handled, 0);
	shim_t_timed_start(&w, &t);
	for (int i = 0; i < 500 && !atomic_load(&w.done); i++) {
		pthread_kill(t, SIGUSR1);
		t_sleep_ms(1);
	}
	bool ended = atomic_load(&w.done);
	if (!ended)
		cr_assert_eq(sem_post(s), 0); /* end the wait: the test fails below */
	cr_assert_eq(pthread_join(t, NULL), 0);
	cr_assert(ended, "clock %d: the wait went on through %d handlers (ret %d after a post)",
		  (int)clk, atomic_load(&handled), w.ret);
	cr_assert_eq(w.ret, EINTR, "clock %d", (int)clk);
	cr_assert_gt(atomic_load(&handled), 0);
	/* Nothing was taken or left registered. */
	cr_assert_eq(sem_getvalue(s, &v), 0);
	cr_assert_eq(v, 0);
	cr_assert_eq(sem_post(s), 0);
	cr_assert_eq(sem_wait(s), 0);
	signal(SIGUSR1, SIG_DFL);
}

Test(shim_sem, sa_restart_ends_a_timed_wait_as_glibcs)
{
	char name[64];
	snprintf(name, sizeof(name), "/ursa-shim-restart-%d", (int)getpid());
	sem_t *g = sem_open(name, O_CREAT | O_EXCL, 0600, 0);
	cr_assert(g != SEM_FAILED);
	sem_unlink(name);
	sem_t s;
	cr_assert_eq(sem_init(&s, 0, 0), 0);
	for (int c = 0; c < 2; c++) {
		clockid_t clk = c ? CLOCK_MONOTONIC : CLOCK_REALTIME;
		check_sa_restart_ends_timed_wait(g, clk);  /* glibc's */
		check_sa_restart_ends_timed_wait(&s, clk); /* the shim's */
	}
	cr_assert_eq(sem_destroy(&s), 0);
	cr_assert_eq(sem_close(g), 0);
}

/* ------------------------------------------------------ named: glibc's */

static sem_t *named;

static bool child_posts_named(void *arg)
{
	(void)arg;
	return sem_post(named) == 0;
}

Test(shim_sem, named_semaphores_stay_glibcs)
{
	char name[64];
	int v = -1;
	snprintf(name, sizeof(name), "/ursa-shim-test-%d", (int)getpid());
	named = sem_open(name, O_CREAT | O_EXCL, 0600, 1);
	cr_assert(named != SEM_FAILED);
	sem_unlink(name);
	/* glibc's layout: no marker; glibc's count word at byte 0. */
	cr_assert(memcmp((char *)named + 16, "1mesasru", 8) != 0);
	cr_assert_eq(sem_wait(named), 0);
	cr_assert_eq(*(uint32_t *)(void *)named, 0);
	cr_assert_eq(err_of(sem_trywait(named)), EAGAIN);
	/* Another process, through the shim too, reaches the same glibc
	 * semaphore. */
	cr_assert(shim_t_in_child(child_posts_named, NULL));
	cr_assert_eq(sem_getvalue(named, &v), 0);
	cr_assert_eq(v, 1);
	struct timespec ts = t_deadline(CLOCK_MONOTONIC, 1000);
	cr_assert_eq(sem_clockwait(named, CLOCK_MONOTONIC, &ts), 0);
	ts = t_deadline(CLOCK_REALTIME, 5);
	cr_assert_eq(err_of(sem_timedwait(named, &ts)), ETIMEDOUT);
	cr_assert_eq(sem_close(named), 0);
}

/* ------------------------------------------------------------ cancel */

struct cancel {
	sem_t s;
	atomic_int go;
};

static void *cancel_fn(void *p)
{
	struct cancel *x = p;
	shim_t_await(&x->go);
	for (;;)
		sem_wait(&x->s);
	return NULL;
}

Test(shim_sem, cancellation_pending_at_entry)
{
	struct cancel x = {0};
	pthread_t t;
	void *ret;
	cr_assert_eq(sem_init(&x.s, 0, 0), 0);
	cr_assert_eq(pthread_create(&t, NULL, cancel_fn, &x), 0);
	cr_assert_eq(pthread_cancel(t), 0);
	atomic_store(&x.go, 1);
	cr_assert_eq(pthread_join(t, &ret), 0);
	cr_assert_eq(ret, PTHREAD_CANCELED);
	cr_assert_eq(sem_destroy(&x.s), 0);
}

/* ---------------------------------------------- cancellation while asleep */

struct sem_asleep {
	sem_t s;
	atomic_int tid;
	atomic_int cleanup_ran;
	atomic_int took;
};

static void sem_cleanup(void *p)
{
	atomic_store(&((struct sem_asleep *)p)->cleanup_ran, 1);
}

static void *sem_asleep_fn(void *p)
{
	struct sem_asleep *x = p;
	atomic_store(&x->tid, (int)gettid());
	pthread_cleanup_push(sem_cleanup, x);
	for (;;) {
		if (sem_wait(&x->s) == 0)
			atomic_fetch_add(&x->took, 1);
	}
	pthread_cleanup_pop(0);
	return NULL;
}

static void *sem_plain(void *p)
{
	struct sem_asleep *x = p;
	while (sem_wait(&x->s) != 0)
		;
	return NULL;
}

static void post_once(void *s)
{
	sem_post(s);
}

/* pthread_cancel of a thread asleep in sem_wait: it goes at once (its
 * cleanup handler runs), takes no unit, leaves no registration (the
 * semaphore still works and can be destroyed). */
Test(shim_sem, cancel_asleep_in_sem_wait)
{
	struct sem_asleep *x = calloc(1, sizeof(*x));
	pthread_t t, w;
	cr_assert_eq(sem_init(&x->s, 0, 0), 0);
	cr_assert_eq(pthread_create(&t, NULL, sem_asleep_fn, x), 0);
	shim_t_await(&x->tid);
	shim_t_cancel_asleep(t, atomic_load(&x->tid), &x->cleanup_ran, post_once, &x->s);
	cr_assert_eq(atomic_load(&x->took), 0);
	/* Still a working semaphore: a post reaches the next waiter. */
	cr_assert_eq(pthread_create(&w, NULL, sem_plain, x), 0);
	cr_assert_eq(sem_post(&x->s), 0);
	cr_assert_eq(pthread_join(w, NULL), 0);
	int v;
	cr_assert_eq(sem_getvalue(&x->s, &v), 0);
	cr_assert_eq(v, 0);
	cr_assert_eq(sem_destroy(&x->s), 0, "a registration was left behind");
	free(x);
}
