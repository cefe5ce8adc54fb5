/* SPDX-License-Identifier: MIT */
/* tests/unit/async.c — the async API on the mutex: starters, completion,
 * deadlines, cancel, ring faults, bad input, and exactly-once under races. */
#include "tests/helpers.h"
#include "tests/integration/common.h" /* t_after_us */

#include <errno.h>
#include <liburing.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>

TestSuite(async, .timeout = 60);

/* A ring of entries and a new mutex, which this thread holds when held. */
static void ring_and_mutex(struct io_uring *r, unsigned entries, ursa_mutex_t *m, bool held)
{
	t_require_uring_futex(false);
	t_ring(r, entries, 0);
	cr_assert_eq(ursa_mutex_init(m, 0), 0);
	if (held)
		cr_assert_eq(ursa_mutex_lock(m), 0);
}

/* The op on m, started with a deadline ms from now on clk (*dl). */
static int start_with_deadline(struct io_uring *r, ursa_mutex_t *m, struct ursa_op *op,
			       clockid_t clk, long ms, struct timespec *dl)
{
	memset(op, 0, sizeof(*op));
	*dl = t_deadline(clk, ms);
	cr_assert_eq(ursa_op_set_deadline(op, clk, dl), 0);
	return ursa_mutex_lock_async(r, m, op);
}

static const clockid_t both_clocks[] = {CLOCK_MONOTONIC, CLOCK_REALTIME};

Test(async, bad_input)
{
	struct io_uring r;
	t_ring(&r, 8, 0);
	ursa_mutex_t m = URSA_MUTEX_INIT;
	struct ursa_op op = URSA_OP_INIT;
	struct timespec ts = {0, 0};
	cr_assert_eq(ursa_mutex_lock_async(NULL, &m, &op), -EINVAL);
	cr_assert_eq(ursa_mutex_lock_async(&r, NULL, &op), -EINVAL);
	cr_assert_eq(ursa_mutex_lock_async(&r, &m, NULL), -EINVAL);
	cr_assert_eq(ursa_op_set_deadline(NULL, CLOCK_MONOTONIC, &ts), -EINVAL);
	cr_assert_eq(ursa_op_set_deadline(&op, CLOCK_THREAD_CPUTIME_ID, &ts), -EINVAL);
	ts.tv_nsec = 1000000000L;
	cr_assert_eq(ursa_op_set_deadline(&op, CLOCK_MONOTONIC, &ts), -EINVAL);
	cr_assert_eq(ursa_op_cancel(NULL, &op), -EINVAL);
	cr_assert_eq(ursa_op_cancel(&r, NULL), -EINVAL);
	struct ursa_op *done;
	cr_assert_eq(ursa_handle_cqe(&r, NULL, &done), -EINVAL);
	/* None of that touched the mutex. */
	cr_assert_eq(ursa_mutex_trylock(&m), 0);
	cr_assert_eq(ursa_mutex_unlock(&m), 0);
	io_uring_queue_exit(&r);
}

Test(async, free_mutex_completes_at_once)
{
	struct io_uring r;
	ursa_mutex_t m;
	ring_and_mutex(&r, 8, &m, false);
	struct ursa_op op = URSA_OP_INIT;
	cr_assert_eq(ursa_mutex_lock_async(&r, &m, &op), 1);
	cr_assert_eq(op.res, 0);
	cr_assert_eq(io_uring_sq_ready(&r), 0, "nothing may be queued");
	cr_assert_eq(ursa_mutex_trylock(&m), -EBUSY, "the op holds the mutex");
	cr_assert_eq(ursa_mutex_unlock(&m), 0);
	io_uring_queue_exit(&r);
}

Test(async, in_flight_op_started_again_is_einval)
{
	struct io_uring r;
	ursa_mutex_t m;
	ring_and_mutex(&r, 8, &m, true);
	struct ursa_op op = URSA_OP_INIT;
	cr_assert_eq(ursa_mutex_lock_async(&r, &m, &op), 0);
	cr_assert_eq(ursa_mutex_lock_async(&r, &m, &op), -EINVAL);
	struct timespec ts = t_deadline(CLOCK_MONOTONIC, 1000);
	cr_assert_eq(ursa_op_set_deadline(&op, CLOCK_MONOTONIC, &ts), -EINVAL);
	cr_assert_eq(ursa_mutex_unlock(&m), 0);
	struct ursa_op *done = t_reap(&r, NULL, 5000);
	cr_assert_eq(done, &op);
	cr_assert_eq(op.res, 0);
	cr_assert_eq(ursa_mutex_unlock(&m), 0);
	io_uring_queue_exit(&r);
}

