/* SPDX-License-Identifier: MIT */
/* tests/unit/event.c — ursa_event_t: manual and auto-reset, timeouts, sharing. */
#include "tests/helpers.h"

#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

TestSuite(event, .timeout = 60);

static pid_t gettid_(void)
{
	return (pid_t)syscall(SYS_gettid);
}

Test(event, sizes)
{
	cr_assert_eq(sizeof(ursa_event_t), 4);
	cr_assert_eq(_Alignof(ursa_event_t), 4);
}

Test(event, zero_is_manual_unset)
{
	ursa_event_t e = URSA_EVENT_INIT;
	cr_assert_eq(ursa_event_trywait(&e), -EBUSY);
	cr_assert_eq(ursa_event_set(&e), 0);
	cr_assert_eq(ursa_event_trywait(&e), 0);
	cr_assert_eq(ursa_event_trywait(&e), 0, "manual-reset stays set");
	cr_assert_eq(ursa_event_wait(&e), 0);
	cr_assert_eq(ursa_event_set(&e), 0, "set on a set event");
	cr_assert_eq(ursa_event_reset(&e), 0);
	cr_assert_eq(ursa_event_trywait(&e), -EBUSY);
	cr_assert_eq(ursa_event_reset(&e), 0, "reset on an unset event");
	cr_assert_eq(ursa_event_trywait(&e), -EBUSY);
	cr_assert_eq(ursa_event_destroy(&e), 0);
}

Test(event, auto_reset_consumes)
{
	ursa_event_t e;
	cr_assert_eq(ursa_event_init(&e, URSA_EVENT_AUTO_RESET), 0);
	cr_assert_eq(ursa_event_trywait(&e), -EBUSY);
	cr_assert_eq(ursa_event_set(&e), 0);
	cr_assert_eq(ursa_event_set(&e), 0, "sets do not accumulate");
	cr_assert_eq(ursa_event_trywait(&e), 0);
	cr_assert_eq(ursa_event_trywait(&e), -EBUSY, "consumed by the first");
	cr_assert_eq(ursa_event_set(&e), 0);
	cr_assert_eq(ursa_event_wait(&e), 0);
	cr_assert_eq(ursa_event_trywait(&e), -EBUSY);
	cr_assert_eq(ursa_event_set(&e), 0);
	cr_assert_eq(ursa_event_reset(&e), 0);
	cr_assert_eq(ursa_event_trywait(&e), -EBUSY, "reset clears a pending set");
	cr_assert_eq(ursa_event_destroy(&e), 0);
}

Test(event, bad_input)
{
	ursa_event_t e;
	struct timespec ts = {0, 0};
	cr_assert_eq(ursa_event_init(NULL, 0), -EINVAL);
	cr_assert_eq(ursa_event_init(&e, 0x4), -EINVAL);
	cr_assert_eq(ursa_event_init(&e, 0x100 | URSA_SHARED), -EINVAL);
	cr_assert_eq(ursa_event_init(&e, URSA_SHARED | URSA_EVENT_AUTO_RESET), 0);
	cr_assert_eq(ursa_event_set(NULL), -EINVAL);
	cr_assert_eq(ursa_event_reset(NULL), -EINVAL);
	cr_assert_eq(ursa_event_wait(NULL), -EINVAL);
	cr_assert_eq(ursa_event_trywait(NULL), -EINVAL);
	cr_assert_eq(ursa_event_timedwait(NULL, CLOCK_MONOTONIC, NULL), -EINVAL);
	cr_assert_eq(ursa_event_destroy(NULL), -EINVAL);
	cr_assert_eq(ursa_event_timedwait(&e, CLOCK_PROCESS_CPUTIME_ID, &ts), -EINVAL);
	cr_assert_eq(ursa_event_timedwait(&e, CLOCK_BOOTTIME, NULL), -EINVAL);
	ts.tv_nsec = 1000000000L;
	cr_assert_eq(ursa_event_timedwait(&e, CLOCK_MONOTONIC, &ts), -EINVAL);
	ts.tv_nsec = -1;
	cr_assert_eq(ursa_event_timedwait(&e, CLOCK_REALTIME, &ts), -EINVAL);
	/* A bad call on a set auto-reset event does not consume it. */
	cr_assert_eq(ursa_event_set(&e), 0);
	cr_assert_eq(ursa_event_timedwait(&e, CLOCK_MONOTONIC, &ts), -EINVAL);
	cr_assert_eq(ursa_event_trywait(&e), 0);
	cr_assert_eq(ursa_event_destroy(&e), 0);
}

