/* SPDX-License-Identifier: MIT */
/*
 * tests/integration/rwlock_cond.c — rwlock, cond and mutex together, across
 * threads inside several processes sharing one MAP_SHARED segment.
 *
 * The parent queues work items (mutex + cond, signal per item). Worker
 * threads in each child process take items and apply each as a transfer
 * between two accounts under the write lock; auditor threads in the same
 * processes sum every account under the read lock, which must always be
 * zero (a torn read means a writer overlapped a reader). At the end each
 * item must have been applied exactly once.
 */
#include "tests/helpers.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

TestSuite(rwlock_cond, .timeout = 60);

#define NPROC		  3
#define WORKERS_PER_PROC  2
#define AUDITORS_PER_PROC 1
#define NITEMS		  6000
#define NACCOUNTS	  16
#define QLEN		  4

struct shm {
	/* the work queue */
	ursa_mutex_t m;
	ursa_cond_t not_empty;
	ursa_cond_t not_full;
	int q[QLEN];
	int head, count;
	int done; /* under m: no more items coming */
	/* the accounts */
	ursa_rwlock_t l;
	long acct[NACCOUNTS]; /* sum is always 0 under the lock */
	long applied[NITEMS + 1];
	int writers_inside;
	int readers_inside;
	/* results */
	int violations;
	int errors;
	long audits;
	int stop_audit;
};

static void fail(struct shm *s)
{
	__atomic_fetch_add(&s->errors, 1, __ATOMIC_RELAXED);
}

/* The sum of the accounts (0 under the lock), and the applies counted
 * so far. */
static long acct_sum(const struct shm *s)
{
	long sum = 0;
	for (int i = 0; i < NACCOUNTS; i++)
		sum += s->acct[i];
	return sum;
}

static long applied_sum(const struct shm *s)
{
	long applied = 0;
	for (int i = 1; i <= NITEMS; i++)
		applied += s->applied[i];
	return applied;
}

static int take_item(struct shm *s)
{
	if (ursa_mutex_lock(&s->m) != 0)
		return -1;
	while (s->count == 0 && !s->done) {
		/* Timed now and then, with a deadline far off: exercises the
		 * timed path without ever timing out in a correct run. */
		int r;
		if ((s->head & 3) == 1) {
			struct timespec dl = t_deadline(CLOCK_REALTIME, 20000);
			r = ursa_cond_timedwait(&s->not_empty, &s->m, CLOCK_REALTIME, &dl);
		} else {
			r = ursa_cond_wait(&s->not_empty, &s->m);
		}
		if (r != 0) {
			ursa_mutex_unlock(&s->m);
			return -1;
		}
	}
	int item = 0;
	if (s->count > 0) {
		item = s->q[s->head];
		s->head = (s->head + 1) % QLEN;
		s->count--;
		if (ursa_cond_signal(&s->not_full) != 0)
			item = -1;
	}
	if (ursa_mutex_unlock(&s->m) != 0)
		return -1;
	return item;
}

static void apply(struct shm *s, int item)
{
	int a = item % NACCOUNTS, b = (item * 7 + 3) % NACCOUNTS;
	int r = (item & 1) ? ursa_rwlock_wrlock(&s->l) : ursa_rwlock_trywrlock(&s->l);
	if (r == -EBUSY)
		r = ursa_rwlock_wrlock(&s->l);
	if (r != 0) {
		fail(s);
		return;
	}
	if (__atomic_fetch_add(&s->writers_inside, 1, __ATOMIC_RELAXED) != 0 ||
	    __atomic_load_n(&s->readers_inside, __ATOMIC_RELAXED) != 0)
		__atomic_fetch_add(&s->violations, 1, __ATOMIC_RELAXED);
	s->acct[a] += item;
	if ((item & 31) == 0)
		sched_yield(); /* a reader overlapping us now would see the sum off */
	s->acct[b] -= item;
	s->applied[item]++;
	__atomic_fetch_sub(&s->writers_inside, 1, __ATOMIC_RELAXED);
	if (ursa_rwlock_wrunlock(&s->l) != 0)
		fail(s);
}

static void *worker(void *arg)
{
	struct shm *s = arg;
	for (;;) {
		int item = take_item(s);
		if (item < 0) {
			fail(s);
			break;
		}
		if (item == 0)
			break;
		apply(s, item);
	}
	return NULL;
}

static void *auditor(void *arg)
{
	struct shm *s = arg;
	for (long n = 0; !__atomic_load_n(&s->stop_audit, __ATOMIC_RELAXED); n++) {
		int r;
		if (n & 1) {
			struct timespec dl = t_deadline(CLOCK_MONOTONIC, 20000);
			r = ursa_rwlock_timedrdlock(&s->l, CLOCK_MONOTONIC, &dl);
		} else {
			r = ursa_rwlock_rdlock(&s->l);
		}
		if (r != 0) {
			fail(s);
			break;
		}
		__atomic_fetch_add(&s->readers_inside, 1, __ATOMIC_RELAXED);
		if (__atomic_load_n(&s->writers_inside, __ATOMIC_RELAXED) != 0)
			__atomic_fetch_add(&s->violations, 1, __ATOMIC_RELAXED);
		if (acct_sum(s) != 0)
			__atomic_fetch_add(&s->violations, 1, __ATOMIC_RELAXED);
		__atomic_fetch_sub(&s->readers_inside, 1, __ATOMIC_RELAXED);
		if (ursa_rwlock_rdunlock(&s->l) != 0)
			fail(s);
		__atomic_fetch_add(&s->audits, 1, __ATOMIC_RELAXED);
		sched_yield();
	}
	return NULL;
}