Test(async, application_cqes_are_not_ursas)
{
	struct io_uring r;
	t_ring(&r, 8, 0);
	uint64_t vals[] = {0, 1, 0x00ffffffffffffffull, (uint64_t)(uintptr_t)&r, 12345};
	for (unsigned i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&r);
		io_uring_prep_nop(sqe);
		sqe->user_data = vals[i];
	}
	io_uring_submit(&r);
	for (unsigned i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		struct io_uring_cqe *cqe;
		cr_assert_eq(io_uring_wait_cqe(&r, &cqe), 0);
		struct ursa_op *done = (void *)1;
		cr_assert_eq(ursa_handle_cqe(&r, cqe, &done), 0);
		cr_assert_null(done);
		io_uring_cqe_seen(&r, cqe);
	}
	io_uring_queue_exit(&r);
}

static void *unlock_after(void *arg)
{
	ursa_mutex_t *m = *(ursa_mutex_t **)arg;
	cr_assert_eq(ursa_mutex_unlock(m), 0);
	return NULL;
}

static void lock_wait_unlock(unsigned ring_flags, unsigned mflags)
{
	t_require_uring_futex(false);
	struct io_uring r;
	t_ring(&r, 8, ring_flags);
	ursa_mutex_t m;
	cr_assert_eq(ursa_mutex_init(&m, mflags), 0);
	struct ursa_op op = URSA_OP_INIT;
	op.user_data = &m;
	cr_assert_eq(ursa_mutex_lock(&m), 0);
	cr_assert_eq(ursa_mutex_lock_async(&r, &m, &op), 0);
	/* Armed before the unlock: io_uring_enter issues the FUTEX_WAIT
	 * inline (without SQPOLL), so the unlock must wake a ring waiter. */
	cr_assert_geq(io_uring_submit(&r), 1);
	ursa_mutex_t *pm = &m;
	pthread_t t;
	t_spawn(&t, 1, unlock_after, &pm, sizeof(pm));
	struct ursa_op *done = t_reap(&r, NULL, 5000);
	t_join_all(&t, 1);
	cr_assert_eq(done, &op);
	cr_assert_eq(op.res, 0);
	cr_assert_eq(op.user_data, &m, "user_data untouched");
	cr_assert_eq(ursa_mutex_trylock(&m), -EBUSY, "the ring waiter holds it");
	cr_assert_eq(ursa_mutex_unlock(&m), 0);
	cr_assert_eq(ursa_mutex_destroy(&m), 0);
	cr_assert_eq(t_drain(&r, 20), 0, "ursa left a CQE to the application");
	io_uring_queue_exit(&r);
}

Test(async, woken_by_thread_unlock_private)
{
	lock_wait_unlock(0, 0);
}

Test(async, woken_by_thread_unlock_shared)
{
	lock_wait_unlock(0, URSA_SHARED);
}

Test(async, single_issuer_defer_taskrun_ring)
{
	lock_wait_unlock(IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN, 0);
}

Test(async, sq_full_is_ebusy_and_changes_nothing)
{
	struct io_uring r;
	ursa_mutex_t m;
	ring_and_mutex(&r, 2, &m, true);
	uint32_t before = m.__word;
	while (io_uring_get_sqe(&r))
		; /* fill the SQ ring */
	struct ursa_op op = URSA_OP_INIT;
	cr_assert_eq(ursa_mutex_lock_async(&r, &m, &op), -EBUSY);
	cr_assert_eq(m.__word, before, "the mutex word changed");
	/* Submit the nops, then it fits. */
	io_uring_submit(&r);
	t_drain(&r, 10);
	cr_assert_eq(ursa_mutex_lock_async(&r, &m, &op), 0);
	cr_assert_eq(ursa_mutex_unlock(&m), 0);
	cr_assert_eq(t_reap(&r, NULL, 5000), &op);
	cr_assert_eq(op.res, 0);
	cr_assert_eq(ursa_mutex_unlock(&m), 0);
	io_uring_queue_exit(&r);
}

