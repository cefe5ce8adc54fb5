/* SPDX-License-Identifier: MIT */
/*
 * tests/integration/sem_event_any.c — semaphores, events, mutexes and
 * wait-any together, across threads and fork()ed processes sharing
 * MAP_SHARED memory (URSA_SHARED objects).
 */
#include "tests/helpers.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

TestSuite(sem_event_any, .timeout = 60);

#define W_MUTEX(p) ((ursa_waitable_t){URSA_WAIT_MUTEX, (p)})
#define W_SEM(p) ((ursa_waitable_t){URSA_WAIT_SEM, (p)})
#define W_EVENT(p) ((ursa_waitable_t){URSA_WAIT_EVENT, (p)})

/*
 * ---- a bounded buffer across processes --------------------------------
 *
 * Producers (2 processes x 2 threads) wait for a free slot (ursa_sem_wait,
 * or wait-any over {slots, urgent slots}), push an item under the mutex
 * and post `items`. Consumers (2 processes x 2 threads) wait-any over
 * {items, stop}: index 0 pops an item, index 1 means every producer is
 * done (a manual-reset event the last producer sets), and they drain
 * what is left with trywait. Every item must come out exactly once.
 */
#define RING 8
#define PROD_PROCS 2
#define CONS_PROCS 2
#define THREADS 2
#define PER_THREAD 15000

struct bb {
	ursa_mutex_t m;
	ursa_sem_t items, slots;
	ursa_event_t stop; /* manual-reset */
	uint32_t ring[RING];
	uint32_t head, tail; /* under m */
	int inside;
	int violations;
	int producers_left;
	/* results */
	uint64_t sum_in, sum_out;
	long n_in, n_out;
	long stop_seen;
};

struct bb_arg {
	struct bb *b;
	int id;
};

static void bb_push(struct bb *b, uint32_t x)
{
	if (__atomic_fetch_add(&b->inside, 1, __ATOMIC_RELAXED) != 0)
		__atomic_fetch_add(&b->violations, 1, __ATOMIC_RELAXED);
	b->ring[b->tail++ % RING] = x;
	__atomic_fetch_sub(&b->inside, 1, __ATOMIC_RELAXED);
}

static uint32_t bb_pop(struct bb *b)
{
	if (__atomic_fetch_add(&b->inside, 1, __ATOMIC_RELAXED) != 0)
		__atomic_fetch_add(&b->violations, 1, __ATOMIC_RELAXED);
	uint32_t x = b->ring[b->head++ % RING];
	__atomic_fetch_sub(&b->inside, 1, __ATOMIC_RELAXED);
	return x;
}

static void *bb_producer(void *arg)
{
	struct bb_arg *a = arg;
	struct bb *b = a->b;
	ursa_waitable_t v[2] = {W_SEM(&b->slots), W_MUTEX(&b->m)};
	for (uint32_t i = 0; i < PER_THREAD; i++) {
		uint32_t x = ((uint32_t)a->id << 20) | i;
		if (i & 1) {
			if (ursa_sem_wait(&b->slots) != 0)
				return (void *)1;
			if (ursa_mutex_lock(&b->m) != 0)
				return (void *)1;
		} else {
			/* Either a slot first, or the mutex first — then the slot. */
			int r = ursa_wait_any(v, 2, CLOCK_MONOTONIC, NULL);
			if (r == 1) {
				/* Holding m while waiting for a slot would
				 * deadlock consumers: let go and wait properly. */
				if (ursa_mutex_unlock(&b->m) != 0 || ursa_sem_wait(&b->slots) != 0)
					return (void *)1;
			} else if (r != 0) {
				return (void *)1;
			}
			if (ursa_mutex_lock(&b->m) != 0)
				return (void *)1;
		}
		bb_push(b, x);
		__atomic_fetch_add(&b->sum_in, x, __ATOMIC_RELAXED);
		__atomic_fetch_add(&b->n_in, 1, __ATOMIC_RELAXED);
		if (ursa_mutex_unlock(&b->m) != 0 || ursa_sem_post(&b->items) != 0)
			return (void *)1;
	}
	return NULL;
}

static bool bb_consume_one(struct bb *b)
{
	if (ursa_mutex_lock(&b->m) != 0)
		return false;
	uint32_t x = bb_pop(b);
	if (ursa_mutex_unlock(&b->m) != 0 || ursa_sem_post(&b->slots) != 0)
		return false;
	__atomic_fetch_add(&b->sum_out, x, __ATOMIC_RELAXED);
	__atomic_fetch_add(&b->n_out, 1, __ATOMIC_RELAXED);
	return true;
}