static void timeouts(unsigned flags)
{
	ursa_event_t e;
	cr_assert_eq(ursa_event_init(&e, flags), 0);
	clockid_t clks[] = {CLOCK_MONOTONIC, CLOCK_REALTIME};
	for (int i = 0; i < 2; i++) {
		struct timespec past = t_deadline(clks[i], -10);
		long sw = t_nvcsw();
		int r = ursa_event_timedwait(&e, clks[i], &past);
		sw = t_nvcsw() - sw;
		cr_assert_eq(r, -ETIMEDOUT);
		cr_assert_eq(sw, 0, "must not sleep: %ld voluntary context switches", sw);
		cr_assert_eq(ursa_event_set(&e), 0);
		cr_assert_eq(ursa_event_timedwait(&e, clks[i], &past), 0, "set: taken");
		cr_assert_eq(ursa_event_reset(&e), 0);

		struct timespec dl = t_deadline(clks[i], 30);
		cr_assert_eq(ursa_event_timedwait(&e, clks[i], &dl), -ETIMEDOUT);
		struct timespec now;
		clock_gettime(clks[i], &now);
		cr_assert(now.tv_sec > dl.tv_sec ||
				  (now.tv_sec == dl.tv_sec && now.tv_nsec >= dl.tv_nsec),
			  "returned before the deadline");
		cr_assert_eq(ursa_event_destroy(&e), 0, "a timed-out wait leaves no waiter");
	}
}

Test(event, timeouts_manual)
{
	timeouts(0);
}

Test(event, timeouts_auto_shared_flag)
{
	timeouts(URSA_EVENT_AUTO_RESET | URSA_SHARED);
}

/* ---- blocked waiters ------------------------------------------------- */

#define NW 4

struct blk {
	ursa_event_t e;
	int timed;
	struct t_waiter w[NW];
	struct blk_arg {
		struct blk *b;
		int i;
	} args[NW];
};

static int blk_wait(void *arg)
{
	struct blk_arg *a = arg;
	struct blk *b = a->b;
	if (b->timed && (a->i & 1)) {
		struct timespec dl = t_deadline(CLOCK_MONOTONIC, 30000);
		return ursa_event_timedwait(&b->e, CLOCK_MONOTONIC, &dl);
	}
	return ursa_event_wait(&b->e);
}

/* Start NW waiters on b->e and return once all of them sleep. */
static void blk_start(struct blk *b, int timed)
{
	for (int i = 0; i < NW; i++)
		b->args[i] = (struct blk_arg){b, i};
	b->timed = timed;
	t_waiters_start(b->w, NW, blk_wait, b->args, sizeof(b->args[0]));
}

Test(event, manual_set_releases_all_and_stays_set)
{
	static struct blk b;
	cr_assert_eq(ursa_event_init(&b.e, 0), 0);
	blk_start(&b, 1);
	cr_assert_eq(ursa_event_destroy(&b.e), -EBUSY, "waiters sleep on it");
	cr_assert_eq(ursa_event_set(&b.e), 0);
	t_waiters_join_ok(b.w, NW);
	cr_assert_eq(ursa_event_trywait(&b.e), 0, "still set");
	cr_assert_eq(ursa_event_wait(&b.e), 0);
	cr_assert_eq(ursa_event_destroy(&b.e), 0);
}

