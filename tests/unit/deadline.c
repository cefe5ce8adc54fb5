/* SPDX-License-Identifier: MIT */
/* tests/unit/deadline.c — deadlines far in the future (tv_sec near its
 * maximum) mean "wait, practically forever": no overflow in ursa's deadline
 * arithmetic (run under UBSan: --enable-sanitizers=address,undefined), and
 * the wait still ends when the object is released. */
#include "tests/helpers.h"

#include <errno.h>
#include <liburing.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <ursa/async.h>

TestSuite(deadline, .timeout = 60);

static const struct timespec far_deadlines[] = {
    {INT64_MAX, 999999999},
    {INT64_MAX - 1, 999999999},
    {INT64_MAX / 1000000000 + 1, 999999999}, /* just past int64 ns */
    {INT64_MAX / 1000000000, 999999999},
};
#define NFAR (sizeof(far_deadlines) / sizeof(far_deadlines[0]))
static const clockid_t clocks[] = {CLOCK_MONOTONIC, CLOCK_REALTIME};

/* Lockers contending with far deadlines: under contention a waiter sleeps
 * on a mutex whose wake went to another waiter (WOKEN) or to a hand-off
 * (HANDED), and such a sleep is bounded by a short interval computed
 * against the caller's deadline (lib/time.c). */
struct locker {
	ursa_mutex_t *m;
	atomic_long *inside;
	long *count;
	int id;
};

#define ROUNDS 5000

static void *locker(void *arg)
{
	struct locker *l = arg;
	for (int i = 0; i < ROUNDS; i++) {
		const struct timespec *abs = &far_deadlines[(i + l->id) % NFAR];
		clockid_t clk = clocks[(i / NFAR + l->id) % 2];
		int r = ursa_mutex_timedlock(l->m, clk, abs);
		if (r != 0)
			return (void *)(intptr_t)r;
		if (atomic_fetch_add(l->inside, 1) != 0)
			return (void *)(intptr_t)-1000;
		(*l->count)++;
		atomic_fetch_sub(l->inside, 1);
		ursa_mutex_unlock(l->m);
	}
	return NULL;
}

/* A ring locker that loses races asks for a hand-off, and the threads
 * that then find the mutex HANDED sleep bounded. */
static void *ring_locker(void *arg)
{
	struct locker *l = arg;
	struct io_uring ring;
	if (io_uring_queue_init(8, &ring, 0) < 0)
		return (void *)(intptr_t)-1001;
	intptr_t bad = 0;
	for (int i = 0; i < ROUNDS / 4 && !bad; i++) {
		struct ursa_op op = URSA_OP_INIT;
		int r = ursa_mutex_lock_async(&ring, l->m, &op);
		while (r == 0) {
			struct io_uring_cqe *cqe;
			struct ursa_op *done = NULL;
			if (io_uring_submit_and_wait(&ring, 1) < 0 ||
			    io_uring_wait_cqe(&ring, &cqe))
				return (void *)(intptr_t)-1002;
			ursa_handle_cqe(&ring, cqe, &done);
			io_uring_cqe_seen(&ring, cqe);
			if (done)
				r = 1;
		}
		if (r != 1 || op.res != 0) {
			bad = r != 1 ? r : op.res;
			break;
		}
		if (atomic_fetch_add(l->inside, 1) != 0)
			bad = -1000;
		(*l->count)++;
		atomic_fetch_sub(l->inside, 1);
		ursa_mutex_unlock(l->m);
	}
	io_uring_queue_exit(&ring);
	return (void *)bad;
}

Test(deadline, mutex_contended_far_deadlines)
{
	t_require_uring_futex(false);
	ursa_mutex_t m = URSA_MUTEX_INIT;
	atomic_long inside = 0;
	long count = 0;
	struct locker l[4];
	pthread_t t[4];
	for (int i = 0; i < 4; i++) {
		l[i] = (struct locker){&m, &inside, &count, i};
		pthread_create(&t[i], NULL, i == 3 ? ring_locker : locker, &l[i]);
	}
	for (int i = 0; i < 4; i++) {
		void *rv;
		pthread_join(t[i], &rv);
		cr_assert_eq((intptr_t)rv, 0, "locker %d: %d", i, (int)(intptr_t)rv);
	}
	cr_assert_eq(count, 3L * ROUNDS + ROUNDS / 4);
	cr_assert_eq(ursa_mutex_destroy(&m), 0);
}