Test(async, deadline_already_past)
{
	struct io_uring r;
	ursa_mutex_t m;
	ring_and_mutex(&r, 8, &m, true);
	for (int i = 0; i < 2; i++) {
		struct ursa_op op;
		struct timespec past;
		cr_assert_eq(start_with_deadline(&r, &m, &op, both_clocks[i], -5, &past), 1);
		cr_assert_eq(op.res, -ETIMEDOUT);
		cr_assert_eq(io_uring_sq_ready(&r), 0);
	}
	cr_assert_eq(ursa_mutex_unlock(&m), 0);
	/* ...and a free mutex is still taken at once despite a past deadline. */
	struct ursa_op op;
	struct timespec past;
	cr_assert_eq(start_with_deadline(&r, &m, &op, CLOCK_MONOTONIC, -5, &past), 1);
	cr_assert_eq(op.res, 0);
	cr_assert_eq(ursa_mutex_unlock(&m), 0);
	io_uring_queue_exit(&r);
}

Test(async, deadline_cleared_with_null)
{
	struct io_uring r;
	ursa_mutex_t m;
	ring_and_mutex(&r, 8, &m, true);
	struct ursa_op op = URSA_OP_INIT;
	struct timespec past = t_deadline(CLOCK_MONOTONIC, -5);
	cr_assert_eq(ursa_op_set_deadline(&op, CLOCK_MONOTONIC, &past), 0);
	cr_assert_eq(ursa_op_set_deadline(&op, CLOCK_MONOTONIC, NULL), 0);
	/* No deadline now: the op waits (no linked timeout queued)... */
	cr_assert_eq(ursa_mutex_lock_async(&r, &m, &op), 0);
	cr_assert_eq(io_uring_sq_ready(&r), 1, "a linked timeout was queued");
	/* ...and in flight its deadline cannot be changed. */
	cr_assert_eq(ursa_op_set_deadline(&op, CLOCK_MONOTONIC, NULL), -EINVAL);
	cr_assert_eq(ursa_op_set_deadline(&op, CLOCK_MONOTONIC, &past), -EINVAL);
	cr_assert_eq(t_drain(&r, 20), 0, "the op finished while the mutex was held");
	cr_assert_eq(ursa_mutex_unlock(&m), 0);
	cr_assert_eq(t_reap(&r, NULL, 5000), &op);
	cr_assert_eq(op.res, 0);
	cr_assert_eq(ursa_mutex_unlock(&m), 0);
	cr_assert_eq(ursa_mutex_destroy(&m), 0);
	io_uring_queue_exit(&r);
}

/* ursa_op_set_deadline is no cancellation point: its first call in a
 * process reads /proc/self/timens_offsets (kernel/timens.c), and fopen and
 * its reads are cancellation points in libc; a thread with a cancel
 * pending must not be cancelled inside it. In a fork child, whose first
 * call reads the file again. */
static atomic_int set_ret;

static void *set_deadline_cancel_pending(void *p)
{
	(void)p;
	struct ursa_op op = URSA_OP_INIT;
	struct timespec ts = t_deadline(CLOCK_MONOTONIC, 1000);
	pthread_cancel(pthread_self());
	atomic_store(&set_ret, ursa_op_set_deadline(&op, CLOCK_MONOTONIC, &ts));
	pthread_testcancel();
	return NULL;
}

Test(async, set_deadline_is_no_cancellation_point)
{
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		atomic_store(&set_ret, 1);
		pthread_t t;
		void *ret;
		if (pthread_create(&t, NULL, set_deadline_cancel_pending, NULL) != 0 ||
		    pthread_join(t, &ret) != 0 || ret != PTHREAD_CANCELED)
			_exit(2);
		_exit(atomic_load(&set_ret) == 0 ? 0 : 1);
	}
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st), "status %#x", st);
	cr_assert_neq(WEXITSTATUS(st), 1, "cancelled inside ursa_op_set_deadline");
	cr_assert_eq(WEXITSTATUS(st), 0);
}

