/* SPDX-License-Identifier: MIT */
/*
 * tests/integration/async_prims.c — ring waiters and blocked threads on the
 * same rwlock, semaphore, event, condvar, wait queue and wait-any set; and
 * the async deadline/cancel contract on each kind.
 */
#include "tests/helpers.h"

#include <errno.h>
#include <liburing.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

TestSuite(async_prims, .timeout = 60);

static void ring_init(struct io_uring *r)
{
	t_ring(r, 32, 0);
}

/* Submit and reap until an ursa op finishes (10 s at most); every CQE on
 * these rings is ursa's. */
static struct ursa_op *reap(struct io_uring *r)
{
	int app = 0;
	struct ursa_op *done = t_reap(r, &app, 10000);
	cr_assert_eq(app, 0, "stray application CQE");
	return done;
}

/* A test's ring, after the kernel check, and n threads fn(arg) beside
 * it. */
static void ring_and_threads(struct io_uring *r, pthread_t *t, int n, void *(*fn)(void *),
			     void *arg)
{
	t_require_uring_futex(false);
	ring_init(r);
	t_spawn(t, n, fn, arg, 0);
}

/* Start an op and wait for it to finish, whichever way. Returns op->res. */
#define RUN_OP(r, op, call)                                                                   \
	({                                                                                    \
		int rc_ = (call);                                                             \
		cr_assert(rc_ == 0 || rc_ == 1, "starter: %d", rc_);                          \
		if (rc_ == 0)                                                                 \
			cr_assert_eq(reap(r), (op), "op did not finish");                     \
		(op)->res;                                                                    \
	})

/* ---- rwlock: a ring writer/reader against blocking readers and writers --- */

struct rwx {
	ursa_rwlock_t l;
	atomic_int readers, writers, violations;
	long value;
};

#define RW_ROUNDS 5000

static void rw_check_write(struct rwx *x)
{
	if (atomic_fetch_add(&x->writers, 1) != 0 || atomic_load(&x->readers) != 0)
		atomic_fetch_add(&x->violations, 1);
	x->value++;
	atomic_fetch_sub(&x->writers, 1);
}

static void rw_check_read(struct rwx *x)
{
	atomic_fetch_add(&x->readers, 1);
	if (atomic_load(&x->writers) != 0)
		atomic_fetch_add(&x->violations, 1);
	atomic_fetch_sub(&x->readers, 1);
}

static void *rw_thread(void *arg)
{
	struct rwx *x = arg;
	for (int i = 0; i < RW_ROUNDS; i++) {
		if (i % 4 == 0) {
			cr_assert_eq(ursa_rwlock_wrlock(&x->l), 0);
			rw_check_write(x);
			cr_assert_eq(ursa_rwlock_wrunlock(&x->l), 0);
		} else {
			cr_assert_eq(ursa_rwlock_rdlock(&x->l), 0);
			rw_check_read(x);
			cr_assert_eq(ursa_rwlock_rdunlock(&x->l), 0);
		}
	}
	return NULL;
}

Test(async_prims, rwlock_ring_and_threads)
{
	static struct rwx x;
	memset(&x, 0, sizeof(x));
	struct io_uring r;
	pthread_t t[2];
	ring_and_threads(&r, t, 2, rw_thread, &x);
	long ring_writes = 0;
	for (int i = 0; i < RW_ROUNDS; i++) {
		struct ursa_op op = URSA_OP_INIT;
		if (i % 2 == 0) {
			cr_assert_eq(RUN_OP(&r, &op, ursa_rwlock_wrlock_async(&r, &x.l, &op)), 0);
			rw_check_write(&x);
			ring_writes++;
			cr_assert_eq(ursa_rwlock_wrunlock(&x.l), 0);
		} else {
			cr_assert_eq(RUN_OP(&r, &op, ursa_rwlock_rdlock_async(&r, &x.l, &op)), 0);
			rw_check_read(&x);
			cr_assert_eq(ursa_rwlock_rdunlock(&x.l), 0);
		}
	}
	t_join_all(t, 2);
	cr_assert_eq(atomic_load(&x.violations), 0);
	cr_assert_eq(x.value, ring_writes + 2 * (RW_ROUNDS / 4));
	cr_assert_eq(ursa_rwlock_destroy(&x.l), 0);
	io_uring_queue_exit(&r);
}

/* ---- semaphore: thread producer, ring + thread consumers ----------------- */

struct semx {
	ursa_sem_t s;
	atomic_long consumed;
	atomic_int stop;
};

#define SEM_ITEMS 20000

