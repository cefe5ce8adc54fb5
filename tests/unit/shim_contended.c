/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/shim_contended.c — libursa-pthread's contended paths with
 * plain (non-atomic) shared data: a counter under each mutex kind, a
 * bounded queue on condvars, a pair under each rwlock kind, semaphores as a
 * lock and as a queue. In a --enable-sanitizers=thread tree the calls go
 * straight to the shim (tests/harness/shim_direct.h), so ThreadSanitizer
 * sees only the shim's atomics as synchronisation and reports a race on the
 * plain data if the shim's acquire/release is wrong anywhere.
 */
#include "tests/unit/shim_test.h"

#include <semaphore.h>

#define THREADS 4
#define ITERS 20000

TestSuite(shim_contended, .timeout = 120, .init = shim_t_require);

static void run(void *(*fn)(void *), void *arg)
{
	pthread_t t[THREADS];
	for (int i = 0; i < THREADS; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, fn, arg), 0);
	t_join_all(t, THREADS);
}

/* ---- mutexes: a plain counter under each kind ---- */

static pthread_mutex_t m;
static int m_type;
static long counter; /* plain: the mutex is its only protection */

static void *mutex_fn(void *arg)
{
	(void)arg;
	for (int i = 0; i < ITERS; i++) {
		if (i % 5 ? pthread_mutex_lock(&m) : (pthread_mutex_trylock(&m) ? pthread_mutex_lock(&m) : 0))
			cr_assert_fail("lock");
		if (m_type == PTHREAD_MUTEX_RECURSIVE && pthread_mutex_lock(&m))
			cr_assert_fail("relock");
		counter++;
		if (m_type == PTHREAD_MUTEX_RECURSIVE && pthread_mutex_unlock(&m))
			cr_assert_fail("unlock inner");
		if (pthread_mutex_unlock(&m))
			cr_assert_fail("unlock");
	}
	return NULL;
}

Test(shim_contended, mutex_kinds)
{
	int types[] = {PTHREAD_MUTEX_NORMAL, PTHREAD_MUTEX_RECURSIVE, PTHREAD_MUTEX_ERRORCHECK,
		       PTHREAD_MUTEX_ADAPTIVE_NP};
	for (int k = 0; k < 4; k++) {
		pthread_mutexattr_t a;
		pthread_mutexattr_init(&a);
		pthread_mutexattr_settype(&a, types[k]);
		pthread_mutex_init(&m, &a);
		m_type = types[k];
		counter = 0;
		run(mutex_fn, NULL);
		cr_assert_eq(counter, (long)THREADS * ITERS, "mutex kind %d: lost increments",
			     types[k]);
	}
}

/* ---- condvar: a bounded queue of plain ints ---- */

#define SLOTS 4
static pthread_cond_t not_empty = PTHREAD_COND_INITIALIZER;
static pthread_cond_t not_full = PTHREAD_COND_INITIALIZER;
static pthread_mutex_t qm = PTHREAD_MUTEX_INITIALIZER;
static int buf[SLOTS], n, head, tail, consumed;
static long sum_in, sum_out;

static void *producer(void *arg)
{
	(void)arg;
	for (int i = 1; i <= ITERS; i++) {
		pthread_mutex_lock(&qm);
		while (n == SLOTS)
			pthread_cond_wait(&not_full, &qm);
		buf[tail] = i;
		tail = (tail + 1) % SLOTS;
		n++;
		sum_in += i;
		(i & 1 ? pthread_cond_signal : pthread_cond_broadcast)(&not_empty);
		pthread_mutex_unlock(&qm);
	}
	return NULL;
}

static void *consumer(void *arg)
{
	(void)arg;
	for (;;) {
		pthread_mutex_lock(&qm);
		while (n == 0 && consumed < 2 * ITERS)
			pthread_cond_wait(&not_empty, &qm);
		if (consumed == 2 * ITERS) {
			pthread_cond_broadcast(&not_empty);
			pthread_mutex_unlock(&qm);
			return NULL;
		}
		sum_out += buf[head];
		head = (head + 1) % SLOTS;
		n--;
		consumed++;
		pthread_cond_signal(&not_full);
		pthread_mutex_unlock(&qm);
	}
}

static void *pc_fn(void *arg)
{
	static int next;
	int me = __atomic_fetch_add(&next, 1, __ATOMIC_RELAXED);
	return me % 2 ? producer(arg) : consumer(arg);
}

Test(shim_contended, cond_bounded_queue)
{
	run(pc_fn, NULL);
	cr_assert_eq(consumed, 2 * ITERS, "condvar: items lost or doubled");
	cr_assert_eq(sum_in, sum_out, "condvar: items lost or doubled");
}

/* ---- rwlocks: writers bump a plain pair, readers check it ---- */

static pthread_rwlock_t rw;
static long pair[2];

/* arg non-NULL: some reads take the lock twice (the default kind only). */
static void *rw_fn(void *arg)
{
	bool recursive_reads = arg != NULL;
	for (int i = 0; i < ITERS; i++) {
		if (i % 4 == 0) {
			pthread_rwlock_wrlock(&rw);
			pair[0]++;
			pair[1]++;
		} else {
			pthread_rwlock_rdlock(&rw);
			if (recursive_reads && i % 3 == 0) {
				if (pthread_rwlock_rdlock(&rw))
					cr_assert_fail("recursive rdlock");
				pthread_rwlock_unlock(&rw);
			}
			if (pair[0] != pair[1])
				cr_assert_fail("rwlock: a reader saw a half-done write");
		}
		pthread_rwlock_unlock(&rw);
	}
	return NULL;
}

Test(shim_contended, rwlock_kinds)
{
	pthread_rwlockattr_t a;
	pthread_rwlockattr_init(&a);
	pthread_rwlock_init(&rw, NULL);
	run(rw_fn, &rw);
	pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&rw, &a);
	run(rw_fn, NULL);
	cr_assert_eq(pair[0], 2L * THREADS * ITERS / 4, "rwlock: lost writes");
}

/* ---- semaphores: a binary one as a lock, a counting one as a queue ---- */

static sem_t lock, items;
static long sem_counter;

static void *sem_fn(void *arg)
{
	static int next;
	int me = __atomic_fetch_add(&next, 1, __ATOMIC_RELAXED);
	(void)arg;
	for (int i = 0; i < ITERS; i++) {
		if (me % 2)
			sem_post(&items);
		else if (sem_wait(&items))
			cr_assert_fail("sem_wait");
		sem_wait(&lock);
		sem_counter++;
		sem_post(&lock);
	}
	return NULL;
}

Test(shim_contended, sem_lock_and_queue)
{
	sem_init(&lock, 0, 1);
	sem_init(&items, 0, 0);
	run(sem_fn, NULL);
	cr_assert_eq(sem_counter, (long)THREADS * ITERS, "sem: lost increments");
}