Test(async, deadline_times_out_once_both_clocks)
{
	struct io_uring r;
	ursa_mutex_t m;
	ring_and_mutex(&r, 8, &m, true);
	for (int i = 0; i < 2; i++) {
		struct ursa_op op;
		struct timespec dl, now;
		cr_assert_eq(start_with_deadline(&r, &m, &op, both_clocks[i], 30, &dl), 0);
		cr_assert_eq(t_reap(&r, NULL, 5000), &op);
		cr_assert_eq(op.res, -ETIMEDOUT);
		clock_gettime(both_clocks[i], &now);
		cr_assert(now.tv_sec > dl.tv_sec || (now.tv_sec == dl.tv_sec && now.tv_nsec >= dl.tv_nsec));
	}
	cr_assert_eq(t_drain(&r, 20), 0, "the timeout's own CQE reached the application");
	cr_assert_eq(ursa_mutex_unlock(&m), 0);
	cr_assert_eq(ursa_mutex_destroy(&m), 0);
	io_uring_queue_exit(&r);
}

Test(async, cancel_finishes_once)
{
	struct io_uring r;
	ursa_mutex_t m;
	ring_and_mutex(&r, 8, &m, true);
	struct ursa_op op = URSA_OP_INIT;
	cr_assert_eq(ursa_mutex_lock_async(&r, &m, &op), 0);
	io_uring_submit(&r);
	cr_assert_eq(ursa_op_cancel(&r, &op), 0);
	cr_assert_eq(ursa_op_cancel(&r, &op), 0, "a second cancel is harmless");
	cr_assert_eq(t_reap(&r, NULL, 5000), &op);
	cr_assert_eq(op.res, -ECANCELED);
	cr_assert_eq(ursa_op_cancel(&r, &op), 0, "cancel after finish is harmless");
	cr_assert_eq(t_drain(&r, 20), 0);
	/* The mutex is still ours and consistent. */
	cr_assert_eq(ursa_mutex_unlock(&m), 0);
	cr_assert_eq(ursa_mutex_trylock(&m), 0);
	cr_assert_eq(ursa_mutex_unlock(&m), 0);
	io_uring_queue_exit(&r);
}

/* ---- races on purpose --------------------------------------------------- */

/* The unlocker: for each round, waits for the go signal, spins a varying
 * few hundred nanoseconds, then unlocks — racing the main thread's cancel
 * or the op's deadline. In odd cancel rounds the main thread cancels once
 * the unlocker has seen the signal (then both race; when the two share a
 * CPU the wake mostly wins), in even ones at once (the cancel mostly
 * wins): both outcomes occur however the threads are scheduled. */
struct racer {
	ursa_mutex_t m;
	atomic_int go;
	atomic_int unlocking;
	atomic_int done;
	int iters;
};

static void *unlocker(void *arg)
{
	struct racer *x = *(struct racer **)arg;
	for (int i = 1; i <= x->iters; i++) {
		while (atomic_load(&x->go) != i)
			sched_yield();
		atomic_store(&x->unlocking, i);
		for (volatile int k = 0; k < (i * 37) % 8000; k++)
			;
		cr_assert_eq(ursa_mutex_unlock(&x->m), 0);
		atomic_store(&x->done, i);
	}
	return NULL;
}

