/* SPDX-License-Identifier: MIT */
/*
 * tests/fault/sigkill.c — a process SIGKILLed while it holds or waits on a
 * shared object: what the others see. ursa objects are not robust (no
 * owner is recorded, as with a non-robust pthread mutex); these tests pin
 * down the exact behaviour, which an application that supervises its
 * processes (a database postmaster) builds its recovery on:
 *
 *   mutex, holder killed: the mutex stays locked. trylock says -EBUSY,
 *     timedlock times out, destroy says -EBUSY. Recovery: any process may
 *     unlock it (ursa has no owner check), after repairing the data.
 *   mutex, sleeping waiter killed: the kernel removes the dead waiter from
 *     the futex queue; the holder's unlock wakes the next live waiter. The
 *     dead waiter's registration (lib/mutex.c's COUNT) stays: destroy says
 *     -EBUSY for good, lock and unlock keep working (locks taken from FREE
 *     store CONTENDED, so each unlock makes a wake system call).
 *   waitq, queued waiter killed (blocked or in a ring): the slot stays
 *     queued. A wake that reaches it counts it (the wake's return includes
 *     it) and leaves it WOKEN, so prepare on it says -EBUSY until someone
 *     reaps it with ursa_waitq_cancel (returns 1). A supervisor that learns
 *     of the death cancels the slot first (returns 0: dequeued, no wake
 *     wasted). Live waiters queued behind a dead slot still make progress:
 *     wake_upto wakes them all; wake(n) may spend one of its n on the dead
 *     slot.
 *   sem / cond, sleeping waiter killed: its registration stays counted, so
 *     destroy says -EBUSY for good and post/signal keep making a (useless)
 *     wake system call; posts, waits and signals between live processes
 *     still work.
 *   rwlock, reader killed holding a read lock: writers time out; other
 *     readers still get in until a writer waits.
 *
 * Not tested, documented: a process killed while it holds the waitq's
 * internal list lock (a few instructions in prepare/cancel/wake) leaves the
 * queue locked for good; and a waiter killed at the very moment a wake
 * reaches it consumes that wake (the kernel has already dequeued it), so
 * the next waiter sleeps until the next release — as with pthread mutexes.
 */
#include "tests/helpers.h"

#include <errno.h>
#include <liburing.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

TestSuite(fault_sigkill, .timeout = 60);

struct shm {
	ursa_mutex_t m;
	ursa_rwlock_t l;
	ursa_cond_t c;
	ursa_sem_t s;
	atomic_int ready;
	atomic_int done;
	int pred;
	_Alignas(8) unsigned char q[512];
};

static struct shm *shm_new(void)
{
	struct shm *p = t_shared_alloc(sizeof(*p));
	cr_assert_eq(ursa_mutex_init(&p->m, URSA_SHARED), 0);
	cr_assert_eq(ursa_rwlock_init(&p->l, URSA_SHARED), 0);
	cr_assert_eq(ursa_cond_init(&p->c, URSA_SHARED), 0);
	cr_assert_eq(ursa_sem_init(&p->s, 0, URSA_SHARED), 0);
	cr_assert_leq(ursa_waitq_size(4), sizeof(p->q));
	cr_assert_eq(ursa_waitq_init((ursa_waitq_t *)p->q, 4, URSA_SHARED), 0);
	return p;
}

static ursa_waitq_t *Q(struct shm *p)
{
	return (ursa_waitq_t *)p->q;
}

/* Is pid asleep (state S in /proc/pid/stat)? */
static bool sleeping(pid_t pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	char *p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] == 'S';
}

/* Wait until the child said it is about to block, and is asleep. */
static void wait_asleep(struct shm *p, pid_t pid)
{
	while (!atomic_load(&p->ready))
		sched_yield();
	while (!sleeping(pid))
		sched_yield();
	t_sleep_ms(5); /* settle into the futex: coverage only, not an assertion */
}

static pid_t spawn(void (*fn)(struct shm *), struct shm *p)
{
	atomic_store(&p->ready, 0);
	fflush(NULL);
	pid_t pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		alarm(30);
		fn(p);
		_exit(0);
	}
	return pid;
}

static void kill_reap(pid_t pid)
{
	int st;
	cr_assert_eq(kill(pid, SIGKILL), 0);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "child was not killed");
}

/* New shared objects, and a child that ran fn on them until it was asleep
 * in it (holding or waiting), then was SIGKILLed and reaped. */
