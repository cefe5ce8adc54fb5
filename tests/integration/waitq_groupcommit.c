/* SPDX-License-Identifier: MIT */
/*
 * tests/integration/waitq_groupcommit.c — the wait queue as a group commit
 * (threads and processes, syscall and ring wakes), and one queue in a memfd
 * mapped at different addresses in two processes.
 *
 * Group commit: 32 waiters each pick a commit LSN near the flushed LSN
 * (mostly beyond it), prepare with it as key, re-check the flushed LSN, then wait (or
 * cancel when it is already flushed). A flusher advances the flushed LSN in
 * random steps and calls ursa_waitq_wake_upto(flushed). The flusher does
 * not advance again until every waiter its wake counted has checked in, so
 * a woken waiter reads exactly the LSN its wake was made for:
 *   no early wake: a woken waiter's key <= that LSN;
 *   no lost wake:  every waiter finishes (waits have no deadline; a lost
 *                  wake hangs the test, which the suite timeout fails);
 *   counts match:  sum of wake_upto returns == waits that returned 0 +
 *                  cancels that returned 1 (a wake took the slot first).
 */
#define _GNU_SOURCE /* memfd_create */
#include "tests/helpers.h"

#include <errno.h>
#include <liburing.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

TestSuite(waitq_groupcommit, .timeout = 60);

/* A forked waiter must not outlive a test that failed or timed out (it
 * would sleep forever on a queue nobody wakes). */
static pid_t fork_waiter(void)
{
	pid_t pid = fork();
	if (pid == 0)
		t_die_with_parent();
	return pid;
}

#define GC_WAITERS 32
#define GC_ROUNDS  300
#define GC_WINDOW  27 /* a commit LSN is -3..+23 from the flushed one */

struct gc {
	_Atomic uint64_t flushed;
	atomic_long acks;     /* woken waiters that checked their key */
	atomic_int done;      /* waiters finished */
	atomic_long waits0;   /* waits that returned 0 */
	atomic_long cancels1; /* cancels that returned 1 */
	atomic_long cancels0; /* cancels that returned 0 (saw the LSN first) */
	atomic_long early;    /* woken with key > flushed: must stay 0 */
	atomic_long errors;
	long wakes;  /* sum of wake_upto returns (flusher only) */
	long rounds; /* flusher iterations */
	ursa_waitq_t *q;
};

static unsigned rnd(unsigned *s)
{
	*s = *s * 1103515245u + 12345u;
	return *s >> 8;
}

/* One waiter's life; runs in a thread or a forked process. */
static bool gc_waiter(int id, void *arg)
{
	struct gc *g = arg;
	unsigned seed = 1000u + (unsigned)id * 7u;
	for (int r = 0; r < GC_ROUNDS; r++) {
		/* Mostly a future LSN; now and then one already flushed (the
		 * commit record went out with an earlier flush). */
		uint64_t key = atomic_load(&g->flushed) - 3 + rnd(&seed) % GC_WINDOW;
		if (ursa_waitq_prepare(g->q, (uint32_t)id, key) != 0) {
			atomic_fetch_add(&g->errors, 1);
			break;
		}
		if (rnd(&seed) % 4 == 0)
			sched_yield(); /* widen the prepare -> re-check window */
		int res;
		if (atomic_load(&g->flushed) >= key) {
			/* Already durable: withdraw. A wake may have beaten us. */
			res = ursa_waitq_cancel(g->q, (uint32_t)id);
			if (res == 0) {
				atomic_fetch_add(&g->cancels0, 1);
				continue;
			}
			if (res != 1) {
				atomic_fetch_add(&g->errors, 1);
				break;
			}
			atomic_fetch_add(&g->cancels1, 1);
		} else {
			res = ursa_waitq_wait(g->q, (uint32_t)id, CLOCK_MONOTONIC, NULL);
			if (res != 0) {
				atomic_fetch_add(&g->errors, 1);
				break;
			}
			atomic_fetch_add(&g->waits0, 1);
		}
		/* Counted by a wake: the flusher is holding the LSN it woke us
		 * for until we check in. */
		if (atomic_load(&g->flushed) < key)
			atomic_fetch_add(&g->early, 1);
		atomic_fetch_add(&g->acks, 1);
	}
	atomic_fetch_add(&g->done, 1);
	return atomic_load(&g->errors) == 0;
}

struct gc_thread_arg {
	struct gc *g;
	int id;
};

static void *gc_waiter_thread(void *arg)
{
	struct gc_thread_arg *a = arg;
	gc_waiter(a->id, a->g);
	return NULL;
}