static void set_then_reset(unsigned flags)
{
	/* Each wait in progress when set ran returns, even though reset
	 * follows at once: the waiters were asleep, so they see SET clear
	 * again when they run — only the generation tells them. */
	static struct blk b;
	cr_assert_eq(ursa_event_init(&b.e, flags), 0);
	for (int round = 0; round < 20; round++) {
		blk_start(&b, round & 1);
		cr_assert_eq(ursa_event_set(&b.e), 0);
		cr_assert_eq(ursa_event_reset(&b.e), 0);
		t_waiters_join_ok(b.w, NW);
		cr_assert_eq(ursa_event_trywait(&b.e), -EBUSY);
	}
	/* A wait that begins after the reset is not released by that set. */
	struct timespec dl = t_deadline(CLOCK_MONOTONIC, 20);
	cr_assert_eq(ursa_event_timedwait(&b.e, CLOCK_MONOTONIC, &dl), -ETIMEDOUT);
	cr_assert_eq(ursa_event_destroy(&b.e), 0);
}

Test(event, manual_set_then_reset_releases_sleepers)
{
	set_then_reset(0);
}

Test(event, manual_set_then_reset_releases_sleepers_shared_flag)
{
	set_then_reset(URSA_SHARED);
}

Test(event, manual_destroy_after_timeout_is_not_busy)
{
	/* A waiter that timed out leaves a stale WAITERS mark; destroy must
	 * not report it as a waiter, and the event still works. */
	ursa_event_t e = URSA_EVENT_INIT;
	struct timespec dl = t_deadline(CLOCK_MONOTONIC, 5);
	cr_assert_eq(ursa_event_timedwait(&e, CLOCK_MONOTONIC, &dl), -ETIMEDOUT);
	cr_assert_eq(ursa_event_destroy(&e), 0);
	cr_assert_eq(ursa_event_set(&e), 0);
	cr_assert_eq(ursa_event_wait(&e), 0);
}

Test(event, auto_set_releases_one_sleeper_each)
{
	static struct blk b;
	cr_assert_eq(ursa_event_init(&b.e, URSA_EVENT_AUTO_RESET), 0);
	blk_start(&b, 1);
	cr_assert_eq(ursa_event_destroy(&b.e), -EBUSY, "waiters registered");
	for (int i = 1; i <= NW; i++) {
		cr_assert_eq(ursa_event_set(&b.e), 0);
		while (t_waiters_done(b.w, NW) < i)
			sched_yield();
		/* Give a wrongly released second waiter time to show up. */
		for (int k = 0; k < 100; k++)
			sched_yield();
		cr_assert_eq(t_waiters_done(b.w, NW), i, "one set released more than one waiter");
	}
	t_waiters_join_ok(b.w, NW);
	cr_assert_eq(ursa_event_trywait(&b.e), -EBUSY, "every set consumed");
	cr_assert_eq(ursa_event_destroy(&b.e), 0);
}

/* ---- auto-reset: releases == sets under threads ---------------------- */

struct ar {
	ursa_event_t e;
	long per_waiter;
	atomic_long released;
};

static void *ar_waiter(void *arg)
{
	struct ar *a = *(struct ar **)arg;
	for (long i = 0; i < a->per_waiter; i++) {
		int r;
		switch (i % 3) {
		case 0:
			r = ursa_event_wait(&a->e);
			break;
		case 1:
			/* Short deadlines time out often: abandon races
			 * with sets and must pass a consumed wake on. */
			do {
				struct timespec dl = t_deadline(CLOCK_MONOTONIC, i & 1);
				r = ursa_event_timedwait(&a->e, CLOCK_MONOTONIC, &dl);
			} while (r == -ETIMEDOUT);
			break;
		default:
			while ((r = ursa_event_trywait(&a->e)) == -EBUSY)
				sched_yield();
			break;
		}
		cr_assert_eq(r, 0);
		atomic_fetch_add(&a->released, 1);
	}
	return NULL;
}