static void *sem_producer(void *arg)
{
	struct semx *x = arg;
	for (int i = 0; i < SEM_ITEMS; i++)
		cr_assert_eq(ursa_sem_post(&x->s), 0);
	return NULL;
}

static void *sem_consumer(void *arg)
{
	struct semx *x = arg;
	for (;;) {
		struct timespec dl = t_deadline(CLOCK_MONOTONIC, 5);
		int rc = ursa_sem_timedwait(&x->s, CLOCK_MONOTONIC, &dl);
		if (rc == 0)
			atomic_fetch_add(&x->consumed, 1);
		else if (atomic_load(&x->stop))
			return NULL;
		else
			cr_assert_eq(rc, -ETIMEDOUT);
	}
}

Test(async_prims, sem_ring_and_thread_consumers_conserve_count)
{
	static struct semx x;
	memset(&x, 0, sizeof(x));
	struct io_uring r;
	pthread_t t[2];
	ring_and_threads(&r, &t[0], 1, sem_producer, &x);
	t_spawn(&t[1], 1, sem_consumer, &x, 0);
	long ring_taken = 0;
	while (ring_taken + atomic_load(&x.consumed) < SEM_ITEMS) {
		struct ursa_op op = URSA_OP_INIT;
		struct timespec dl = t_deadline(CLOCK_MONOTONIC, 5);
		cr_assert_eq(ursa_op_set_deadline(&op, CLOCK_MONOTONIC, &dl), 0);
		int res = RUN_OP(&r, &op, ursa_sem_wait_async(&r, &x.s, &op));
		if (res == 0)
			ring_taken++;
		else
			cr_assert_eq(res, -ETIMEDOUT);
	}
	atomic_store(&x.stop, 1);
	t_join_all(t, 2);
	cr_assert_eq(ring_taken + atomic_load(&x.consumed), SEM_ITEMS);
	cr_assert_eq(ursa_sem_value(&x.s), 0);
	cr_assert_eq(ursa_sem_destroy(&x.s), 0, "a waiter registration leaked");
	io_uring_queue_exit(&r);
}

/* ---- events --------------------------------------------------------------- */

struct evx {
	ursa_event_t e;
	atomic_int consumed;
	int sets;
};

static void *auto_setter(void *arg)
{
	struct evx *x = arg;
	for (int i = 0; i < x->sets; i++) {
		while (atomic_load(&x->consumed) != i)
			sched_yield();
		cr_assert_eq(ursa_event_set(&x->e), 0);
	}
	return NULL;
}

Test(async_prims, auto_event_each_set_releases_one_ring_wait)
{
	static struct evx x;
	x = (struct evx){.sets = 2000};
	cr_assert_eq(ursa_event_init(&x.e, URSA_EVENT_AUTO_RESET), 0);
	struct io_uring r;
	pthread_t t;
	ring_and_threads(&r, &t, 1, auto_setter, &x);
	for (int i = 0; i < x.sets; i++) {
		struct ursa_op op = URSA_OP_INIT;
		cr_assert_eq(RUN_OP(&r, &op, ursa_event_wait_async(&r, &x.e, &op)), 0);
		cr_assert_eq(ursa_event_trywait(&x.e), -EBUSY, "auto-reset: consumed by the wait");
		atomic_fetch_add(&x.consumed, 1);
	}
	t_join_all(&t, 1);
	cr_assert_eq(ursa_event_destroy(&x.e), 0);
	io_uring_queue_exit(&r);
}

static void *manual_setter(void *arg)
{
	ursa_event_t *e = *(ursa_event_t **)arg;
	/* The waits were registered by their starters and armed by the
	 * submit (inline, without SQPOLL) before this thread started. */
	cr_assert_eq(ursa_event_set(e), 0);
	cr_assert_eq(ursa_event_reset(e), 0); /* a pulse: waiters still released */
	return NULL;
}

Test(async_prims, manual_event_releases_ring_and_thread_waiters)
{
	t_require_uring_futex(false);
	ursa_event_t e = URSA_EVENT_INIT;
	struct io_uring r;
	ring_init(&r);
	struct ursa_op ops[4];
	memset(ops, 0, sizeof(ops));
	for (int i = 0; i < 4; i++)
		cr_assert_eq(ursa_event_wait_async(&r, &e, &ops[i]), 0);
	io_uring_submit(&r);
	ursa_event_t *pe = &e;
	pthread_t t;
	t_spawn(&t, 1, manual_setter, &pe, sizeof(pe));
	int seen = 0;
	while (seen < 4) {
		struct ursa_op *d = reap(&r);
		cr_assert_not_null(d);
		cr_assert_eq(d->res, 0);
		seen++;
	}
	t_join_all(&t, 1);
	cr_assert_eq(ursa_event_trywait(&e), -EBUSY, "reset after the pulse");
	io_uring_queue_exit(&r);
}