struct newcomer {
	ursa_mutex_t *m;
	clockid_t clk;
	const struct timespec *abs;
	atomic_int tid;
	int res;
	atomic_int done;
};

static void *newcomer(void *arg)
{
	struct newcomer *n = arg;
	atomic_store(&n->tid, (int)syscall(SYS_gettid));
	n->res = ursa_mutex_timedlock(n->m, n->clk, n->abs);
	if (!n->res)
		ursa_mutex_unlock(n->m);
	atomic_store(&n->done, 1);
	return NULL;
}

/* Handle CQEs until op finishes. */
static void reap(struct io_uring *ring, struct ursa_op *op)
{
	for (;;) {
		struct io_uring_cqe *cqe;
		struct ursa_op *done = NULL;
		cr_assert_geq(io_uring_submit_and_wait(ring, 1), 0);
		cr_assert_eq(io_uring_wait_cqe(ring, &cqe), 0);
		ursa_handle_cqe(ring, cqe, &done);
		io_uring_cqe_seen(ring, cqe);
		if (done == op)
			return;
	}
}

/* Unlock, with the ring waiter's FUTEX_WAIT pending. Returns true when the
 * unlock handed the lock to the ring waiter (it asked, after losing a
 * race). Else re-lock before its wake's CQE is handled, then handle it:
 * it loses a race and waits again. */
static bool unlock_hands_over(struct io_uring *ring, ursa_mutex_t *m)
{
	cr_assert_eq(ursa_mutex_unlock(m), 0);
	if (ursa_mutex_trylock(m) != 0)
		return true;
	struct io_uring_cqe *cqe;
	struct ursa_op *done = NULL;
	cr_assert_eq(io_uring_wait_cqe(ring, &cqe), 0);
	cr_assert_eq(ursa_handle_cqe(ring, cqe, &done), 1);
	io_uring_cqe_seen(ring, cqe);
	cr_assert_null(done);
	cr_assert_geq(io_uring_submit(ring), 0);
	return false;
}

/* A thread that comes to a mutex handed over to a starving ring waiter
 * sleeps a bounded time (lib/mutex.c, lib/time.c) — the bound is compared
 * with the caller's deadline, here near the largest time_t (it must not
 * overflow). It must get the lock: after the ring waiter's turn, or, when
 * that turn is late, after its bounded sleep in the claimer's place. */
static void handed_newcomer(clockid_t clk, const struct timespec *abs)
{
	struct io_uring ring;
	cr_assert_eq(io_uring_queue_init(8, &ring, 0), 0);
	ursa_mutex_t m = URSA_MUTEX_INIT;
	cr_assert_eq(ursa_mutex_lock(&m), 0);
	struct ursa_op op = URSA_OP_INIT;
	cr_assert_eq(ursa_mutex_lock_async(&ring, &m, &op), 0);
	cr_assert_geq(io_uring_submit(&ring), 0);
	int losses = 0;
	while (!unlock_hands_over(&ring, &m))
		cr_assert_lt(++losses, 16, "no hand-off to a ring waiter that lost %d races",
			     losses);
	struct newcomer n = {&m, clk, abs, 0, -1, 0};
	pthread_t t;
	pthread_create(&t, NULL, newcomer, &n);
	while (!atomic_load(&n.tid))
		;
	/* Until it sleeps — or has been and gone: its sleep on a HANDED word
	 * is bounded (URSA_HANDED_SLEEP_MS), after which it takes the
	 * claimer's place, so on a loaded machine it may get the lock and
	 * leave before this thread looks. */
	while (!atomic_load(&n.done) && !t_is_sleeping(n.tid))
		sched_yield();
	reap(&ring, &op);
	cr_assert_eq(op.res, 0);
	cr_assert_eq(ursa_mutex_unlock(&m), 0);
	pthread_join(t, NULL);
	cr_assert_eq(n.res, 0, "clock %d tv_sec %lld: %d", (int)clk, (long long)abs->tv_sec, n.res);
	cr_assert_eq(ursa_mutex_destroy(&m), 0);
	io_uring_queue_exit(&ring);
}

Test(deadline, mutex_handed_newcomer_far_deadline)
{
	t_require_uring_futex(false);
	for (unsigned c = 0; c < 2; c++)
		for (unsigned d = 0; d < NFAR; d++)
			handed_newcomer(clocks[c], &far_deadlines[d]);
}

/* One waiter per primitive, asleep with a far deadline, released by this
 * thread: it returns 0 (never -ETIMEDOUT, never -EINVAL). */