static void *bb_consumer(void *arg)
{
	struct bb *b = ((struct bb_arg *)arg)->b; /* consumers need no id */
	ursa_waitable_t v[2] = {W_SEM(&b->items), W_EVENT(&b->stop)};
	for (long k = 0;; k++) {
		int r;
		if (k & 1) {
			r = ursa_wait_any(v, 2, CLOCK_MONOTONIC, NULL);
		} else {
			do {
				struct timespec dl = t_deadline(CLOCK_REALTIME, 1);
				r = ursa_wait_any(v, 2, CLOCK_REALTIME, &dl);
			} while (r == -ETIMEDOUT);
		}
		if (r == 0) {
			if (!bb_consume_one(b))
				return (void *)1;
			continue;
		}
		if (r != 1)
			return (void *)1;
		__atomic_fetch_add(&b->stop_seen, 1, __ATOMIC_RELAXED);
		/* Producers are done: drain. */
		while (ursa_sem_trywait(&b->items) == 0) {
			if (!bb_consume_one(b))
				return (void *)1;
		}
		return NULL;
	}
}

static bool bb_child(int idx, void *arg)
{
	t_die_with_parent();
	struct bb *b = arg;
	bool producer = idx < PROD_PROCS;
	pthread_t t[THREADS];
	struct bb_arg a[THREADS];
	for (int i = 0; i < THREADS; i++) {
		a[i] = (struct bb_arg){b, idx * THREADS + i};
		if (pthread_create(&t[i], NULL, producer ? bb_producer : bb_consumer, &a[i]))
			return false;
	}
	bool ok = true;
	for (int i = 0; i < THREADS; i++) {
		void *ret;
		if (pthread_join(t[i], &ret) != 0 || ret != NULL)
			ok = false;
	}
	if (producer && __atomic_sub_fetch(&b->producers_left, 1, __ATOMIC_ACQ_REL) == 0)
		ok = ursa_event_set(&b->stop) == 0 && ok;
	return ok;
}

Test(sem_event_any, bounded_buffer_processes)
{
	t_require_futex_waitv();
	struct bb *b = t_shared_alloc(sizeof(*b));
	cr_assert_eq(ursa_mutex_init(&b->m, URSA_SHARED), 0);
	cr_assert_eq(ursa_sem_init(&b->items, 0, URSA_SHARED), 0);
	cr_assert_eq(ursa_sem_init(&b->slots, RING, URSA_SHARED), 0);
	cr_assert_eq(ursa_event_init(&b->stop, URSA_SHARED), 0);
	b->producers_left = PROD_PROCS;
	cr_assert(t_fork_all(PROD_PROCS + CONS_PROCS, bb_child, b));

	long n = (long)PROD_PROCS * THREADS * PER_THREAD;
	uint64_t sum = 0;
	for (uint32_t id = 0; id < PROD_PROCS * THREADS; id++)
		for (uint32_t i = 0; i < PER_THREAD; i++)
			sum += (id << 20) | i;
	cr_assert_eq(b->violations, 0, "mutual exclusion");
	cr_assert_eq(b->n_in, n);
	cr_assert_eq(b->n_out, n, "every item consumed once");
	cr_assert_eq(b->sum_in, sum);
	cr_assert_eq(b->sum_out, sum);
	cr_assert_eq(b->stop_seen, CONS_PROCS * THREADS);
	cr_assert_eq(ursa_sem_value(&b->items), 0);
	cr_assert_eq(ursa_sem_value(&b->slots), RING);
	cr_assert_eq(ursa_sem_destroy(&b->items), 0);
	cr_assert_eq(ursa_sem_destroy(&b->slots), 0);
	cr_assert_eq(ursa_event_destroy(&b->stop), 0);
	cr_assert_eq(ursa_mutex_destroy(&b->m), 0);
	t_shared_free(b, sizeof(*b));
}

/*
 * ---- token ring across processes with auto-reset events ----------------
 *
 * P processes in a ring; process i waits (wait-any over {its auto-reset
 * event, a semaphore nobody posts}, or a plain event wait) for the token,
 * counts a hop and sets the next process's event. One token: every hop is
 * one set consumed by exactly one wait, so the hop count is exact and no
 * two processes ever hold the token together.
 */
#define TR_PROCS 4
#define TR_LAPS 8000

struct tr {
	ursa_event_t ev[TR_PROCS];
	ursa_sem_t never;
	long hops;
	int holders;
	int violations;
};

static bool tr_child(int idx, void *arg)
{
	t_die_with_parent();
	struct tr *t = arg;
	ursa_waitable_t v[2] = {W_SEM(&t->never), W_EVENT(&t->ev[idx])};
	for (int lap = 0; lap < TR_LAPS; lap++) {
		if (lap % 3 == 0) {
			if (ursa_event_wait(&t->ev[idx]) != 0)
				return false;
		} else if (ursa_wait_any(v, 2, CLOCK_MONOTONIC, NULL) != 1) {
			return false;
		}
		if (__atomic_fetch_add(&t->holders, 1, __ATOMIC_RELAXED) != 0)
			__atomic_fetch_add(&t->violations, 1, __ATOMIC_RELAXED);
		t->hops++;
		__atomic_fetch_sub(&t->holders, 1, __ATOMIC_RELAXED);
		if (ursa_event_set(&t->ev[(idx + 1) % TR_PROCS]) != 0)
			return false;
	}
	return true;
}