/* ---- condvar: ring waiter ping-pong with a blocked thread ----------------- */

struct condx {
	ursa_mutex_t m;
	ursa_cond_t c;
	int turn; /* 0: ring's turn, 1: thread's turn */
	int rounds;
};

static void *cond_thread(void *arg)
{
	struct condx *x = arg;
	cr_assert_eq(ursa_mutex_lock(&x->m), 0);
	for (int i = 0; i < x->rounds; i++) {
		while (x->turn != 1)
			cr_assert_eq(ursa_cond_wait(&x->c, &x->m), 0);
		x->turn = 0;
		cr_assert_eq(ursa_cond_broadcast(&x->c), 0);
	}
	cr_assert_eq(ursa_mutex_unlock(&x->m), 0);
	return NULL;
}

Test(async_prims, cond_ring_and_thread_pingpong)
{
	static struct condx x;
	x = (struct condx){.rounds = 2000};
	struct io_uring r;
	pthread_t t;
	ring_and_threads(&r, &t, 1, cond_thread, &x);
	struct ursa_op op = URSA_OP_INIT;
	cr_assert_eq(RUN_OP(&r, &op, ursa_mutex_lock_async(&r, &x.m, &op)), 0);
	for (int i = 0; i < x.rounds; i++) {
		x.turn = 1;
		cr_assert_eq(ursa_cond_signal(&x.c), 0);
		while (x.turn != 0) {
			memset(&op, 0, sizeof(op));
			cr_assert_eq(RUN_OP(&r, &op, ursa_cond_wait_async(&r, &x.c, &x.m, &op)), 0);
			/* finishes holding m */
			cr_assert_eq(ursa_mutex_trylock(&x.m), -EBUSY);
		}
	}
	cr_assert_eq(ursa_mutex_unlock(&x.m), 0);
	t_join_all(&t, 1);
	cr_assert_eq(ursa_cond_destroy(&x.c), 0);
	io_uring_queue_exit(&r);
}

Test(async_prims, cond_timeout_and_cancel_finish_holding_mutex)
{
	t_require_uring_futex(false);
	ursa_mutex_t m = URSA_MUTEX_INIT;
	ursa_cond_t c = URSA_COND_INIT;
	struct io_uring r;
	ring_init(&r);
	cr_assert_eq(ursa_mutex_lock(&m), 0);
	struct ursa_op op = URSA_OP_INIT;
	struct timespec dl = t_deadline(CLOCK_REALTIME, 20);
	cr_assert_eq(ursa_op_set_deadline(&op, CLOCK_REALTIME, &dl), 0);
	cr_assert_eq(RUN_OP(&r, &op, ursa_cond_wait_async(&r, &c, &m, &op)), -ETIMEDOUT);
	cr_assert_eq(ursa_mutex_trylock(&m), -EBUSY, "must finish holding m");
	memset(&op, 0, sizeof(op));
	cr_assert_eq(ursa_cond_wait_async(&r, &c, &m, &op), 0);
	io_uring_submit(&r);
	cr_assert_eq(ursa_op_cancel(&r, &op), 0);
	cr_assert_eq(reap(&r), &op);
	cr_assert_eq(op.res, -ECANCELED);
	cr_assert_eq(ursa_mutex_trylock(&m), -EBUSY, "must finish holding m");
	cr_assert_eq(ursa_cond_destroy(&c), 0, "waiter registration leaked");
	/* Not holding m: -EPERM at once, nothing queued. */
	cr_assert_eq(ursa_mutex_unlock(&m), 0);
	memset(&op, 0, sizeof(op));
	cr_assert_eq(ursa_cond_wait_async(&r, &c, &m, &op), -EPERM);
	cr_assert_eq(io_uring_sq_ready(&r), 0);
	io_uring_queue_exit(&r);
}

/* ---- wait queue: ring waiters woken by syscalls and by a ring batch ------- */

