/* SPDX-License-Identifier: MIT */
/* tests/unit/probe.c — ursa_probe: every caller gets the kernel's answer,
 * also the ones that arrive while the first is still publishing it. */
#include "tests/helpers.h"

#include <errno.h>
#include <liburing.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <ursa/async.h>
#include <ursa/event.h>

TestSuite(probe, .timeout = 120);

#define NTHREADS 8
#define CALLS	 2000

static void t_sleep_us(long us)
{
	struct timespec ts = {0, us * 1000};
	nanosleep(&ts, NULL);
}

static struct ursa_features want;
static atomic_int go;
static atomic_int bad;
static atomic_int started;

static bool same(const struct ursa_features *a, const struct ursa_features *b)
{
	return a->futex2 == b->futex2 && a->futex_waitv == b->futex_waitv && a->uring == b->uring &&
	       a->uring_futex == b->uring_futex && a->uring_futexv == b->uring_futexv &&
	       a->uring_waitid == b->uring_waitid;
}

/* Each thread calls ursa_probe over and over from its start time on, so
 * some calls land while the first caller is between claiming the cache and
 * publishing it. Every other thread begins with an async starter instead,
 * whose first call asks the probe and caches "have io_uring futex ops" for
 * the process: it must not cache "no" either. */
struct caller {
	struct io_uring ring;
	long stagger_us; /* when to make the first call, after the start */
	bool starter_first;
};

static void starter(struct caller *c)
{
	ursa_event_t e;
	ursa_event_init(&e, 0);
	ursa_event_set(&e);
	struct ursa_op op = URSA_OP_INIT;
	int rc = ursa_event_wait_async(&c->ring, &e, &op);
	if ((rc != 1 || op.res != 0) && atomic_fetch_add(&bad, 1) == 0)
		fprintf(stderr, "starter: %d res %d\n", rc, op.res);
}

static void *caller(void *arg)
{
	struct caller *c = arg;
	atomic_fetch_add(&started, 1);
	while (!atomic_load(&go))
		;
	if (c->stagger_us)
		t_sleep_us(c->stagger_us);
	if (c->starter_first)
		starter(c);
	for (int i = 0; i < CALLS; i++) {
		struct ursa_features f;
		memset(&f, 0xff, sizeof(f));
		if (ursa_probe(&f) != 0 || !same(&f, &want)) {
			if (atomic_fetch_add(&bad, 1) == 0)
				fprintf(stderr, "call %d: uring %d uring_futex %d\n", i, f.uring,
					f.uring_futex);
		}
	}
	starter(c);
	return NULL;
}

/* One round in a fresh child (fresh cache): NTHREADS callers, the first
 * at once, the others stagger_us apart after it. */
static int round_child(long stagger_us)
{
	static struct caller c[NTHREADS];
	pthread_t t[NTHREADS];
	for (int i = 0; i < NTHREADS; i++) {
		if (io_uring_queue_init(4, &c[i].ring, 0) < 0)
			return 2;
		c[i].stagger_us = i * stagger_us;
		c[i].starter_first = i % 2;
	}
	for (int i = 0; i < NTHREADS; i++)
		pthread_create(&t[i], NULL, caller, &c[i]);
	while (atomic_load(&started) < NTHREADS)
		sched_yield();
	atomic_store(&go, 1);
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(t[i], NULL);
	return atomic_load(&bad) ? 1 : 0;
}

/* The reference answer (want), asked by one thread alone — in a child, so
 * this process's cache stays empty and each later child (a fork of it)
 * starts with none. Skips the test without the io_uring futex ops. */
static void reference_answer(void)
{
	struct ursa_features *ref = t_shared_alloc(sizeof(*ref));
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0)
		_exit(ursa_probe(ref) == 0 ? 0 : 1);
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	want = *ref;
	t_shared_free(ref, sizeof(*ref));
	if (!want.uring_futex)
		cr_skip_test("no io_uring futex ops on this kernel");
}

/* Run child(arg) in a fresh child (fresh cache); its exit status, asserting
 * it exited. */
static int in_child(int (*child)(long), long arg)
{
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		_exit(child(arg));
	}
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st), "child died (status %#x)", st);
	return WEXITSTATUS(st);
}

static void rounds(int n, long stagger_us)
{
	reference_answer();
	for (int r = 0; r < n; r++) {
		int st = in_child(round_child, stagger_us);
		cr_assert_eq(st, 0,
			     "round %d: a caller got a wrong probe answer or -EOPNOTSUPP (exit %d)",
			     r, st);
	}
}

/* Callers racing the first probe of a process, as several event loops
 * starting at once do. */
Test(probe, concurrent_first_calls)
{
	unsetenv("URSA_TEST_PROBE_DELAY_US");
	rounds(50, 0);
	rounds(50, 20);
}

/* The same with the publisher held between claiming and publishing
 * (URSA_TEST_PROBE_DELAY_US, read by kernel/probe.c on the first probe of a
 * process), so the callers surely arrive in that window. */