static void gc_flusher(struct gc *g, struct io_uring *ring)
{
	unsigned seed = 4242u;
	while (atomic_load(&g->done) < GC_WAITERS) {
		atomic_fetch_add(&g->flushed, 1 + rnd(&seed) % 6);
		int n = ursa_waitq_wake_upto(g->q, atomic_load(&g->flushed), ring);
		cr_assert_geq(n, 0);
		g->wakes += n;
		g->rounds++;
		/* Hold the LSN until everyone this wake counted has checked it. */
		while (atomic_load(&g->acks) < g->wakes && !atomic_load(&g->errors))
			sched_yield();
		cr_assert_eq(atomic_load(&g->errors), 0);
		if (n == 0)
			sched_yield(); /* let the waiters prepare */
	}
	cr_assert_eq(atomic_load(&g->acks), g->wakes);
}

static void run_groupcommit(unsigned qflags, int nprocs, int with_ring)
{
	struct io_uring r, *ring = NULL;
	if (with_ring) {
		t_require_uring_futex(false);
		cr_assert_eq(io_uring_queue_init(16, &r, 0), 0);
		ring = &r;
	}
	size_t qsz = ursa_waitq_size(GC_WAITERS);
	size_t len = 256 + qsz;
	struct gc *g = t_shared_alloc(len);
	g->q = (ursa_waitq_t *)((char *)g + 256);
	cr_assert_eq(ursa_waitq_init(g->q, GC_WAITERS, qflags), 0);
	atomic_store(&g->flushed, 100);

	/* Processes first, while this process has a single thread. */
	pid_t pids[GC_WAITERS];
	for (int i = 0; i < nprocs; i++) {
		pids[i] = fork_waiter();
		cr_assert_geq(pids[i], 0, "fork");
		if (pids[i] == 0)
			_exit(gc_waiter(i, g) ? 0 : 1);
	}
	struct gc_thread_arg args[GC_WAITERS];
	pthread_t t[GC_WAITERS];
	int nthreads = GC_WAITERS - nprocs;
	for (int i = 0; i < nthreads; i++)
		args[i] = (struct gc_thread_arg){g, nprocs + i};
	t_spawn(t, nthreads, gc_waiter_thread, args, sizeof(args[0]));

	gc_flusher(g, ring);

	t_join_all(t, nthreads);
	for (int i = 0; i < nprocs; i++) {
		int st;
		cr_assert_eq(waitpid(pids[i], &st, 0), pids[i]);
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "waiter process %d failed", i);
	}
	cr_log_info("%s%s: %ld flushes, %ld woken by wake_upto (%ld waits, %ld cancels beaten by "
		    "a wake), %ld saw the LSN first",
		    nprocs ? "threads+processes" : "threads", ring ? ", ring" : "", g->rounds,
		    g->wakes, atomic_load(&g->waits0), atomic_load(&g->cancels1),
		    atomic_load(&g->cancels0));
	cr_assert_eq(atomic_load(&g->errors), 0);
	cr_assert_eq(atomic_load(&g->early), 0, "a waiter was woken before its LSN was flushed");
	cr_assert_eq(atomic_load(&g->waits0) + atomic_load(&g->cancels1), g->wakes,
		     "wakes counted != wakeups received");
	cr_assert_eq(atomic_load(&g->waits0) + atomic_load(&g->cancels1) +
			 atomic_load(&g->cancels0),
		     (long)GC_WAITERS * GC_ROUNDS);
	cr_assert_eq(ursa_waitq_wake_upto(g->q, UINT64_MAX, ring), 0, "nothing left queued");
	if (ring) {
		struct io_uring_cqe *cqe;
		cr_assert_eq(io_uring_peek_cqe(ring, &cqe), -EAGAIN, "a wake left a CQE");
		io_uring_queue_exit(ring);
	}
	t_shared_free(g, len);
}

Test(waitq_groupcommit, threads_private_syscalls)
{
	run_groupcommit(0, 0, 0);
}

Test(waitq_groupcommit, threads_private_ring)
{
	run_groupcommit(0, 0, 1);
}

Test(waitq_groupcommit, threads_and_processes_shared_syscalls)
{
	run_groupcommit(URSA_SHARED, 8, 0);
}

Test(waitq_groupcommit, threads_and_processes_shared_ring)
{
	run_groupcommit(URSA_SHARED, 8, 1);
}

/* ---- one queue, a memfd, different addresses --------------------------- */

#define MF_ROUNDS 300

struct mf_ctl {
	atomic_int ready; /* last round the child prepared */
	atomic_int acked; /* last round the child's wait returned 0 */
};