static void run_ar(unsigned flags, int nwaiters, long per_waiter)
{
	static struct ar a;
	memset(&a, 0, sizeof(a));
	cr_assert_eq(ursa_event_init(&a.e, URSA_EVENT_AUTO_RESET | flags), 0);
	a.per_waiter = per_waiter;
	struct ar *pa[8];
	pthread_t t[8];
	for (int i = 0; i < 8; i++)
		pa[i] = &a;
	t_spawn(t, nwaiters, ar_waiter, pa, sizeof(pa[0]));
	long total = nwaiters * per_waiter;
	/* One set at a time, the next only after the previous was consumed,
	 * so every set is effective: each must release exactly one wait. */
	for (long sets = 1; sets <= total; sets++) {
		cr_assert_eq(ursa_event_set(&a.e), 0);
		long r;
		while ((r = atomic_load(&a.released)) < sets)
			sched_yield();
		cr_assert_eq(r, sets, "set %ld released %ld waits", sets, r);
	}
	t_join_all(t, nwaiters);
	cr_assert_eq(atomic_load(&a.released), total);
	cr_assert_eq(ursa_event_trywait(&a.e), -EBUSY, "no set left over");
	cr_assert_eq(ursa_event_destroy(&a.e), 0);
}

Test(event, auto_releases_equal_sets_threads)
{
	run_ar(0, 4, 1500);
}

Test(event, auto_releases_equal_sets_threads_shared_flag)
{
	run_ar(URSA_SHARED, 3, 2000);
}

/* Several setters racing, sets collapsing: no waiter may be stranded. */
struct arc {
	ursa_event_t e;
	atomic_int waiters_left;
	atomic_long released;
};

static void *arc_waiter(void *arg)
{
	struct arc *a = *(struct arc **)arg;
	for (int i = 0; i < 5000; i++) {
		cr_assert_eq(ursa_event_wait(&a->e), 0);
		atomic_fetch_add(&a->released, 1);
	}
	atomic_fetch_sub(&a->waiters_left, 1);
	return NULL;
}

static void *arc_setter(void *arg)
{
	struct arc *a = *(struct arc **)arg;
	long sets = 0;
	while (atomic_load(&a->waiters_left) > 0) {
		cr_assert_eq(ursa_event_set(&a->e), 0);
		if ((++sets & 15) == 0)
			sched_yield();
	}
	return NULL;
}

Test(event, auto_racing_setters_strand_nobody)
{
	static struct arc a;
	memset(&a, 0, sizeof(a));
	cr_assert_eq(ursa_event_init(&a.e, URSA_EVENT_AUTO_RESET), 0);
	atomic_store(&a.waiters_left, 3);
	struct arc *pa[5] = {&a, &a, &a, &a, &a};
	pthread_t t[5];
	t_spawn(t, 3, arc_waiter, pa, sizeof(pa[0]));
	t_spawn(t + 3, 2, arc_setter, pa, sizeof(pa[0]));
	t_join_all(t, 5);
	cr_assert_eq(atomic_load(&a.released), 3L * 5000);
	ursa_event_trywait(&a.e); /* at most one set may be left over */
	cr_assert_eq(ursa_event_trywait(&a.e), -EBUSY);
	cr_assert_eq(ursa_event_destroy(&a.e), 0);
}

/* ---- manual-reset under threads: set/reset cycles never strand ------- */

struct mc {
	ursa_event_t go;
	ursa_sem_t ack[3]; /* one per waiter: nobody can run a round ahead */
	atomic_int arrived;
	int rounds;
};

struct mc_arg {
	struct mc *m;
	int i;
};

