/* SPDX-License-Identifier: MIT */
/*
 * tests/fault/no_uring.c — io_uring blocked, as container runtimes do it.
 *
 * Docker's and podman's default seccomp profiles (and Android, ChromeOS,
 * gVisor) refuse io_uring_setup/enter/register, with ENOSYS or EPERM. Each
 * test forks a child, installs such a filter there (raw BPF through
 * prctl(PR_SET_SECCOMP), no libseccomp) before ursa has asked the kernel
 * anything, and checks, under an alarm so that nothing can hang:
 *   - ursa_probe reports no ring (uring, uring_futex, uring_futexv,
 *     uring_waitid all false) with the filter's errno;
 *   - every async starter answers -EOPNOTSUPP and changes nothing;
 *   - a waitq wake given a ring falls back to system calls and still wakes;
 *   - the blocking API passes a quick contended check (mutual exclusion,
 *     units conserved, waiters released) on every primitive.
 */
#include "tests/helpers.h"

#include <criterion/parameterized.h>
#include <errno.h>
#include <liburing.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

TestSuite(fault_no_uring, .timeout = 60);

#if defined(__x86_64__)
#define NATIVE_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define NATIVE_ARCH AUDIT_ARCH_AARCH64
#endif

/* io_uring_setup, io_uring_enter, io_uring_register: 425, 426, 427 on every
 * architecture (the unified syscall table). */
#define NR_IO_URING_SETUP 425
#define NR_IO_URING_REGISTER 427

/* Make the io_uring system calls fail with err; everything else passes. */
static int block_io_uring(int err)
{
#ifdef NATIVE_ARCH
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NATIVE_ARCH, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, NR_IO_URING_SETUP, 0, 2),
		BPF_JUMP(BPF_JMP | BPF_JGT | BPF_K, NR_IO_URING_REGISTER, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ((unsigned)err & SECCOMP_RET_DATA)),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {(unsigned short)(sizeof(f) / sizeof(f[0])), f};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return -errno;
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
		return -errno;
	return 0;
#else
	(void)err;
	return -ENOTSUP;
#endif
}