enum kind { K_MUTEX, K_SEM, K_EVENT, K_COND, K_RD, K_WR, K_WAITQ, K_ANY, NKINDS };

struct waiter {
	enum kind kind;
	clockid_t clk;
	struct timespec abs;
	ursa_mutex_t m;
	ursa_sem_t s;
	ursa_event_t e;
	ursa_cond_t c;
	ursa_rwlock_t l;
	ursa_waitq_t *q;
	atomic_int state; /* 1 about to wait, 2 returned */
	atomic_int go;	  /* cond: the predicate */
	int res;
};

static void *waiter(void *arg)
{
	struct waiter *w = arg;
	atomic_store(&w->state, 1);
	switch (w->kind) {
	case K_MUTEX:
		w->res = ursa_mutex_timedlock(&w->m, w->clk, &w->abs);
		if (!w->res)
			ursa_mutex_unlock(&w->m);
		break;
	case K_SEM:
		w->res = ursa_sem_timedwait(&w->s, w->clk, &w->abs);
		break;
	case K_EVENT:
		w->res = ursa_event_timedwait(&w->e, w->clk, &w->abs);
		break;
	case K_COND:
		ursa_mutex_lock(&w->m);
		w->res = 0;
		while (!atomic_load(&w->go) && !w->res)
			w->res = ursa_cond_timedwait(&w->c, &w->m, w->clk, &w->abs);
		ursa_mutex_unlock(&w->m);
		break;
	case K_RD:
		w->res = ursa_rwlock_timedrdlock(&w->l, w->clk, &w->abs);
		if (!w->res)
			ursa_rwlock_rdunlock(&w->l);
		break;
	case K_WR:
		w->res = ursa_rwlock_timedwrlock(&w->l, w->clk, &w->abs);
		if (!w->res)
			ursa_rwlock_wrunlock(&w->l);
		break;
	case K_WAITQ:
		w->res = ursa_waitq_wait(w->q, 0, w->clk, &w->abs);
		break;
	case K_ANY: {
		ursa_waitable_t v[2] = {{URSA_WAIT_SEM, &w->s}, {URSA_WAIT_EVENT, &w->e}};
		w->res = ursa_wait_any(v, 2, w->clk, &w->abs);
		break;
	}
	default:
		w->res = -1;
	}
	atomic_store(&w->state, 2);
	return NULL;
}

static void one(enum kind k, clockid_t clk, const struct timespec *abs)
{
	struct waiter *w = calloc(1, sizeof(*w));
	cr_assert(w);
	w->kind = k;
	w->clk = clk;
	w->abs = *abs;
	ursa_sem_init(&w->s, 0, 0);
	ursa_event_init(&w->e, 0);
	w->q = calloc(1, ursa_waitq_size(1));
	cr_assert(w->q);
	ursa_waitq_init(w->q, 1, 0);
	if (k == K_MUTEX)
		ursa_mutex_lock(&w->m);
	if (k == K_RD)
		ursa_rwlock_wrlock(&w->l);
	if (k == K_WR)
		ursa_rwlock_rdlock(&w->l);
	if (k == K_WAITQ)
		cr_assert_eq(ursa_waitq_prepare(w->q, 0, 1), 0);
	pthread_t t;
	pthread_create(&t, NULL, waiter, w);
	while (atomic_load(&w->state) == 0)
		sched_yield();
	t_sleep_ms(20); /* most often asleep by now; returning at once would
			   also be seen: res must be 0 and it must wait for us */
	cr_assert_eq(atomic_load(&w->state), 1, "kind %d returned early: %d", k, w->res);
	switch (k) {
	case K_MUTEX:
		ursa_mutex_unlock(&w->m);
		break;
	case K_SEM:
	case K_ANY:
		ursa_sem_post(&w->s);
		break;
	case K_EVENT:
		ursa_event_set(&w->e);
		break;
	case K_COND:
		ursa_mutex_lock(&w->m);
		atomic_store(&w->go, 1);
		ursa_cond_signal(&w->c);
		ursa_mutex_unlock(&w->m);
		break;
	case K_RD:
		ursa_rwlock_wrunlock(&w->l);
		break;
	case K_WR:
		ursa_rwlock_rdunlock(&w->l);
		break;
	case K_WAITQ:
		cr_assert_eq(ursa_waitq_wake(w->q, 1, NULL), 1);
		break;
	default:
		break;
	}
	pthread_join(t, NULL);
	cr_assert_eq(w->res, 0, "kind %d clock %d tv_sec %lld: %d", k, (int)clk,
		     (long long)abs->tv_sec, w->res);
	free(w->q);
	free(w);
}