static struct shm *killed_in(void (*fn)(struct shm *))
{
	struct shm *p = shm_new();
	pid_t pid = spawn(fn, p);
	wait_asleep(p, pid);
	kill_reap(pid);
	return p;
}

/* Children that take an object and keep it until they are killed. */
static void held(struct shm *p)
{
	atomic_store(&p->ready, 1);
	for (;;)
		pause();
}

static void hold_mutex(struct shm *p)
{
	ursa_mutex_lock(&p->m);
	held(p);
}

static void hold_read(struct shm *p)
{
	ursa_rwlock_rdlock(&p->l);
	held(p);
}

/* ---- mutex ------------------------------------------------------------- */

Test(fault_sigkill, mutex_holder_killed_stays_locked)
{
	struct shm *p = killed_in(hold_mutex);

	cr_assert_eq(ursa_mutex_trylock(&p->m), -EBUSY, "a dead holder's mutex stays locked");
	struct timespec ts = t_deadline(CLOCK_MONOTONIC, 30);
	cr_assert_eq(ursa_mutex_timedlock(&p->m, CLOCK_MONOTONIC, &ts), -ETIMEDOUT);
	cr_assert_eq(ursa_mutex_destroy(&p->m), -EBUSY);
	/* Recovery: any process may unlock on the dead holder's behalf. */
	cr_assert_eq(ursa_mutex_unlock(&p->m), 0);
	cr_assert_eq(ursa_mutex_lock(&p->m), 0);
	cr_assert_eq(ursa_mutex_unlock(&p->m), 0);
	cr_assert_eq(ursa_mutex_destroy(&p->m), 0);
	t_shared_free(p, sizeof(*p));
}

static void wait_mutex(struct shm *p)
{
	atomic_store(&p->ready, 1);
	ursa_mutex_lock(&p->m); /* sleeps: the parent holds it */
	atomic_store(&p->done, 1);
	ursa_mutex_unlock(&p->m);
}

static void *thread_lock(void *arg)
{
	struct shm *p = arg;
	cr_assert_eq(ursa_mutex_lock(&p->m), 0);
	atomic_fetch_add(&p->done, 10);
	cr_assert_eq(ursa_mutex_unlock(&p->m), 0);
	return NULL;
}

Test(fault_sigkill, mutex_sleeping_waiter_killed_others_proceed)
{
	struct shm *p = shm_new();
	cr_assert_eq(ursa_mutex_lock(&p->m), 0);
	pid_t pid = spawn(wait_mutex, p); /* first in the futex queue */
	wait_asleep(p, pid);
	pthread_t t;
	cr_assert_eq(pthread_create(&t, NULL, thread_lock, p), 0);
	t_sleep_ms(10); /* the thread queues behind the child: coverage only */
	kill_reap(pid);
	/* The unlock's wake goes to the live thread, not to the dead child. */
	cr_assert_eq(ursa_mutex_unlock(&p->m), 0);
	cr_assert_eq(pthread_join(t, NULL), 0);
	cr_assert_eq(atomic_load(&p->done), 10, "the killed waiter never ran");
	cr_assert_eq(ursa_mutex_trylock(&p->m), 0);
	cr_assert_eq(ursa_mutex_unlock(&p->m), 0);
	/* The dead waiter had registered (lib/mutex.c COUNT): that stays, so
	 * destroy says busy; the mutex keeps working. */
	cr_assert_eq(ursa_mutex_destroy(&p->m), -EBUSY);
	cr_assert_eq(ursa_mutex_lock(&p->m), 0);
	cr_assert_eq(ursa_mutex_unlock(&p->m), 0);
	t_shared_free(p, sizeof(*p));
}

/* ---- waitq ------------------------------------------------------------- */

static void wait_slot0(struct shm *p)
{
	ursa_waitq_prepare(Q(p), 0, 1);
	atomic_store(&p->ready, 1);
	ursa_waitq_wait(Q(p), 0, CLOCK_MONOTONIC, NULL);
	atomic_store(&p->done, 1);
}

static void wait_slot0_ring(struct shm *p)
{
	struct io_uring r;
	struct ursa_op op;
	memset(&op, 0, sizeof(op));
	if (io_uring_queue_init(4, &r, 0) != 0)
		_exit(3);
	ursa_waitq_prepare(Q(p), 0, 1);
	if (ursa_waitq_wait_async(&r, Q(p), 0, &op) != 0)
		_exit(4);
	io_uring_submit(&r);
	atomic_store(&p->ready, 1);
	struct io_uring_cqe *cqe;
	io_uring_wait_cqe(&r, &cqe); /* killed here, the FUTEX_WAIT in flight */
	atomic_store(&p->done, 1);
}