Test(probe, callers_during_publication)
{
	setenv("URSA_TEST_PROBE_DELAY_US", "3000", 1);
	rounds(10, 400);
	unsetenv("URSA_TEST_PROBE_DELAY_US");
}

Test(probe, null)
{
	cr_assert_eq(ursa_probe(NULL), -EINVAL);
}

/* A passing refusal is not cached. The first probe of a process runs with
 * no file descriptor to spare, so its ring set-up fails (-EMFILE) and it
 * answers "no ring" and the async starters -EOPNOTSUPP; with the limit
 * back, the next probe and the next start see the ring again. In a child,
 * whose cache starts empty. */
static int transient_child(long unused)
{
	(void)unused;
	struct ursa_features f;
	struct io_uring ring;
	if (io_uring_queue_init(8, &ring, 0) < 0)
		return 10;
	ursa_event_t e;
	if (ursa_event_init(&e, 0) != 0)
		return 11;
	struct rlimit old, none;
	if (getrlimit(RLIMIT_NOFILE, &old) != 0)
		return 12;
	/* Descriptors 0..highest are in use: a limit of highest + 1 leaves no
	 * free one. */
	int highest = dup(0);
	if (highest < 0)
		return 13;
	close(highest);
	none = old;
	none.rlim_cur = (rlim_t)highest;
	if (setrlimit(RLIMIT_NOFILE, &none) != 0)
		return 14;
	struct ursa_op op = URSA_OP_INIT;
	if (ursa_probe(&f) != 0 || f.uring)
		return 20; /* the refusal was not seen, or not answered "no ring" */
	if (ursa_event_wait_async(&ring, &e, &op) != -EOPNOTSUPP)
		return 21;
	if (setrlimit(RLIMIT_NOFILE, &old) != 0)
		return 15;
	if (ursa_probe(&f) != 0 || !f.uring || !same(&f, &want))
		return 30; /* the passing "no" was kept */
	if (ursa_event_wait_async(&ring, &e, &op) != 0)
		return 31; /* the starter kept the passing "no" */
	if (ursa_event_set(&e) != 0 || io_uring_submit(&ring) < 0)
		return 32;
	struct ursa_op *done = NULL;
	while (!done) {
		struct io_uring_cqe *cqe;
		if (io_uring_wait_cqe(&ring, &cqe) != 0)
			return 33;
		int r = ursa_handle_cqe(&ring, cqe, &done);
		io_uring_cqe_seen(&ring, cqe);
		if (r != 1)
			return 34;
	}
	if (done != &op || op.res != 0)
		return 35;
	io_uring_queue_exit(&ring);
	return 0;
}

Test(probe, transient_refusal_is_not_cached)
{
	unsetenv("URSA_TEST_PROBE_DELAY_US");
	reference_answer();
	int st = in_child(transient_child, 0);
	cr_assert_eq(st, 0, "step %d failed (see transient_child)", st);
}

/* A child forked while its parent's first probe was between claiming the
 * cache and publishing it (the parent's claimer is not in the child) takes
 * the claim back and caches its own answer: its next probe, with no file
 * descriptor to spare for a probe ring, still answers from the cache.
 * Before, such a child never cached: every probe set up a ring (and with
 * no descriptor left, answered "no ring"). */
static void *slow_first_probe(void *arg)
{
	struct ursa_features f;
	*(int *)arg = ursa_probe(&f);
	return NULL;
}

static int forked_during_publication_child(long unused)
{
	(void)unused;
	setenv("URSA_TEST_PROBE_DELAY_US", "300000", 1);
	int r = -1;
	pthread_t t;
	if (pthread_create(&t, NULL, slow_first_probe, &r) != 0)
		return 10;
	usleep(100000); /* the thread holds its claim for 300 ms */
	pid_t pid = fork();
	if (pid < 0)
		return 11;
	if (pid == 0) {
		unsetenv("URSA_TEST_PROBE_DELAY_US");
		struct ursa_features f;
		if (ursa_probe(&f) != 0 || !same(&f, &want))
			_exit(20);
		struct rlimit none;
		if (getrlimit(RLIMIT_NOFILE, &none) != 0)
			_exit(21);
		int highest = dup(0);
		if (highest < 0)
			_exit(22);
		close(highest);
		none.rlim_cur = (rlim_t)highest;
		if (setrlimit(RLIMIT_NOFILE, &none) != 0)
			_exit(23);
		if (ursa_probe(&f) != 0 || !same(&f, &want))
			_exit(24); /* not cached: probed again, and found no ring */
		_exit(0);
	}
	int st;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return 12;
	if (pthread_join(t, NULL) != 0 || r != 0)
		return 13;
	return WEXITSTATUS(st);
}

Test(probe, child_forked_during_publication_caches)
{
	unsetenv("URSA_TEST_PROBE_DELAY_US");
	reference_answer();
	int st = in_child(forked_during_publication_child, 0);
	cr_assert_eq(st, 0, "exit %d (24: the child's probe was not cached)", st);
}