Test(sem_event_any, token_ring_processes)
{
	t_require_futex_waitv();
	struct tr *t = t_shared_alloc(sizeof(*t));
	for (int i = 0; i < TR_PROCS; i++)
		cr_assert_eq(ursa_event_init(&t->ev[i], URSA_SHARED | URSA_EVENT_AUTO_RESET), 0);
	cr_assert_eq(ursa_sem_init(&t->never, 0, URSA_SHARED), 0);
	cr_assert_eq(ursa_event_set(&t->ev[0]), 0);
	cr_assert(t_fork_all(TR_PROCS, tr_child, t));
	cr_assert_eq(t->violations, 0);
	cr_assert_eq(t->hops, (long)TR_PROCS * TR_LAPS);
	/* The token ends back at process 0, unconsumed. */
	cr_assert_eq(ursa_event_trywait(&t->ev[0]), 0);
	for (int i = 0; i < TR_PROCS; i++) {
		cr_assert_eq(ursa_event_trywait(&t->ev[i]), -EBUSY);
		cr_assert_eq(ursa_event_destroy(&t->ev[i]), 0);
	}
	cr_assert_eq(ursa_sem_destroy(&t->never), 0);
	t_shared_free(t, sizeof(*t));
}

/*
 * ---- broadcast rounds: a manual-reset event across processes -----------
 *
 * A coordinator (the test) opens round r with set, waits on a semaphore
 * until every worker process has passed, then resets; workers wait-any over
 * {go, a mutex held throughout by the coordinator}, so the mutex entry
 * sleeps the whole time and must never be taken.
 */
#define BR_PROCS 3
#define BR_ROUNDS 1500

struct br {
	ursa_event_t go;
	ursa_mutex_t held;
	ursa_sem_t arrived;
	ursa_sem_t next[BR_PROCS];
	int bad;
};

static bool br_child(int idx, void *arg)
{
	struct br *b = arg;
	ursa_waitable_t v[2] = {W_MUTEX(&b->held), W_EVENT(&b->go)};
	for (int r = 0; r < BR_ROUNDS; r++) {
		int i = ursa_wait_any(v, 2, CLOCK_MONOTONIC, NULL);
		if (i != 1) {
			__atomic_store_n(&b->bad, 1, __ATOMIC_RELAXED);
			return false;
		}
		if (ursa_sem_post(&b->arrived) != 0 || ursa_sem_wait(&b->next[idx]) != 0)
			return false;
	}
	return true;
}

static bool br_coordinator(int idx, void *arg)
{
	t_die_with_parent();
	struct br *b = arg;
	if (idx < BR_PROCS)
		return br_child(idx, arg);
	/* held was locked by the test before fork; any process may unlock. */
	for (int r = 0; r < BR_ROUNDS; r++) {
		if (ursa_event_set(&b->go) != 0)
			return false;
		for (int i = 0; i < BR_PROCS; i++)
			if (ursa_sem_wait(&b->arrived) != 0)
				return false;
		if (ursa_event_reset(&b->go) != 0)
			return false;
		for (int i = 0; i < BR_PROCS; i++)
			if (ursa_sem_post(&b->next[i]) != 0)
				return false;
	}
	return ursa_mutex_unlock(&b->held) == 0;
}

Test(sem_event_any, broadcast_rounds_processes)
{
	t_require_futex_waitv();
	struct br *b = t_shared_alloc(sizeof(*b));
	cr_assert_eq(ursa_event_init(&b->go, URSA_SHARED), 0);
	cr_assert_eq(ursa_mutex_init(&b->held, URSA_SHARED), 0);
	cr_assert_eq(ursa_sem_init(&b->arrived, 0, URSA_SHARED), 0);
	for (int i = 0; i < BR_PROCS; i++)
		cr_assert_eq(ursa_sem_init(&b->next[i], 0, URSA_SHARED), 0);
	cr_assert_eq(ursa_mutex_lock(&b->held), 0);
	cr_assert(t_fork_all(BR_PROCS + 1, br_coordinator, b));
	cr_assert_eq(b->bad, 0, "the held mutex was never taken");
	cr_assert_eq(ursa_event_trywait(&b->go), -EBUSY);
	cr_assert_eq(ursa_event_destroy(&b->go), 0);
	cr_assert_eq(ursa_mutex_destroy(&b->held), 0);
	cr_assert_eq(ursa_sem_destroy(&b->arrived), 0);
	t_shared_free(b, sizeof(*b));
}