struct live {
	struct shm *p;
	uint32_t slot;
	atomic_int queued;
	int res;
};

static void *live_waiter(void *arg)
{
	struct live *l = arg;
	cr_assert_eq(ursa_waitq_prepare(Q(l->p), l->slot, 1), 0);
	atomic_store(&l->queued, 1);
	l->res = ursa_waitq_wait(Q(l->p), l->slot, CLOCK_MONOTONIC, NULL);
	return NULL;
}

/* A live thread that waits on slot l->slot; returns once it is queued. */
static pthread_t live_queued(struct live *l)
{
	pthread_t t;
	cr_assert_eq(pthread_create(&t, NULL, live_waiter, l), 0);
	while (!atomic_load(&l->queued))
		sched_yield();
	return t;
}

static void waitq_dead_slot_is_woken_then_reaped(void (*child)(struct shm *), bool ring)
{
	if (ring)
		t_require_uring_futex(false);
	struct shm *p = killed_in(child);
	cr_assert_eq(atomic_load(&p->done), 0);

	/* A live waiter queues behind the dead slot. */
	struct live l = {p, 1, 0, -1};
	pthread_t t = live_queued(&l);
	/* wake(1) takes the oldest: the dead slot. It is counted. */
	cr_assert_eq(ursa_waitq_wake(Q(p), 1, NULL), 1);
	/* The live waiter is still queued: the next wake reaches it. */
	cr_assert_eq(ursa_waitq_wake(Q(p), 1, NULL), 1);
	cr_assert_eq(pthread_join(t, NULL), 0);
	cr_assert_eq(l.res, 0);
	/* The dead slot is WOKEN and unreaped: busy until cancelled. */
	cr_assert_eq(ursa_waitq_prepare(Q(p), 0, 2), -EBUSY);
	cr_assert_eq(ursa_waitq_cancel(Q(p), 0), 1, "cancel reaps the dead slot's wakeup");
	cr_assert_eq(ursa_waitq_prepare(Q(p), 0, 2), 0, "the slot is reusable");
	cr_assert_eq(ursa_waitq_cancel(Q(p), 0), 0);
	cr_assert_eq(ursa_waitq_wake(Q(p), 4, NULL), 0, "queue empty");
	t_shared_free(p, sizeof(*p));
}

Test(fault_sigkill, waitq_blocked_waiter_killed)
{
	waitq_dead_slot_is_woken_then_reaped(wait_slot0, false);
}

Test(fault_sigkill, waitq_ring_waiter_killed)
{
	waitq_dead_slot_is_woken_then_reaped(wait_slot0_ring, true);
}

Test(fault_sigkill, waitq_supervisor_cancels_dead_slot)
{
	struct shm *p = killed_in(wait_slot0);
	/* The supervisor withdraws the dead slot: still queued, so 0. */
	cr_assert_eq(ursa_waitq_cancel(Q(p), 0), 0);
	struct live l = {p, 2, 0, -1};
	pthread_t t = live_queued(&l);
	/* No wake is wasted: wake(1) reaches the live waiter. */
	cr_assert_eq(ursa_waitq_wake(Q(p), 1, NULL), 1);
	cr_assert_eq(pthread_join(t, NULL), 0);
	cr_assert_eq(l.res, 0);
	cr_assert_eq(ursa_waitq_prepare(Q(p), 0, 3), 0);
	cr_assert_eq(ursa_waitq_cancel(Q(p), 0), 0);
	t_shared_free(p, sizeof(*p));
}

Test(fault_sigkill, waitq_wake_upto_passes_dead_slot)
{
	struct shm *p = killed_in(wait_slot0);
	struct live l1 = {p, 1, 0, -1}, l2 = {p, 3, 0, -1};
	pthread_t t1, t2; /* both queue, in either order */
	cr_assert_eq(pthread_create(&t1, NULL, live_waiter, &l1), 0);
	cr_assert_eq(pthread_create(&t2, NULL, live_waiter, &l2), 0);
	while (!atomic_load(&l1.queued) || !atomic_load(&l2.queued))
		sched_yield();
	cr_assert_eq(ursa_waitq_wake_upto(Q(p), 1, NULL), 3, "dead slot counted too");
	cr_assert_eq(pthread_join(t1, NULL), 0);
	cr_assert_eq(pthread_join(t2, NULL), 0);
	cr_assert(l1.res == 0 && l2.res == 0);
	cr_assert_eq(ursa_waitq_cancel(Q(p), 0), 1);
	t_shared_free(p, sizeof(*p));
}