static void race(int mode /* 0 cancel, 1 timeout */, int iters, int *n_acquired, int *n_stopped)
{
	t_require_uring_futex(false);
	struct io_uring r;
	t_ring(&r, 64, 0);
	static struct racer x;
	memset(&x, 0, sizeof(x));
	x.iters = iters;
	struct racer *px = &x;
	pthread_t t;
	t_spawn(&t, 1, unlocker, &px, sizeof(px));
	int acquired = 0, stopped = 0;
	for (int i = 1; i <= iters; i++) {
		struct ursa_op op = URSA_OP_INIT;
		cr_assert_eq(ursa_mutex_lock(&x.m), 0);
		if (mode == 1) {
			/* 0..40 us from now */
			struct timespec dl = t_after_us(CLOCK_MONOTONIC, i % 40);
			cr_assert_eq(ursa_op_set_deadline(&op, CLOCK_MONOTONIC, &dl), 0);
		}
		int rc = ursa_mutex_lock_async(&r, &x.m, &op);
		cr_assert(rc == 0 || (mode == 1 && rc == 1 && op.res == -ETIMEDOUT), "start: %d", rc);
		io_uring_submit(&r);
		atomic_store(&x.go, i);
		if (rc == 0) {
			while (mode == 0 && (i & 1) && atomic_load(&x.unlocking) != i)
				sched_yield();
			if (mode == 0)
				cr_assert_eq(ursa_op_cancel(&r, &op), 0);
			struct ursa_op *done = t_reap(&r, NULL, 10000);
			cr_assert_eq(done, &op, "op never finished (iteration %d)", i);
		}
		while (atomic_load(&x.done) != i)
			sched_yield();
		if (op.res == 0) {
			acquired++;
			cr_assert_eq(ursa_mutex_unlock(&x.m), 0, "op said acquired but lock not held");
		} else {
			cr_assert(op.res == (mode ? -ETIMEDOUT : -ECANCELED), "res %d", op.res);
			stopped++;
		}
		cr_assert_eq(ursa_mutex_trylock(&x.m), 0, "mutex left locked (iteration %d)", i);
		cr_assert_eq(ursa_mutex_unlock(&x.m), 0);
	}
	/* Drain: no op finishes a second time, nothing leaks to the app. */
	cr_assert_eq(t_drain(&r, 30), 0);
	t_join_all(&t, 1);
	cr_assert_eq(acquired + stopped, iters);
	*n_acquired += acquired;
	*n_stopped += stopped;
	cr_assert_eq(ursa_mutex_destroy(&x.m), 0);
	io_uring_queue_exit(&r);
}

/* Rounds of the race, bounded, until each outcome (the wake won, the
 * cancel or deadline won) was seen RACE_MIN times: a change that makes one
 * side unreachable fails here instead of passing untested. */
#define RACE_MIN 20
#define RACE_ROUNDS 10

static void race_both(int mode)
{
	int acquired = 0, stopped = 0, round;
	for (round = 0; round < RACE_ROUNDS && (acquired < RACE_MIN || stopped < RACE_MIN); round++)
		race(mode, 1000, &acquired, &stopped);
	cr_log_info("%s race: %d acquired, %d %s in %d rounds", mode ? "timeout" : "cancel",
		    acquired, stopped, mode ? "timed out" : "cancelled", round);
	cr_assert(acquired >= RACE_MIN && stopped >= RACE_MIN,
		  "%s race not exercised: %d acquired, %d %s in %d rounds of 1000",
		  mode ? "timeout" : "cancel", acquired, stopped, mode ? "timed out" : "cancelled",
		  round);
}

Test(async, race_cancel_vs_wake)
{
	race_both(0);
}

Test(async, race_timeout_vs_wake)
{
	race_both(1);
}

/* A ring torn down with waits in flight; the futex memory is then reused
 * for a new mutex that works normally (no stale wait matches it). */
Test(async, ring_torn_down_with_ops_in_flight)
{
	t_require_uring_futex(false);
	ursa_mutex_t *ms = calloc(16, sizeof(*ms));
	for (int round = 0; round < 50; round++) {
		struct io_uring r;
		t_ring(&r, 32, 0);
		struct ursa_op ops[16];
		memset(ops, 0, sizeof(ops));
		for (int i = 0; i < 16; i++) {
			cr_assert_eq(ursa_mutex_lock(&ms[i]), 0);
			cr_assert_eq(ursa_mutex_lock_async(&r, &ms[i], &ops[i]), 0);
		}
		io_uring_submit(&r);
		io_uring_queue_exit(&r);
		for (int i = 0; i < 16; i++) {
			cr_assert_eq(ursa_mutex_init(&ms[i], 0), 0);
			cr_assert_eq(ursa_mutex_lock(&ms[i]), 0);
			cr_assert_eq(ursa_mutex_unlock(&ms[i]), 0);
		}
	}
	free(ms);
}

/* A CQ ring far smaller than the number of waits: completions overflow
 * into the kernel's backlog, and every op still finishes exactly once. */