/* Spin until *v == want; fail at once if the child died instead. */
static void mf_await(atomic_int *v, int want, pid_t pid)
{
	for (unsigned k = 0; atomic_load(v) != want; k++) {
		int st;
		if ((k & 255) == 0 && waitpid(pid, &st, WNOHANG) == pid)
			cr_assert_fail("child exited early: status %d",
				       WIFEXITED(st) ? WEXITSTATUS(st) : -1);
		sched_yield();
	}
}

static int mf_child(int fd, size_t sz, void *a, void *b, struct mf_ctl *c)
{
	/* A third mapping of the same memfd, made while a and b are still
	 * mapped here, so it cannot be at either address; then drop both. */
	void *m = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED || m == a || m == b)
		return 2;
	munmap(a, sz);
	munmap(b, sz);
	ursa_waitq_t *q = m;
	for (int r = 1; r <= MF_ROUNDS; r++) {
		if (ursa_waitq_prepare(q, 1, (uint64_t)r) != 0)
			return 3;
		atomic_store(&c->ready, r);
		if (ursa_waitq_wait(q, 1, CLOCK_MONOTONIC, NULL) != 0)
			return 4;
		atomic_store(&c->acked, r);
	}
	return 0;
}

Test(waitq_groupcommit, memfd_two_mappings_two_processes)
{
	struct ursa_features f;
	cr_assert_eq(ursa_probe(&f), 0);
	bool have_ring = f.uring && f.uring_futex;
	struct io_uring r;
	if (have_ring)
		cr_assert_eq(io_uring_queue_init(8, &r, 0), 0);

	size_t sz = ursa_waitq_size(4);
	int fd = memfd_create("ursa-waitq-test", MFD_CLOEXEC);
	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, (off_t)sz), 0);
	void *a = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	void *b = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	cr_assert(a != MAP_FAILED && b != MAP_FAILED);
	cr_assert_neq(a, b, "the two mappings must be at different addresses");
	ursa_waitq_t *qa = a, *qb = b;
	cr_assert_eq(ursa_waitq_init(qa, 4, URSA_SHARED), 0);

	/* In one process: what is queued through one mapping is seen and
	 * woken through the other. */
	cr_assert_eq(ursa_waitq_prepare(qa, 0, 5), 0);
	cr_assert_eq(ursa_waitq_prepare(qb, 0, 5), -EBUSY);
	cr_assert_eq(ursa_waitq_wake_slot(qb, 0, NULL), 1);
	cr_assert_eq(ursa_waitq_wait(qa, 0, CLOCK_MONOTONIC, NULL), 0);

	/* Across processes: the child waits through its own mapping, the
	 * parent wakes through b, with syscalls and (batches) through a ring. */
	struct mf_ctl *c = t_shared_alloc(sizeof(*c));
	pid_t pid = fork_waiter();
	cr_assert_geq(pid, 0);
	if (pid == 0)
		_exit(mf_child(fd, sz, a, b, c));
	for (int i = 1; i <= MF_ROUNDS; i++) {
		mf_await(&c->ready, i, pid);
		/* Let the child reach its sleep now and then. */
		if (i % 3 == 0)
			for (int k = 0; k < 20; k++)
				sched_yield();
		struct io_uring *ring = have_ring && (i & 1) ? &r : NULL;
		int n;
		switch (i % 3) {
		case 0:
			n = ursa_waitq_wake_slot(qb, 1, ring);
			break;
		case 1:
			n = ursa_waitq_wake(qb, 1, ring);
			break;
		default:
			/* A batch of two (so a ring wake really goes through
			 * the ring): the child's slot and one of ours, queued
			 * through the other mapping. */
			cr_assert_eq(ursa_waitq_prepare(qa, 0, (uint64_t)i), 0);
			n = ursa_waitq_wake_upto(qb, (uint64_t)i, ring) - 1;
			cr_assert_eq(ursa_waitq_cancel(qa, 0), 1, "our slot was woken too");
			break;
		}
		cr_assert_eq(n, 1, "round %d: the child's slot was queued", i);
		mf_await(&c->acked, i, pid);
	}
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st), "child crashed");
	cr_assert_eq(WEXITSTATUS(st), 0, "child failed at step %d", WEXITSTATUS(st));
	cr_assert_eq(ursa_waitq_wake(qb, UINT32_MAX, NULL), 0);
	if (have_ring) {
		struct io_uring_cqe *cqe;
		cr_assert_eq(io_uring_peek_cqe(&r, &cqe), -EAGAIN);
		io_uring_queue_exit(&r);
	}
	t_shared_free(c, sizeof(*c));
	munmap(a, sz);
	munmap(b, sz);
	close(fd);
}