/* ---- sem, cond, rwlock -------------------------------------------------- */

static void wait_sem(struct shm *p)
{
	atomic_store(&p->ready, 1);
	ursa_sem_wait(&p->s);
	atomic_store(&p->done, 1);
}

static bool take_one(int i, void *arg)
{
	(void)i;
	return ursa_sem_wait(arg) == 0;
}

Test(fault_sigkill, sem_sleeping_waiter_killed)
{
	struct shm *p = killed_in(wait_sem);
	/* Its registration is leaked: destroy says busy for good... */
	cr_assert_eq(ursa_sem_destroy(&p->s), -EBUSY);
	/* ...but posts and waits between live processes still work. */
	for (int i = 0; i < 2; i++)
		cr_assert_eq(ursa_sem_post(&p->s), 0);
	cr_assert_eq(ursa_sem_value(&p->s), 2, "the dead waiter took nothing");
	cr_assert(t_fork_all(2, take_one, &p->s));
	cr_assert_eq(ursa_sem_value(&p->s), 0);
	cr_assert_eq(atomic_load(&p->done), 0);
	t_shared_free(p, sizeof(*p));
}

static void wait_cond(struct shm *p)
{
	ursa_mutex_lock(&p->m);
	atomic_store(&p->ready, 1);
	while (!p->pred)
		ursa_cond_wait(&p->c, &p->m); /* sleeps with m released */
	ursa_mutex_unlock(&p->m);
	atomic_store(&p->done, 1);
}

static void *thread_cond(void *arg)
{
	struct shm *p = arg;
	cr_assert_eq(ursa_mutex_lock(&p->m), 0);
	atomic_fetch_add(&p->ready, 10);
	while (!p->pred)
		cr_assert_eq(ursa_cond_wait(&p->c, &p->m), 0);
	cr_assert_eq(ursa_mutex_unlock(&p->m), 0);
	return NULL;
}

Test(fault_sigkill, cond_sleeping_waiter_killed)
{
	struct shm *p = killed_in(wait_cond);
	/* The dead waiter released m when it began waiting. */
	cr_assert_eq(ursa_mutex_trylock(&p->m), 0);
	cr_assert_eq(ursa_mutex_unlock(&p->m), 0);
	/* A live waiter is still signalled. */
	pthread_t t;
	cr_assert_eq(pthread_create(&t, NULL, thread_cond, p), 0);
	while (atomic_load(&p->ready) < 11)
		sched_yield();
	cr_assert_eq(ursa_mutex_lock(&p->m), 0);
	p->pred = 1;
	cr_assert_eq(ursa_cond_signal(&p->c), 0);
	cr_assert_eq(ursa_mutex_unlock(&p->m), 0);
	cr_assert_eq(pthread_join(t, NULL), 0);
	cr_assert_eq(ursa_cond_destroy(&p->c), -EBUSY, "the dead waiter stays registered");
	t_shared_free(p, sizeof(*p));
}

Test(fault_sigkill, rwlock_reader_killed_holding)
{
	struct shm *p = killed_in(hold_read);
	cr_assert_eq(ursa_rwlock_trywrlock(&p->l), -EBUSY);
	/* Readers still get in while no writer waits. */
	cr_assert_eq(ursa_rwlock_tryrdlock(&p->l), 0);
	cr_assert_eq(ursa_rwlock_rdunlock(&p->l), 0);
	struct timespec ts = t_deadline(CLOCK_MONOTONIC, 30);
	cr_assert_eq(ursa_rwlock_timedwrlock(&p->l, CLOCK_MONOTONIC, &ts), -ETIMEDOUT);
	cr_assert_eq(ursa_rwlock_destroy(&p->l), -EBUSY);
	/* Recovery: release the dead reader's hold. */
	cr_assert_eq(ursa_rwlock_rdunlock(&p->l), 0);
	cr_assert_eq(ursa_rwlock_wrlock(&p->l), 0);
	cr_assert_eq(ursa_rwlock_wrunlock(&p->l), 0);
	cr_assert_eq(ursa_rwlock_destroy(&p->l), 0);
	t_shared_free(p, sizeof(*p));
}