static bool child(int idx, void *arg)
{
	(void)idx;
	struct shm *s = arg;
	pthread_t w[WORKERS_PER_PROC], a[AUDITORS_PER_PROC];
	for (int i = 0; i < WORKERS_PER_PROC; i++)
		if (pthread_create(&w[i], NULL, worker, s) != 0)
			return false;
	for (int i = 0; i < AUDITORS_PER_PROC; i++)
		if (pthread_create(&a[i], NULL, auditor, s) != 0)
			return false;
	for (int i = 0; i < WORKERS_PER_PROC; i++)
		pthread_join(w[i], NULL);
	for (int i = 0; i < AUDITORS_PER_PROC; i++)
		pthread_join(a[i], NULL);
	return true;
}

static bool put_item(struct shm *s, int item)
{
	int r = ursa_mutex_lock(&s->m);
	while (r == 0 && s->count == QLEN)
		r = ursa_cond_wait(&s->not_full, &s->m);
	if (r != 0)
		return false;
	s->q[(s->head + s->count++) % QLEN] = item;
	r = ursa_cond_signal(&s->not_empty);
	return ursa_mutex_unlock(&s->m) == 0 && r == 0;
}

static struct shm *shm_new(void)
{
	struct shm *s = t_shared_alloc(sizeof(*s));
	cr_assert_eq(ursa_mutex_init(&s->m, URSA_SHARED), 0);
	cr_assert_eq(ursa_cond_init(&s->not_empty, URSA_SHARED), 0);
	cr_assert_eq(ursa_cond_init(&s->not_full, URSA_SHARED), 0);
	cr_assert_eq(ursa_rwlock_init(&s->l, URSA_SHARED), 0);
	return s;
}

Test(rwlock_cond, threads_in_processes)
{
	struct shm *s = shm_new();
	pid_t pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		t_die_with_parent();
		_exit(t_fork_all(NPROC, child, s) ? 0 : 1);
	}

	/* The parent produces; the parent's own thread also audits now and
	 * then, so readers in this process meet writers in the others. */
	for (int item = 1; item <= NITEMS; item++) {
		cr_assert(put_item(s, item), "put %d", item);
		if ((item & 255) == 0) {
			cr_assert_eq(ursa_rwlock_rdlock(&s->l), 0);
			cr_assert_eq(acct_sum(s), 0);
			cr_assert_eq(ursa_rwlock_rdunlock(&s->l), 0);
		}
	}
	cr_assert_eq(ursa_mutex_lock(&s->m), 0);
	s->done = 1;
	cr_assert_eq(ursa_cond_broadcast(&s->not_empty), 0);
	cr_assert_eq(ursa_mutex_unlock(&s->m), 0);
	/* Workers exit once the queue is drained; then stop the auditors. */
	for (;;) {
		cr_assert_eq(ursa_mutex_lock(&s->m), 0);
		int left = s->count;
		cr_assert_eq(ursa_mutex_unlock(&s->m), 0);
		if (left == 0)
			break;
		sched_yield();
	}
	cr_assert_eq(ursa_rwlock_wrlock(&s->l), 0);
	long applied = applied_sum(s);
	cr_assert_eq(ursa_rwlock_wrunlock(&s->l), 0);
	/* Wait for the last applies to finish before stopping the audit. */
	while (applied < NITEMS) {
		sched_yield();
		cr_assert_eq(ursa_rwlock_rdlock(&s->l), 0);
		applied = applied_sum(s);
		cr_assert_eq(ursa_rwlock_rdunlock(&s->l), 0);
	}
	__atomic_store_n(&s->stop_audit, 1, __ATOMIC_RELAXED);

	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "a child process failed");
	cr_assert_eq(s->errors, 0);
	cr_assert_eq(s->violations, 0);
	cr_assert_gt(s->audits, 0);
	for (int i = 1; i <= NITEMS; i++)
		cr_assert_eq(s->applied[i], 1, "item %d applied %ld times", i, s->applied[i]);
	cr_assert_eq(acct_sum(s), 0);
	cr_assert_eq(ursa_rwlock_destroy(&s->l), 0);
	cr_assert_eq(ursa_cond_destroy(&s->not_empty), 0);
	cr_assert_eq(ursa_cond_destroy(&s->not_full), 0);
	cr_assert_eq(ursa_mutex_destroy(&s->m), 0);
	t_shared_free(s, sizeof(*s));
}