Test(async, tiny_cq_ring_overflow)
{
	t_require_uring_futex(false);
	struct io_uring r;
	struct io_uring_params p;
	memset(&p, 0, sizeof(p));
	p.flags = IORING_SETUP_CQSIZE;
	p.cq_entries = 4; /* the kernel's minimum: as many as SQ entries */
	cr_assert_eq(io_uring_queue_init_params(4, &r, &p), 0);
	enum { N = 48 };
	static ursa_mutex_t ms[N];
	static struct ursa_op ops[N];
	memset(ms, 0, sizeof(ms));
	memset(ops, 0, sizeof(ops));
	for (int i = 0; i < N; i++) {
		cr_assert_eq(ursa_mutex_lock(&ms[i]), 0);
		int rc;
		while ((rc = ursa_mutex_lock_async(&r, &ms[i], &ops[i])) == -EBUSY)
			io_uring_submit(&r);
		cr_assert_eq(rc, 0);
	}
	io_uring_submit(&r);
	for (int i = 0; i < N; i++)
		cr_assert_eq(ursa_mutex_unlock(&ms[i]), 0);
	int seen[N] = {0};
	for (int i = 0; i < N; i++) {
		struct ursa_op *done = t_reap(&r, NULL, 5000);
		cr_assert_not_null(done);
		seen[done - ops]++;
		cr_assert_eq(done->res, 0);
	}
	for (int i = 0; i < N; i++) {
		cr_assert_eq(seen[i], 1);
		cr_assert_eq(ursa_mutex_unlock(&ms[i]), 0);
	}
	io_uring_queue_exit(&r);
}

/* ---- a ring waiter does not starve ---------------------------------------
 *
 * Two threads hammer the mutex with tiny critical sections; a ring waiter's
 * wake reaches it late (CQE, then the loop's turn), so without a bound it
 * can lose the race again and again. ursa bounds it: after a few lost
 * races the waiter asks for a hand-off (lib/mutex.c). Count the wait CQEs
 * each acquisition needed: every one was a lost race or a spurious wake.
 */

Test(async, ring_waiter_bounded_against_spinning_threads)
{
	t_require_uring_futex(false);
	static ursa_mutex_t m;
	static struct t_hogs h;
	cr_assert_eq(ursa_mutex_init(&m, 0), 0);
	t_hogs_start(&h, &m, 2, 100);
	struct io_uring r;
	t_ring(&r, 8, 0);
	int max_cqes = 0, in_flight = 0, i;
	long total_cqes = 0;
	while (atomic_load(&h.rounds) < 10000)
		sched_yield(); /* both hogs are running */
	/* Until the ring waiter really waited (went in flight) 50 times, or a
	 * bound: the starvation check below means something only if it did. */
	for (i = 0; i < t_iters(5000000) && in_flight < 50; i++) {
		struct ursa_op op = URSA_OP_INIT;
		int rc = ursa_mutex_lock_async(&r, &m, &op);
		cr_assert(rc == 0 || rc == 1);
		int cqes = 0;
		while (rc == 0) {
			io_uring_submit(&r);
			struct io_uring_cqe *cqe;
			cr_assert_eq(io_uring_wait_cqe(&r, &cqe), 0);
			struct ursa_op *done = NULL;
			cr_assert_eq(ursa_handle_cqe(&r, cqe, &done), 1);
			if ((cqe->user_data >> 56) == 0xA5)
				cqes++;
			io_uring_cqe_seen(&r, cqe);
			if (done)
				break;
		}
		in_flight += rc == 0;
		cr_assert_eq(op.res, 0);
		cr_assert_eq(ursa_mutex_unlock(&m), 0);
		total_cqes += cqes;
		if (cqes > max_cqes)
			max_cqes = cqes;
	}
	t_hogs_stop(&h);
	io_uring_queue_exit(&r);
	cr_log_info("ring waiter: %d of %d waited; wait CQEs per acquisition: max %d, total %ld\n",
		    in_flight, i, max_cqes, total_cqes);
	/* Hand-off after 2 losses to the oldest sleeper; two hogs can be ahead
	 * of the ring waiter in the futex queue at most a few times over. */
	cr_assert_leq(max_cqes, 32, "ring waiter starved: %d lost races in a row", max_cqes);
	cr_assert_geq(in_flight, 10, "contention not reached: the ring waiter waited %d times in %d",
		      in_flight, i);
}