Test(async_prims, waitq_ring_waiters_woken_both_ways)
{
	t_require_uring_futex(false);
	enum { N = 16 };
	ursa_waitq_t *q = aligned_alloc(64, (ursa_waitq_size(N) + 63) & ~(size_t)63);
	cr_assert_eq(ursa_waitq_init(q, N, 0), 0);
	struct io_uring r, wr;
	ring_init(&r);
	ring_init(&wr);
	for (int via_ring = 0; via_ring < 2; via_ring++) {
		struct ursa_op ops[N];
		memset(ops, 0, sizeof(ops));
		for (uint32_t i = 0; i < N; i++) {
			cr_assert_eq(ursa_waitq_prepare(q, i, i), 0);
			cr_assert_eq(ursa_waitq_wait_async(&r, q, i, &ops[i]), 0);
		}
		io_uring_submit(&r);
		/* Wake keys 0..7 (directed), then the rest (n oldest). */
		cr_assert_eq(ursa_waitq_wake_upto(q, 7, via_ring ? &wr : NULL), 8);
		cr_assert_eq(ursa_waitq_wake(q, N, via_ring ? &wr : NULL), N - 8);
		int seen[N] = {0};
		for (int k = 0; k < N; k++) {
			struct ursa_op *d = reap(&r);
			cr_assert_not_null(d);
			cr_assert_eq(d->res, 0);
			seen[d - ops]++;
		}
		for (int i = 0; i < N; i++)
			cr_assert_eq(seen[i], 1);
	}
	io_uring_queue_exit(&r);
	io_uring_queue_exit(&wr);
	free(q);
}

Test(async_prims, waitq_ring_wait_timeout_dequeues)
{
	t_require_uring_futex(false);
	ursa_waitq_t *q = aligned_alloc(64, (ursa_waitq_size(4) + 63) & ~(size_t)63);
	cr_assert_eq(ursa_waitq_init(q, 4, 0), 0);
	struct io_uring r;
	ring_init(&r);
	cr_assert_eq(ursa_waitq_prepare(q, 2, 100), 0);
	struct ursa_op op = URSA_OP_INIT;
	struct timespec dl = t_deadline(CLOCK_MONOTONIC, 20);
	cr_assert_eq(ursa_op_set_deadline(&op, CLOCK_MONOTONIC, &dl), 0);
	cr_assert_eq(RUN_OP(&r, &op, ursa_waitq_wait_async(&r, q, 2, &op)), -ETIMEDOUT);
	cr_assert_eq(ursa_waitq_wake(q, 4, NULL), 0, "the timed-out slot was dequeued");
	cr_assert_eq(ursa_waitq_prepare(q, 2, 100), 0, "slot free again");
	cr_assert_eq(ursa_waitq_cancel(q, 2), 0);
	io_uring_queue_exit(&r);
	free(q);
}

/* ---- wait-any in the ring -------------------------------------------------- */

static void *post_later(void *arg)
{
	ursa_sem_t *s = *(ursa_sem_t **)arg;
	cr_assert_eq(ursa_sem_post(s), 0);
	return NULL;
}

Test(async_prims, wait_any_ring_takes_exactly_one)
{
	t_require_uring_futex(true);
	ursa_mutex_t m = URSA_MUTEX_INIT;
	ursa_sem_t s = URSA_SEM_INIT;
	ursa_event_t e = URSA_EVENT_INIT;
	ursa_waitable_t v[3] = {
		{URSA_WAIT_MUTEX, &m}, {URSA_WAIT_SEM, &s}, {URSA_WAIT_EVENT, &e}};
	struct io_uring r;
	ring_init(&r);
	cr_assert_eq(ursa_mutex_lock(&m), 0);
	struct ursa_op op = URSA_OP_INIT;
	cr_assert_eq(ursa_wait_any_async(&r, v, 3, &op), 0);
	/* Armed before the post (io_uring_enter issues the FUTEX_WAITV inline
	 * without SQPOLL): the post must wake the ring's wait-any. */
	cr_assert_geq(io_uring_submit(&r), 1);
	ursa_sem_t *ps = &s;
	pthread_t t;
	t_spawn(&t, 1, post_later, &ps, sizeof(ps));
	cr_assert_eq(reap(&r), &op);
	t_join_all(&t, 1);
	cr_assert_eq(op.res, 1, "took the semaphore");
	cr_assert_eq(ursa_sem_value(&s), 0);
	cr_assert_eq(ursa_mutex_trylock(&m), -EBUSY, "mutex untouched (still ours)");
	/* Free mutex: finishes at once, takes index 0. */
	cr_assert_eq(ursa_mutex_unlock(&m), 0);
	memset(&op, 0, sizeof(op));
	cr_assert_eq(ursa_wait_any_async(&r, v, 3, &op), 1);
	cr_assert_eq(op.res, 0);
	cr_assert_eq(ursa_mutex_unlock(&m), 0);
	/* Deadline: nothing available. */
	cr_assert_eq(ursa_mutex_lock(&m), 0);
	memset(&op, 0, sizeof(op));
	struct timespec dl = t_deadline(CLOCK_MONOTONIC, 20);
	cr_assert_eq(ursa_op_set_deadline(&op, CLOCK_MONOTONIC, &dl), 0);
	cr_assert_eq(RUN_OP(&r, &op, ursa_wait_any_async(&r, v, 3, &op)), -ETIMEDOUT);
	cr_assert_eq(ursa_sem_destroy(&s), 0, "registration leaked");
	cr_assert_eq(ursa_mutex_unlock(&m), 0);
	/* Bad input. */
	memset(&op, 0, sizeof(op));
	cr_assert_eq(ursa_wait_any_async(&r, v, 0, &op), -EINVAL);
	cr_assert_eq(ursa_wait_any_async(&r, v, 129, &op), -EINVAL);
	io_uring_queue_exit(&r);
}