static void *mc_waiter(void *arg)
{
	struct mc_arg *a = arg;
	struct mc *m = a->m;
	for (int r = 0; r < m->rounds; r++) {
		cr_assert_eq(ursa_event_wait(&m->go), 0);
		atomic_fetch_add(&m->arrived, 1);
		/* Hold here until go is reset, or we would pass it twice. */
		cr_assert_eq(ursa_sem_wait(&m->ack[a->i]), 0);
	}
	return NULL;
}

Test(event, manual_rounds_threads)
{
	static struct mc m;
	memset(&m, 0, sizeof(m));
	m.rounds = 3000;
	struct mc_arg args[3] = {{&m, 0}, {&m, 1}, {&m, 2}};
	pthread_t t[3];
	t_spawn(t, 3, mc_waiter, args, sizeof(args[0]));
	for (int r = 1; r <= m.rounds; r++) {
		cr_assert_eq(ursa_event_set(&m.go), 0);
		while (atomic_load(&m.arrived) < 3 * r)
			sched_yield();
		cr_assert_eq(atomic_load(&m.arrived), 3 * r);
		cr_assert_eq(ursa_event_reset(&m.go), 0);
		for (int i = 0; i < 3; i++)
			cr_assert_eq(ursa_sem_post(&m.ack[i]), 0);
	}
	t_join_all(t, 3);
	cr_assert_eq(atomic_load(&m.arrived), 3 * m.rounds);
	cr_assert_eq(ursa_event_destroy(&m.go), 0);
}

/* ---- processes: URSA_SHARED across fork() ---------------------------- */

struct pev {
	ursa_event_t go;    /* manual */
	ursa_event_t token; /* auto */
	long released;
	int inside;
	int violations;
};

#define PEV_ITERS 3000

static bool pev_child(int idx, void *arg)
{
	t_die_with_parent();
	struct pev *p = arg;
	if (ursa_event_wait(&p->go) != 0)
		return false;
	/* The auto-reset event as a binary lock across processes: exactly one
	 * holder at a time, each set consumed by one waiter. */
	for (int i = 0; i < PEV_ITERS; i++) {
		int r;
		if (i & 1) {
			r = ursa_event_wait(&p->token);
		} else {
			struct timespec dl = t_deadline(CLOCK_REALTIME, 1);
			while ((r = ursa_event_timedwait(&p->token, CLOCK_REALTIME, &dl)) ==
			       -ETIMEDOUT)
				dl = t_deadline(CLOCK_REALTIME, 1);
		}
		if (r != 0)
			return false;
		if (__atomic_fetch_add(&p->inside, 1, __ATOMIC_RELAXED) != 0)
			__atomic_fetch_add(&p->violations, 1, __ATOMIC_RELAXED);
		p->released++;
		__atomic_fetch_sub(&p->inside, 1, __ATOMIC_RELAXED);
		if (ursa_event_set(&p->token) != 0)
			return false;
	}
	return true;
}

Test(event, processes_shared)
{
	struct pev *p = t_shared_alloc(sizeof(*p));
	cr_assert_eq(ursa_event_init(&p->go, URSA_SHARED), 0);
	cr_assert_eq(ursa_event_init(&p->token, URSA_SHARED | URSA_EVENT_AUTO_RESET), 0);
	cr_assert_eq(ursa_event_set(&p->token), 0); /* the token starts free */
	/* Children block on go; t_fork_all waits for them, so go is set by a
	 * process of its own (early or late, both must work). */
	pid_t setter = fork();
	cr_assert(setter >= 0);
	if (setter == 0) {
		t_die_with_parent();
		_exit(ursa_event_set(&p->go) == 0 ? 0 : 1);
	}
	cr_assert(t_fork_all(4, pev_child, p));
	int st;
	cr_assert_eq(waitpid(setter, &st, 0), setter);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	cr_assert_eq(p->violations, 0);
	cr_assert_eq(p->released, 4L * PEV_ITERS);
	cr_assert_eq(ursa_event_trywait(&p->token), 0, "the token is back");
	cr_assert_eq(ursa_event_trywait(&p->go), 0, "go stays set");
	cr_assert_eq(ursa_event_destroy(&p->go), 0);
	cr_assert_eq(ursa_event_destroy(&p->token), 0);
	t_shared_free(p, sizeof(*p));
}