Test(deadline, every_wait_far_deadline_released)
{
	/* Wait-any where the kernel has futex_waitv (elsewhere it answers
	 * -ENOSYS at once: wait_any/bad_input). */
	int nkinds = t_have_futex_waitv() ? NKINDS : K_ANY;
	if (nkinds != NKINDS)
		cr_log_info("kernel lacks futex_waitv: wait-any left out");
	for (int k = 0; k < nkinds; k++)
		for (unsigned c = 0; c < 2; c++)
			for (unsigned d = 0; d < NFAR; d += 2)
				one(k, clocks[c], &far_deadlines[d]);
}

/*
 * errno is never set for the caller (include/ursa/common.h): not by a wait
 * that times out in the kernel (ETIMEDOUT), nor by one whose word changed
 * first (EAGAIN), nor on a kernel without the futex2 calls (ENOSYS, once).
 * The shim's pthread functions rely on it: glibc's leave errno alone, and
 * programs read errno after locking (a failed write() logged under a
 * mutex). Each wait below blocks in the kernel until its deadline.
 */
#define ERRNO_SENTINEL 4242

static void errno_kept(const char *what, int got, int want)
{
	int e = errno;
	cr_assert_eq(got, want, "%s: %d", what, got);
	cr_assert_eq(e, ERRNO_SENTINEL, "%s changed errno to %d (%s)", what, e, strerror(e));
}

/* Each wait times out 10 ms ahead on clk (dl), from errno = the sentinel. */
#define TIMES_OUT(what, call)                                                                      \
	do {                                                                                       \
		dl = t_deadline(clk, 10);                                                          \
		errno = ERRNO_SENTINEL;                                                            \
		errno_kept(what, (call), -ETIMEDOUT);                                              \
	} while (0)

Test(deadline, errno_untouched_by_waits_that_time_out)
{
	for (unsigned c = 0; c < 2; c++) {
		clockid_t clk = clocks[c];
		struct timespec dl;
		ursa_mutex_t m = URSA_MUTEX_INIT;
		cr_assert_eq(ursa_mutex_lock(&m), 0);
		TIMES_OUT("mutex_timedlock", ursa_mutex_timedlock(&m, clk, &dl));
		cr_assert_eq(ursa_mutex_unlock(&m), 0);

		ursa_sem_t s;
		cr_assert_eq(ursa_sem_init(&s, 0, 0), 0);
		TIMES_OUT("sem_timedwait", ursa_sem_timedwait(&s, clk, &dl));

		ursa_event_t e = URSA_EVENT_INIT;
		TIMES_OUT("event_timedwait", ursa_event_timedwait(&e, clk, &dl));

		ursa_cond_t cv = URSA_COND_INIT;
		cr_assert_eq(ursa_mutex_lock(&m), 0);
		TIMES_OUT("cond_timedwait", ursa_cond_timedwait(&cv, &m, clk, &dl));
		cr_assert_eq(ursa_mutex_unlock(&m), 0);

		ursa_rwlock_t l = URSA_RWLOCK_INIT;
		cr_assert_eq(ursa_rwlock_rdlock(&l), 0);
		TIMES_OUT("rwlock_timedwrlock", ursa_rwlock_timedwrlock(&l, clk, &dl));
		cr_assert_eq(ursa_rwlock_rdunlock(&l), 0);
		cr_assert_eq(ursa_rwlock_wrlock(&l), 0);
		TIMES_OUT("rwlock_timedrdlock", ursa_rwlock_timedrdlock(&l, clk, &dl));
		cr_assert_eq(ursa_rwlock_wrunlock(&l), 0);

		ursa_waitq_t *q = calloc(1, ursa_waitq_size(1));
		cr_assert_not_null(q);
		cr_assert_eq(ursa_waitq_init(q, 1, 0), 0);
		cr_assert_eq(ursa_waitq_prepare(q, 0, 1), 0);
		TIMES_OUT("waitq_wait", ursa_waitq_wait(q, 0, clk, &dl));
		free(q);

		if (t_have_futex_waitv()) {
			ursa_waitable_t v[2] = {{URSA_WAIT_SEM, &s}, {URSA_WAIT_EVENT, &e}};
			TIMES_OUT("wait_any", ursa_wait_any(v, 2, clk, &dl));
		}
		cr_assert_eq(ursa_sem_destroy(&s), 0);
	}
}