/* ---- waitid in the ring ------------------------------------------------------ */

static bool have_waitid(void)
{
	struct ursa_features f;
	cr_assert_eq(ursa_probe(&f), 0);
	return f.uring_waitid;
}

static void require_waitid(void)
{
	if (!have_waitid())
		cr_skip_test("kernel lacks IORING_OP_WAITID (needs Linux 6.7+)");
}

Test(async_prims, waitid_child_exit_with_a_lock_in_the_same_ring)
{
	require_waitid();
	t_require_uring_futex(false);
	struct io_uring r;
	ring_init(&r);
	ursa_mutex_t m = URSA_MUTEX_INIT;
	cr_assert_eq(ursa_mutex_lock(&m), 0);
	struct ursa_op lop = URSA_OP_INIT, wop = URSA_OP_INIT;
	cr_assert_eq(ursa_mutex_lock_async(&r, &m, &lop), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		usleep(10000);
		_exit(7);
	}
	siginfo_t si;
	memset(&si, 0, sizeof(si));
	cr_assert_eq(ursa_waitid_async(&r, P_PID, (id_t)pid, &si, WEXITED, &wop), 0);
	struct ursa_op *d = reap(&r);
	cr_assert_eq(d, &wop, "the child's exit comes first");
	cr_assert_eq(wop.res, 0);
	cr_assert_eq(si.si_pid, pid);
	cr_assert_eq(si.si_status, 7);
	cr_assert_eq(ursa_mutex_unlock(&m), 0);
	cr_assert_eq(reap(&r), &lop);
	cr_assert_eq(lop.res, 0);
	cr_assert_eq(ursa_mutex_unlock(&m), 0);
	io_uring_queue_exit(&r);
}

/* The waitid cases below need a child that stays alive until the test
 * lets it go: it exits with status 5 once the pipe's write end closes (the
 * test's close, or the test's death). */
static pid_t held_child(int *release_fd)
{
	int fds[2];
	cr_assert_eq(pipe(fds), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		t_die_with_parent();
		close(fds[1]);
		char c;
		while (read(fds[0], &c, 1) > 0)
			;
		_exit(5);
	}
	close(fds[0]);
	*release_fd = fds[1];
	return pid;
}

/* Let the child go and reap it here: a cancelled or timed-out waitid must
 * have left its exit to be collected. */
static void release_and_collect(int fd, pid_t pid)
{
	close(fd);
	int st = 0;
	cr_assert_eq(waitpid(pid, &st, 0), pid, "the child's exit was consumed: %m");
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 5, "status %#x", st);
}

/* A ring r (where IORING_OP_WAITID exists) and a waitid op in flight on a
 * held child (not submitted yet); returns the child. */
static pid_t waitid_held_child(struct io_uring *r, int *fd, siginfo_t *si, struct ursa_op *op)
{
	require_waitid();
	ring_init(r);
	pid_t pid = held_child(fd);
	memset(si, 0, sizeof(*si));
	cr_assert_eq(ursa_waitid_async(r, P_PID, (id_t)pid, si, WEXITED, op), 0);
	return pid;
}