/* The child's checks report by exit status: 0 ok, else the failing line. */
#define CHILD_CHECK(cond)                                                       \
	do {                                                                    \
		if (!(cond)) {                                                  \
			fprintf(stderr, "no_uring child: line %d: %s\n", __LINE__, #cond); \
			_exit(__LINE__ & 0xff ? __LINE__ & 0xff : 1);           \
		}                                                               \
	} while (0)

/* ---- blocking workloads for the child --------------------------------- */

struct work {
	ursa_mutex_t m;
	ursa_rwlock_t l;
	ursa_cond_t c;
	ursa_sem_t s;
	ursa_event_t e;
	atomic_int inside;
	long counter;
	int flag; /* cond predicate, under m */
	atomic_int bad;
	ursa_waitq_t *q;
	atomic_int q_ready; /* the waitq waiter prepared slot 0 */
	int q_res;	    /* what its wait returned */
};

#define ITERS 20000

static void *mutex_worker(void *arg)
{
	struct work *w = arg;
	for (int i = 0; i < ITERS; i++) {
		if (ursa_mutex_lock(&w->m) != 0)
			atomic_store(&w->bad, 1);
		if (atomic_fetch_add(&w->inside, 1) != 0)
			atomic_store(&w->bad, 2);
		w->counter++;
		atomic_fetch_sub(&w->inside, 1);
		ursa_mutex_unlock(&w->m);
	}
	return NULL;
}

static void *rw_worker(void *arg)
{
	struct work *w = arg;
	for (int i = 0; i < ITERS / 4; i++) {
		if (i & 1) {
			ursa_rwlock_wrlock(&w->l);
			if (atomic_fetch_add(&w->inside, 1) != 0)
				atomic_store(&w->bad, 3);
			atomic_fetch_sub(&w->inside, 1);
			ursa_rwlock_wrunlock(&w->l);
		} else {
			ursa_rwlock_rdlock(&w->l);
			if (atomic_load(&w->inside) != 0)
				atomic_store(&w->bad, 4);
			ursa_rwlock_rdunlock(&w->l);
		}
	}
	return NULL;
}

static void *sem_waiter(void *arg)
{
	struct work *w = arg;
	for (int i = 0; i < ITERS / 4; i++)
		if (ursa_sem_wait(&w->s) != 0)
			atomic_store(&w->bad, 5);
	return NULL;
}

static void *cond_waiter(void *arg)
{
	struct work *w = arg;
	ursa_mutex_lock(&w->m);
	while (!w->flag)
		if (ursa_cond_wait(&w->c, &w->m) != 0)
			atomic_store(&w->bad, 6);
	ursa_mutex_unlock(&w->m);
	return NULL;
}

static void *event_waiter(void *arg)
{
	struct work *w = arg;
	if (ursa_event_wait(&w->e) != 0)
		atomic_store(&w->bad, 7);
	return NULL;
}

static void *waitq_waiter(void *arg)
{
	struct work *w = arg;
	if (ursa_waitq_prepare(w->q, 0, 1) != 0) {
		w->q_res = -1000;
		return NULL;
	}
	atomic_store(&w->q_ready, 1);
	w->q_res = ursa_waitq_wait(w->q, 0, CLOCK_MONOTONIC, NULL);
	return NULL;
}

static void child_main(int err)
{
	alarm(30); /* nothing may hang: SIGALRM kills the child */
	int rc = block_io_uring(err);
	CHILD_CHECK(rc == 0);

	/* The filter is in force: liburing itself cannot make a ring. */
	struct io_uring ring;
	CHILD_CHECK(io_uring_queue_init(4, &ring, 0) == -err);

	struct ursa_features f;
	CHILD_CHECK(ursa_probe(&f) == 0);
	CHILD_CHECK(!f.uring && !f.uring_futex && !f.uring_futexv && !f.uring_waitid);

	/* Async starters: -EOPNOTSUPP, nothing changed. An application could
	 * not have made a ring; hand them a zeroed one, as a program that
	 * ignored io_uring_queue_init's error would. */
	struct io_uring fake;
	memset(&fake, 0, sizeof(fake));
	static struct work w;
	CHILD_CHECK(ursa_mutex_init(&w.m, 0) == 0);
	CHILD_CHECK(ursa_rwlock_init(&w.l, 0) == 0);
	CHILD_CHECK(ursa_cond_init(&w.c, 0) == 0);
	CHILD_CHECK(ursa_sem_init(&w.s, 0, 0) == 0);
	CHILD_CHECK(ursa_event_init(&w.e, 0) == 0);
	size_t qsz = ursa_waitq_size(2);
	ursa_waitq_t *q = aligned_alloc(8, (qsz + 7) & ~(size_t)7);
	CHILD_CHECK(q && ursa_waitq_init(q, 2, 0) == 0);
	struct ursa_op op;
	memset(&op, 0, sizeof(op));
	CHILD_CHECK(ursa_mutex_lock_async(&fake, &w.m, &op) == -EOPNOTSUPP);
	CHILD_CHECK(ursa_mutex_trylock(&w.m) == 0); /* still free: nothing taken */
	CHILD_CHECK(ursa_cond_wait_async(&fake, &w.c, &w.m, &op) == -EOPNOTSUPP);
	CHILD_CHECK(ursa_mutex_unlock(&w.m) == 0); /* still held by us */
	CHILD_CHECK(ursa_rwlock_rdlock_async(&fake, &w.l, &op) == -EOPNOTSUPP);
	CHILD_CHECK(ursa_rwlock_wrlock_async(&fake, &w.l, &op) == -EOPNOTSUPP);
	CHILD_CHECK(ursa_rwlock_destroy(&w.l) == 0);
	CHILD_CHECK(ursa_sem_wait_async(&fake, &w.s, &op) == -EOPNOTSUPP);
	CHILD_CHECK(ursa_sem_destroy(&w.s) == 0);
	CHILD_CHECK(ursa_event_wait_async(&fake, &w.e, &op) == -EOPNOTSUPP);
	CHILD_CHECK(ursa_event_destroy(&w.e) == 0);
	CHILD_CHECK(ursa_waitq_prepare(q, 1, 5) == 0);
	CHILD_CHECK(ursa_waitq_wait_async(&fake, q, 1, &op) == -EOPNOTSUPP);
	CHILD_CHECK(ursa_waitq_cancel(q, 1) == 0); /* still queued: the op did nothing */
	siginfo_t si;
	CHILD_CHECK(ursa_waitid_async(&fake, P_ALL, 0, &si, WEXITED, &op) == -EOPNOTSUPP);
	ursa_waitable_t any[1] = {{URSA_WAIT_SEM, &w.s}};
	CHILD_CHECK(ursa_wait_any_async(&fake, any, 1, &op) == -EOPNOTSUPP);

	/* A waitq wake given a ring wakes by system call instead. */
	w.q = q;
	w.q_res = 1;
	pthread_t t;
	CHILD_CHECK(pthread_create(&t, NULL, waitq_waiter, &w) == 0);
	while (!atomic_load(&w.q_ready))
		sched_yield();
	int woke;
	while ((woke = ursa_waitq_wake_upto(q, 1, &fake)) == 0)
		sched_yield(); /* cannot be 0 once prepared; be patient anyway */
	CHILD_CHECK(woke == 1);
	CHILD_CHECK(pthread_join(t, NULL) == 0);
	CHILD_CHECK(w.q_res == 0);

	/* Blocking API: a quick contended check of each primitive. */
	pthread_t ts[4];
	for (int i = 0; i < 4; i++)
		CHILD_CHECK(pthread_create(&ts[i], NULL, mutex_worker, &w) == 0);
	for (int i = 0; i < 4; i++)
		pthread_join(ts[i], NULL);
	CHILD_CHECK(w.counter == 4L * ITERS);
	for (int i = 0; i < 4; i++)
		CHILD_CHECK(pthread_create(&ts[i], NULL, rw_worker, &w) == 0);
	for (int i = 0; i < 4; i++)
		pthread_join(ts[i], NULL);
	for (int i = 0; i < 2; i++)
		CHILD_CHECK(pthread_create(&ts[i], NULL, sem_waiter, &w) == 0);
	for (int i = 0; i < 2 * (ITERS / 4); i++)
		CHILD_CHECK(ursa_sem_post(&w.s) == 0);
	for (int i = 0; i < 2; i++)
		pthread_join(ts[i], NULL);
	CHILD_CHECK(ursa_sem_value(&w.s) == 0);
	for (int i = 0; i < 2; i++)
		CHILD_CHECK(pthread_create(&ts[i], NULL, cond_waiter, &w) == 0);
	for (int i = 2; i < 4; i++)
		CHILD_CHECK(pthread_create(&ts[i], NULL, event_waiter, &w) == 0);
	usleep(10000); /* let them sleep: not an assertion, only coverage */
	ursa_mutex_lock(&w.m);
	w.flag = 1;
	CHILD_CHECK(ursa_cond_broadcast(&w.c) == 0);
	ursa_mutex_unlock(&w.m);
	CHILD_CHECK(ursa_event_set(&w.e) == 0);
	for (int i = 0; i < 4; i++)
		pthread_join(ts[i], NULL);
	CHILD_CHECK(atomic_load(&w.bad) == 0);
	/* wait_any uses futex_waitv, not io_uring. */
	CHILD_CHECK(ursa_sem_post(&w.s) == 0);
	int r = ursa_wait_any(any, 1, CLOCK_MONOTONIC, NULL);
	CHILD_CHECK(r == 0 || (r == -ENOSYS && !f.futex_waitv));
	free(q);
	_exit(0);
}

ParameterizedTestParameters(fault_no_uring, blocked)
{
	static int errs[] = {ENOSYS, EPERM};
	return cr_make_param_array(int, errs, 2);
}

ParameterizedTest(int *err, fault_no_uring, blocked)
{
#ifndef NATIVE_ARCH
	cr_skip_test("seccomp filter written for x86_64 and aarch64 only");
#endif
	fflush(NULL);
	pid_t pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0)
		child_main(*err);
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(!WIFSIGNALED(st), "child killed by signal %d (SIGALRM = hung)", WTERMSIG(st));
	cr_assert_eq(WEXITSTATUS(st), 0, "child check failed (status %d; see stderr)",
		     WEXITSTATUS(st));
}