/* ---------------------------------------------- destroy with a ring waiter */

#include <liburing.h>
#include <ursa/async.h>

/* A manual-reset event waited on by a ring op is busy for the op's whole
 * life: queued (SQE not submitted), submitted, and woken with its CQE not
 * yet handled — the CQE still points at the op and the op at the event.
 * Only once ursa_handle_cqe has finished it may the event be destroyed. */
static void ring_wait_keeps_busy(unsigned flags)
{
	t_require_uring_futex(false);
	struct io_uring ring;
	cr_assert_eq(io_uring_queue_init(8, &ring, 0), 0);
	ursa_event_t e;
	cr_assert_eq(ursa_event_init(&e, flags), 0);
	struct ursa_op op = URSA_OP_INIT;
	cr_assert_eq(ursa_event_wait_async(&ring, &e, &op), 0);
	cr_assert_eq(ursa_event_destroy(&e), -EBUSY, "queued, not submitted");
	cr_assert_geq(io_uring_submit(&ring), 1);
	cr_assert_eq(ursa_event_destroy(&e), -EBUSY, "submitted");
	t_sleep_ms(20); /* asleep in the kernel by now, most often */
	cr_assert_eq(ursa_event_destroy(&e), -EBUSY, "submitted, asleep");
	cr_assert_eq(ursa_event_set(&e), 0);
	struct io_uring_cqe *cqe;
	struct ursa_op *done = NULL;
	for (;;) {
		cr_assert_eq(io_uring_wait_cqe(&ring, &cqe), 0);
		cr_assert_eq(ursa_event_destroy(&e), -EBUSY, "CQE not yet handled");
		cr_assert_eq(ursa_handle_cqe(&ring, cqe, &done), 1);
		io_uring_cqe_seen(&ring, cqe);
		if (done)
			break;
		cr_assert_geq(io_uring_submit(&ring), 0);
	}
	cr_assert_eq(done, &op);
	cr_assert_eq(op.res, 0);
	cr_assert_eq(ursa_event_destroy(&e), 0);
	io_uring_queue_exit(&ring);
}

Test(event, destroy_busy_while_a_ring_op_waits_manual)
{
	ring_wait_keeps_busy(0);
}

Test(event, destroy_busy_while_a_ring_op_waits_auto)
{
	ring_wait_keeps_busy(URSA_EVENT_AUTO_RESET);
}

/* A blocked thread counts too, from its first sleep until it returns. */
struct mw {
	ursa_event_t e;
	atomic_int tid;
};

static void *manual_waiter(void *p)
{
	struct mw *m = p;
	atomic_store(&m->tid, (int)gettid_());
	return (void *)(intptr_t)ursa_event_wait(&m->e);
}

Test(event, destroy_busy_while_a_thread_waits_manual)
{
	struct mw m = {URSA_EVENT_INIT, 0};
	pthread_t t;
	cr_assert_eq(pthread_create(&t, NULL, manual_waiter, &m), 0);
	while (!atomic_load(&m.tid))
		sched_yield();
	t_wait_sleeping(atomic_load(&m.tid));
	for (int i = 0; i < 3; i++)
		cr_assert_eq(ursa_event_destroy(&m.e), -EBUSY);
	cr_assert_eq(ursa_event_set(&m.e), 0);
	void *r;
	cr_assert_eq(pthread_join(t, &r), 0);
	cr_assert_eq((intptr_t)r, 0);
	cr_assert_eq(ursa_event_destroy(&m.e), 0);
}