Test(async_prims, waitid_bad_input_and_in_flight)
{
	require_waitid();
	struct io_uring r;
	ring_init(&r);
	siginfo_t si;
	struct ursa_op op = URSA_OP_INIT;
	cr_assert_eq(ursa_waitid_async(NULL, P_ALL, 0, &si, WEXITED, &op), -EINVAL);
	cr_assert_eq(ursa_waitid_async(&r, P_ALL, 0, NULL, WEXITED, &op), -EINVAL);
	cr_assert_eq(ursa_waitid_async(&r, P_ALL, 0, &si, WEXITED, NULL), -EINVAL);
	cr_assert_eq(io_uring_sq_ready(&r), 0, "a refused start queued something");
	int fd;
	pid_t pid = held_child(&fd);
	cr_assert_eq(ursa_waitid_async(&r, P_PID, (id_t)pid, &si, WEXITED, &op), 0);
	cr_assert_eq(ursa_waitid_async(&r, P_PID, (id_t)pid, &si, WEXITED, &op), -EINVAL,
		     "an op in flight started again");
	cr_assert_eq(io_uring_sq_ready(&r), 1);
	/* The one in flight still completes, once. */
	close(fd);
	cr_assert_eq(reap(&r), &op);
	cr_assert_eq(op.res, 0);
	cr_assert_eq(si.si_pid, pid);
	cr_assert_eq(si.si_code, CLD_EXITED);
	cr_assert_eq(si.si_status, 5);
	cr_assert_eq(t_drain(&r, 20), 0);
	io_uring_queue_exit(&r);
}

Test(async_prims, waitid_errors_come_as_the_result)
{
	require_waitid();
	struct io_uring r;
	ring_init(&r);
	siginfo_t si;
	struct ursa_op op = URSA_OP_INIT;
	/* Not our child: waitid's own -ECHILD, through the CQE. */
	int rc = ursa_waitid_async(&r, P_PID, 1, &si, WEXITED, &op);
	cr_assert(rc == 0 || rc == 1, "starter: %d", rc);
	if (rc == 0)
		cr_assert_eq(reap(&r), &op);
	cr_assert_eq(op.res, -ECHILD);
	/* No state asked for (none of WEXITED, WSTOPPED, WCONTINUED). */
	memset(&op, 0, sizeof(op));
	rc = ursa_waitid_async(&r, P_ALL, 0, &si, 0, &op);
	cr_assert(rc == 0 || rc == 1, "starter: %d", rc);
	if (rc == 0)
		cr_assert_eq(reap(&r), &op);
	cr_assert_eq(op.res, -EINVAL);
	cr_assert_eq(t_drain(&r, 20), 0);
	io_uring_queue_exit(&r);
}

Test(async_prims, waitid_cancel_leaves_the_child_to_reap)
{
	struct io_uring r;
	int fd;
	siginfo_t si;
	struct ursa_op op = URSA_OP_INIT;
	pid_t pid = waitid_held_child(&r, &fd, &si, &op);
	cr_assert_geq(io_uring_submit(&r), 1);
	cr_assert_eq(ursa_op_cancel(&r, &op), 0);
	cr_assert_eq(reap(&r), &op);
	cr_assert_eq(op.res, -ECANCELED);
	cr_assert_eq(ursa_op_cancel(&r, &op), 0, "cancel after finish is harmless");
	cr_assert_eq(t_drain(&r, 20), 0);
	release_and_collect(fd, pid);
	io_uring_queue_exit(&r);
}

/* The application's own cancel of everything on the ring
 * (IORING_ASYNC_CANCEL_ANY) is not the op's end (ursa/async.h): a waitid
 * op is re-armed, as the futex waits are (before, it finished with
 * -ECANCELED), and still reports the child's exit. A lock op beside it is
 * the control. */
Test(async_prims, waitid_rearmed_after_the_applications_cancel)
{
	struct io_uring r;
	int fd;
	siginfo_t si;
	struct ursa_op op = URSA_OP_INIT, mop = URSA_OP_INIT;
	pid_t pid = waitid_held_child(&r, &fd, &si, &op);
	ursa_mutex_t m = URSA_MUTEX_INIT;
	cr_assert_eq(ursa_mutex_lock(&m), 0);
	cr_assert_eq(ursa_mutex_lock_async(&r, &m, &mop), 0);
	cr_assert_geq(io_uring_submit(&r), 2);
	struct io_uring_sqe *sqe = io_uring_get_sqe(&r);
	cr_assert_not_null(sqe);
	io_uring_prep_cancel64(sqe, 0, IORING_ASYNC_CANCEL_ANY);
	sqe->user_data = 42;
	/* Only the cancel's own CQE reaches the application; nothing ends. */
	cr_assert_eq(t_drain(&r, 50), 1);
	close(fd);
	cr_assert_eq(reap(&r), &op);
	cr_assert_eq(op.res, 0, "res %d", op.res);
	cr_assert_eq(si.si_pid, pid);
	cr_assert_eq(si.si_code, CLD_EXITED);
	cr_assert_eq(si.si_status, 5);
	cr_assert_eq(ursa_mutex_unlock(&m), 0);
	cr_assert_eq(reap(&r), &mop);
	cr_assert_eq(mop.res, 0);
	cr_assert_eq(ursa_mutex_unlock(&m), 0);
	cr_assert_eq(t_drain(&r, 20), 0);
	io_uring_queue_exit(&r);
}

Test(async_prims, waitid_deadline_both_clocks)
{
	require_waitid();
	static const clockid_t clocks[] = {CLOCK_MONOTONIC, CLOCK_REALTIME};
	struct io_uring r;
	ring_init(&r);
	for (int i = 0; i < 2; i++) {
		int fd;
		pid_t pid = held_child(&fd);
		siginfo_t si;
		struct ursa_op op = URSA_OP_INIT;
		/* Already past: finished in the starter, nothing queued. */
		struct timespec dl = t_deadline(clocks[i], -5);
		cr_assert_eq(ursa_op_set_deadline(&op, clocks[i], &dl), 0);
		cr_assert_eq(ursa_waitid_async(&r, P_PID, (id_t)pid, &si, WEXITED, &op), 1);
		cr_assert_eq(op.res, -ETIMEDOUT);
		cr_assert_eq(io_uring_sq_ready(&r), 0);
		/* 30 ms ahead: ends -ETIMEDOUT, not before the deadline. */
		dl = t_deadline(clocks[i], 30);
		cr_assert_eq(ursa_op_set_deadline(&op, clocks[i], &dl), 0);
		cr_assert_eq(ursa_waitid_async(&r, P_PID, (id_t)pid, &si, WEXITED, &op), 0);
		cr_assert_eq(reap(&r), &op);
		cr_assert_eq(op.res, -ETIMEDOUT);
		struct timespec now;
		clock_gettime(clocks[i], &now);
		cr_assert(now.tv_sec > dl.tv_sec ||
			  (now.tv_sec == dl.tv_sec && now.tv_nsec >= dl.tv_nsec));
		cr_assert_eq(t_drain(&r, 20), 0, "the timeout's own CQE reached the application");
		release_and_collect(fd, pid);
	}
	io_uring_queue_exit(&r);
}

/* ---- every starter: bad input and a full SQ change nothing ---------------- */

/* The objects of every kind, each blocked (so a start would have to wait):
 * the mutex and the rwlock held here, the semaphore empty, the event and
 * the latch not set, a waitq slot prepared, the condvar's mutex held. */
struct all_kinds {
	ursa_mutex_t m, cm;
	ursa_rwlock_t l;
	ursa_sem_t s;
	ursa_event_t e;
	ursa_latch_t latch;
	ursa_cond_t c;
	ursa_waitq_t *q;
	ursa_waitable_t v[2];
	siginfo_t si;
};

static void all_kinds_init(struct all_kinds *k)
{
	memset(k, 0, sizeof(*k));
	cr_assert_eq(ursa_mutex_init(&k->m, 0), 0);
	cr_assert_eq(ursa_mutex_init(&k->cm, 0), 0);
	cr_assert_eq(ursa_rwlock_init(&k->l, 0), 0);
	cr_assert_eq(ursa_sem_init(&k->s, 0, 0), 0);
	cr_assert_eq(ursa_event_init(&k->e, 0), 0);
	cr_assert_eq(ursa_latch_init(&k->latch, 1, 0), 0);
	cr_assert_eq(ursa_cond_init(&k->c, 0), 0);
	k->q = calloc(1, ursa_waitq_size(1));
	cr_assert_not_null(k->q);
	cr_assert_eq(ursa_waitq_init(k->q, 1, 0), 0);
	cr_assert_eq(ursa_waitq_prepare(k->q, 0, 7), 0);
	k->v[0] = (ursa_waitable_t){URSA_WAIT_SEM, &k->s};
	k->v[1] = (ursa_waitable_t){URSA_WAIT_EVENT, &k->e};
	cr_assert_eq(ursa_mutex_lock(&k->m), 0);
	cr_assert_eq(ursa_rwlock_wrlock(&k->l), 0);
	cr_assert_eq(ursa_mutex_lock(&k->cm), 0);
}

#define N_STARTERS 10

/* Starter i on ring r with op; NULL pointers where the caller says. */
static int start_kind(int i, struct io_uring *r, struct all_kinds *k, struct ursa_op *op,
		      bool null_obj)
{
	switch (i) {
	case 0:
		return ursa_mutex_lock_async(r, null_obj ? NULL : &k->m, op);
	case 1:
		return ursa_rwlock_rdlock_async(r, null_obj ? NULL : &k->l, op);
	case 2:
		return ursa_rwlock_wrlock_async(r, null_obj ? NULL : &k->l, op);
	case 3:
		return ursa_sem_wait_async(r, null_obj ? NULL : &k->s, op);
	case 4:
		return ursa_event_wait_async(r, null_obj ? NULL : &k->e, op);
	case 5:
		return ursa_latch_wait_async(r, null_obj ? NULL : &k->latch, op);
	case 6:
		return ursa_cond_wait_async(r, null_obj ? NULL : &k->c, &k->cm, op);
	case 7:
		return ursa_waitq_wait_async(r, null_obj ? NULL : k->q, 0, op);
	case 8:
		return ursa_wait_any_async(r, null_obj ? NULL : k->v, 2, op);
	default:
		return ursa_waitid_async(r, P_ALL, 0, null_obj ? NULL : &k->si, WEXITED, op);
	}
}

/* Nothing of k changed: every object is as all_kinds_init left it and
 * nothing waits on any (each destroy would say -EBUSY). */
static void all_kinds_unchanged_and_fini(struct all_kinds *k)
{
	cr_assert_eq(ursa_mutex_trylock(&k->m), -EBUSY, "the mutex changed hands");
	cr_assert_eq(ursa_mutex_unlock(&k->m), 0);
	cr_assert_eq(ursa_mutex_destroy(&k->m), 0, "a waiter was left on the mutex");
	cr_assert_eq(ursa_rwlock_wrunlock(&k->l), 0);
	cr_assert_eq(ursa_rwlock_destroy(&k->l), 0, "a waiter was left on the rwlock");
	cr_assert_eq(ursa_sem_value(&k->s), 0);
	cr_assert_eq(ursa_sem_destroy(&k->s), 0, "a waiter was left on the semaphore");
	cr_assert_eq(ursa_event_trywait(&k->e), -EBUSY);
	cr_assert_eq(ursa_event_destroy(&k->e), 0, "a waiter was left on the event");
	cr_assert_eq(ursa_latch_trywait(&k->latch), -EBUSY);
	cr_assert_eq(ursa_latch_destroy(&k->latch), 0, "a waiter was left on the latch");
	cr_assert_eq(ursa_mutex_unlock(&k->cm), 0, "the condvar's mutex was not held");
	cr_assert_eq(ursa_cond_destroy(&k->c), 0, "a waiter was left on the condvar");
	cr_assert_eq(ursa_mutex_destroy(&k->cm), 0);
	/* The slot is still prepared: a cancel dequeues it (0), once. */
	cr_assert_eq(ursa_waitq_cancel(k->q, 0), 0, "the waitq slot was dequeued");
	cr_assert_eq(ursa_waitq_cancel(k->q, 0), -EINVAL);
	free(k->q);
}

Test(async_prims, every_starter_refuses_bad_input_and_a_full_sq)
{
	t_require_uring_futex(true);
	int n = have_waitid() ? N_STARTERS : N_STARTERS - 1;
	struct io_uring r;
	t_ring(&r, 4, 0);
	struct all_kinds k;
	all_kinds_init(&k);
	for (int i = 0; i < n; i++) {
		struct ursa_op op = URSA_OP_INIT;
		cr_assert_eq(start_kind(i, NULL, &k, &op, false), -EINVAL, "starter %d, NULL ring",
			     i);
		cr_assert_eq(start_kind(i, &r, &k, &op, true), -EINVAL, "starter %d, NULL object",
			     i);
		cr_assert_eq(start_kind(i, &r, &k, NULL, false), -EINVAL, "starter %d, NULL op", i);
		/* An op not 8-byte aligned (its user_data tag needs the bits). */
		_Alignas(16) unsigned char raw[sizeof(struct ursa_op) + 8];
		memset(raw, 0, sizeof(raw));
		struct ursa_op *odd = (struct ursa_op *)(void *)(raw + 4);
		cr_assert_eq(start_kind(i, &r, &k, odd, false), -EINVAL, "starter %d, odd op", i);
	}
	cr_assert_eq(io_uring_sq_ready(&r), 0, "a refused start queued something");
	/* The SQ full of NOPs: -EBUSY, nothing changed. */
	struct io_uring_sqe *sqe;
	while ((sqe = io_uring_get_sqe(&r)))
		io_uring_prep_nop(sqe);
	for (int i = 0; i < n; i++) {
		struct ursa_op op = URSA_OP_INIT;
		cr_assert_eq(start_kind(i, &r, &k, &op, false), -EBUSY, "starter %d, SQ full", i);
	}
	all_kinds_unchanged_and_fini(&k);
	/* The NOPs, and nothing of ursa's, come back. */
	cr_assert_eq(io_uring_submit(&r), 4);
	cr_assert_eq(t_drain(&r, 20), 4);
	io_uring_queue_exit(&r);
}
