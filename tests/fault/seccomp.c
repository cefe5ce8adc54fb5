/* SPDX-License-Identifier: MIT */
/*
 * tests/fault/seccomp.c — system calls refused by a seccomp filter, as
 * container runtimes and sandboxes do it.
 *
 * Docker's and podman's default seccomp profiles (and Android, ChromeOS,
 * gVisor) refuse io_uring_setup/enter/register, with ENOSYS or EPERM.
 * Profiles older than the futex2 calls (futex_waitv, 5.16; futex_wait,
 * futex_wake and futex_requeue, 6.7) refuse those: podman's listed them as
 * denied, with EPERM, until Podman 6 (2026), and a runtime whose profile
 * predates a call answers EPERM or ENOSYS. Each test forks a child,
 * installs such a filter there (raw BPF through prctl(PR_SET_SECCOMP), no
 * libseccomp) and checks, under an alarm so that nothing can hang:
 *   - io_uring refused: ursa_probe reports no ring (uring, uring_futex,
 *     uring_futexv, uring_waitid all false) with the filter's errno; every
 *     async starter answers -EOPNOTSUPP and changes nothing; a waitq wake
 *     given a ring falls back to system calls and still wakes;
 *   - futex2 refused: ursa_probe reports neither futex2 nor futex_waitv
 *     (when the filter came after its first answer, once the blocking
 *     calls have met it); the blocking API sleeps and wakes through
 *     futex(2) instead, timed waits on both clocks included; wait-any
 *     says -ENOSYS; where the kernel has the io_uring futex ops (which no
 *     seccomp filter sees), a ring waiter is woken by a futex(2) wake and
 *     a thread asleep in futex(2) by a ring's FUTEX_WAKE; also when the
 *     filter comes after the library has used futex2 (a sandbox that
 *     filters itself late);
 *   - in every case the blocking API passes a quick contended check
 *     (mutual exclusion, units conserved, waiters released) on every
 *     primitive;
 *   - prctl(PR_FUTEX_HASH) refused: a private ring wait armed by a
 *     single-threaded process still finds the private futex hash
 *     installed first (futex_hash_query_refused, at the end).
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

TestSuite(fault_seccomp, .timeout = 60);

#if defined(__x86_64__)
#define NATIVE_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define NATIVE_ARCH AUDIT_ARCH_AARCH64
#endif

/* System call numbers from 424 on are the same on every architecture (the
 * unified table): io_uring_setup, io_uring_enter, io_uring_register 425-427;
 * futex_waitv 449; futex_wake, futex_wait, futex_requeue 454-456. */
struct nr_range {
	unsigned lo, hi;
};
static const struct nr_range uring_nrs[] = {{425, 427}};
static const struct nr_range futex2_nrs[] = {{449, 449}, {454, 456}};
#define NR_FUTEX_WAKE 454

#ifdef NATIVE_ARCH
/* Install the k instructions of f as this process's seccomp filter. */
static int install_filter(struct sock_filter *f, int k)
{
	struct sock_fprog prog = {(unsigned short)k, f};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return -errno;
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
		return -errno;
	return 0;
}
#endif

/* Make the system calls in the n ranges r fail with err; everything else
 * passes. */
static int block_syscalls(const struct nr_range *r, int n, int err)
{
#ifdef NATIVE_ARCH
	struct sock_filter f[5 + 3 * 4];
	int k = 0;
	if (n > 4)
		return -EINVAL;
	f[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
					      offsetof(struct seccomp_data, arch));
	f[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NATIVE_ARCH, 1, 0);
	f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	f[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
					      offsetof(struct seccomp_data, nr));
	for (int i = 0; i < n; i++) {
		/* nr < lo or nr > hi: on to the next range; else refuse. */
		f[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, r[i].lo, 0, 2);
		f[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGT | BPF_K, r[i].hi, 1, 0);
		f[k++] = (struct sock_filter)BPF_STMT(
		    BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ((unsigned)err & SECCOMP_RET_DATA));
	}
	f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	return install_filter(f, k);
#else
	(void)r;
	(void)n;
	(void)err;
	return -ENOTSUP;
#endif
}

/* The child's checks report by exit status: 0 ok, else the failing line. */
#define CHILD_CHECK(cond)                                                                          \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "seccomp child: line %d: %s\n", __LINE__, #cond);          \
			_exit(__LINE__ & 0xff ? __LINE__ & 0xff : 1);                              \
		}                                                                                  \
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

/* What a case refuses, and when. */
enum {
	NO_URING = 1,  /* io_uring_setup/enter/register */
	NO_FUTEX2 = 2, /* futex_waitv, futex_wake, futex_wait, futex_requeue */
	AFTER_USE = 4, /* filter only after the library has slept and woken */
};

struct refusal {
	int what, err;
};

static void init_work(struct work *w, ursa_waitq_t *q)
{
	memset(w, 0, sizeof(*w));
	CHILD_CHECK(ursa_mutex_init(&w->m, 0) == 0);
	CHILD_CHECK(ursa_rwlock_init(&w->l, 0) == 0);
	CHILD_CHECK(ursa_cond_init(&w->c, 0) == 0);
	CHILD_CHECK(ursa_sem_init(&w->s, 0, 0) == 0);
	CHILD_CHECK(ursa_event_init(&w->e, 0) == 0);
	CHILD_CHECK(ursa_waitq_init(q, 2, 0) == 0);
	w->q = q;
}

/* Four threads through one mutex: exclusion held, nothing lost. */
static void mutex_round(struct work *w)
{
	pthread_t ts[4];
	w->counter = 0;
	for (int i = 0; i < 4; i++)
		CHILD_CHECK(pthread_create(&ts[i], NULL, mutex_worker, w) == 0);
	for (int i = 0; i < 4; i++)
		pthread_join(ts[i], NULL);
	CHILD_CHECK(w->counter == 4L * ITERS);
	CHILD_CHECK(atomic_load(&w->bad) == 0);
}

/* A waitq waiter asleep in slot 0, woken through ring (NULL: by system
 * call): the wake counts it and its wait returns 0. */
static void waitq_round(struct work *w, struct io_uring *ring)
{
	atomic_store(&w->q_ready, 0);
	w->q_res = 1;
	pthread_t t;
	CHILD_CHECK(pthread_create(&t, NULL, waitq_waiter, w) == 0);
	while (!atomic_load(&w->q_ready))
		sched_yield();
	int woke;
	while ((woke = ursa_waitq_wake_upto(w->q, 1, ring)) == 0)
		sched_yield(); /* cannot be 0 once prepared; be patient anyway */
	CHILD_CHECK(woke == 1);
	CHILD_CHECK(pthread_join(t, NULL) == 0);
	CHILD_CHECK(w->q_res == 0);
}

/* Blocking API: a quick contended check of each primitive. wait-any (which
 * sleeps in futex_waitv) answers -ENOSYS where that call is refused or
 * missing, and takes the unit where it is not. Where the refusal came after
 * the library found the call present (a filter after first use), it meets
 * the refusal when it would sleep (ursa/wait_any.h): so first a wait-any
 * with nothing free. */
static void blocking_checks(struct work *w, bool waitv_refused)
{
	struct ursa_features f;
	CHILD_CHECK(ursa_probe(&f) == 0);
	mutex_round(w);
	waitq_round(w, NULL);
	pthread_t ts[4];
	for (int i = 0; i < 4; i++)
		CHILD_CHECK(pthread_create(&ts[i], NULL, rw_worker, w) == 0);
	for (int i = 0; i < 4; i++)
		pthread_join(ts[i], NULL);
	for (int i = 0; i < 2; i++)
		CHILD_CHECK(pthread_create(&ts[i], NULL, sem_waiter, w) == 0);
	for (int i = 0; i < 2 * (ITERS / 4); i++)
		CHILD_CHECK(ursa_sem_post(&w->s) == 0);
	for (int i = 0; i < 2; i++)
		pthread_join(ts[i], NULL);
	CHILD_CHECK(ursa_sem_value(&w->s) == 0);
	for (int i = 0; i < 2; i++)
		CHILD_CHECK(pthread_create(&ts[i], NULL, cond_waiter, w) == 0);
	for (int i = 2; i < 4; i++)
		CHILD_CHECK(pthread_create(&ts[i], NULL, event_waiter, w) == 0);
	usleep(10000); /* let them sleep: not an assertion, only coverage */
	ursa_mutex_lock(&w->m);
	w->flag = 1;
	CHILD_CHECK(ursa_cond_broadcast(&w->c) == 0);
	ursa_mutex_unlock(&w->m);
	CHILD_CHECK(ursa_event_set(&w->e) == 0);
	for (int i = 0; i < 4; i++)
		pthread_join(ts[i], NULL);
	CHILD_CHECK(atomic_load(&w->bad) == 0);
	ursa_waitable_t any[1] = {{URSA_WAIT_SEM, &w->s}};
	int r;
	if (waitv_refused) {
		/* Nothing free: it would have to sleep. The deadline only
		 * bounds a wrong sleep; -ENOSYS comes at once. */
		struct timespec dl = t_deadline(CLOCK_MONOTONIC, 5000);
		CHILD_CHECK(ursa_wait_any(any, 1, CLOCK_MONOTONIC, &dl) == -ENOSYS);
		CHILD_CHECK(ursa_sem_value(&w->s) == 0);
		CHILD_CHECK(ursa_sem_destroy(&w->s) == 0); /* no waiter left registered */
		CHILD_CHECK(ursa_sem_init(&w->s, 0, 0) == 0);
	}
	CHILD_CHECK(ursa_sem_post(&w->s) == 0);
	r = ursa_wait_any(any, 1, CLOCK_MONOTONIC, NULL);
	if (waitv_refused) {
		/* (After use too: the sleep above taught it the refusal.) */
		CHILD_CHECK(r == -ENOSYS);
		CHILD_CHECK(ursa_sem_value(&w->s) == 1); /* the unit is still there */
		CHILD_CHECK(ursa_sem_trywait(&w->s) == 0);
	} else {
		CHILD_CHECK(r == 0 || (r == -ENOSYS && !f.futex_waitv));
	}
}

struct poster {
	ursa_sem_t *s;
	long after_ms;
};

static void *post_later(void *arg)
{
	struct poster *p = arg;
	usleep((useconds_t)p->after_ms * 1000);
	ursa_sem_post(p->s);
	return NULL;
}

/* Timed sleeps on both clocks: a deadline that passes, and a post that
 * comes before the deadline. */
static void timed_checks(struct work *w)
{
	static const clockid_t clks[] = {CLOCK_MONOTONIC, CLOCK_REALTIME};
	CHILD_CHECK(ursa_mutex_lock(&w->m) == 0);
	for (int i = 0; i < 2; i++) {
		uint64_t t0 = t_now_ns();
		struct timespec dl = t_deadline(clks[i], 20);
		CHILD_CHECK(ursa_mutex_timedlock(&w->m, clks[i], &dl) == -ETIMEDOUT);
		CHILD_CHECK(t_now_ns() - t0 >= 15000000u); /* it slept, it did not fail fast */
		struct poster p = {&w->s, 10};
		pthread_t t;
		CHILD_CHECK(pthread_create(&t, NULL, post_later, &p) == 0);
		dl = t_deadline(clks[i], 10000);
		CHILD_CHECK(ursa_sem_timedwait(&w->s, clks[i], &dl) == 0);
		CHILD_CHECK(pthread_join(t, NULL) == 0);
	}
	CHILD_CHECK(ursa_mutex_unlock(&w->m) == 0);
	CHILD_CHECK(ursa_mutex_destroy(&w->m) == 0);
}

/* Reap the ring until one of ursa's ops finishes (at most 5 s). */
static struct ursa_op *child_reap(struct io_uring *r)
{
	for (int tries = 0; tries < 500; tries++) {
		io_uring_submit(r);
		struct io_uring_cqe *cqe;
		struct __kernel_timespec ts = {0, 10 * 1000000};
		int rc = io_uring_wait_cqe_timeout(r, &cqe, &ts);
		if (rc == -ETIME || rc == -EINTR)
			continue;
		CHILD_CHECK(rc == 0);
		struct ursa_op *done = NULL;
		int mine = ursa_handle_cqe(r, cqe, &done);
		CHILD_CHECK(mine == 0 || mine == 1);
		io_uring_cqe_seen(r, cqe);
		if (done)
			return done;
	}
	return NULL;
}

/* A ring lock of m, held by the caller: started, in flight. */
static void start_lock_async(struct io_uring *ring, ursa_mutex_t *m, struct ursa_op *op)
{
	CHILD_CHECK(ursa_mutex_lock(m) == 0);
	memset(op, 0, sizeof(*op));
	CHILD_CHECK(ursa_mutex_lock_async(ring, m, op) == 0);
}

/* ... then submitted, woken by the caller's unlock, holding m; and m
 * released again. */
static void finish_lock_async(struct io_uring *ring, ursa_mutex_t *m, struct ursa_op *op)
{
	CHILD_CHECK(io_uring_submit(ring) >= 0);
	CHILD_CHECK(ursa_mutex_unlock(m) == 0);
	CHILD_CHECK(child_reap(ring) == op && op->res == 0);
	CHILD_CHECK(ursa_mutex_trylock(m) == -EBUSY); /* the ring holds it */
	CHILD_CHECK(ursa_mutex_unlock(m) == 0);
}

struct sleeper {
	ursa_waitq_t *q;
	uint32_t slot;
	atomic_int tid;
	atomic_int res;
};

static void *slot_sleeper(void *arg)
{
	struct sleeper *s = arg;
	if (ursa_waitq_prepare(s->q, s->slot, 1) != 0) {
		atomic_store(&s->res, -1000);
		return NULL;
	}
	atomic_store(&s->tid, (int)syscall(SYS_gettid));
	atomic_store(&s->res, ursa_waitq_wait(s->q, s->slot, CLOCK_MONOTONIC, NULL));
	return NULL;
}

/* futex2 refused, io_uring's futex ops not: the two kinds of sleep and
 * wake still meet on the same words. */
static void ring_meets_futex1(struct work *w)
{
	struct ursa_features f;
	CHILD_CHECK(ursa_probe(&f) == 0);
	if (!f.uring_futex)
		return; /* a kernel before 6.7: nothing to meet */
	struct io_uring ring;
	CHILD_CHECK(io_uring_queue_init(16, &ring, 0) == 0); /* the probe made one */

	/* A ring waiter woken by the unlock's futex(2) wake. */
	struct ursa_op op;
	start_lock_async(&ring, &w->m, &op);
	CHILD_CHECK(io_uring_submit(&ring) >= 0);
	usleep(5000); /* let the wait arm: coverage, the check holds either way */
	finish_lock_async(&ring, &w->m, &op);

	/* Threads asleep in futex(2) woken by the ring's FUTEX_WAKEs (a wake
	 * of two slots goes through the ring; of one, by system call). */
	struct sleeper s[2] = {{w->q, 0, 0, 1}, {w->q, 1, 0, 1}};
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		CHILD_CHECK(pthread_create(&t[i], NULL, slot_sleeper, &s[i]) == 0);
	for (int i = 0; i < 2; i++) {
		/* Prepared, then asleep (its wait has not returned). */
		while (!atomic_load(&s[i].tid) || !t_is_sleeping(atomic_load(&s[i].tid))) {
			CHILD_CHECK(atomic_load(&s[i].res) == 1);
			sched_yield();
		}
	}
	CHILD_CHECK(ursa_waitq_wake(w->q, 2, &ring) == 2);
	for (int i = 0; i < 2; i++) {
		CHILD_CHECK(pthread_join(t[i], NULL) == 0);
		CHILD_CHECK(atomic_load(&s[i].res) == 0);
	}
	io_uring_queue_exit(&ring);
}

/* io_uring refused: the probe says so, the async starters refuse and
 * change nothing, a waitq wake given a ring wakes by system call. */
static void uring_refused_checks(struct work *w, int err)
{
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
	ursa_waitq_t *q = w->q;
	struct ursa_op op;
	memset(&op, 0, sizeof(op));
	CHILD_CHECK(ursa_mutex_lock_async(&fake, &w->m, &op) == -EOPNOTSUPP);
	CHILD_CHECK(ursa_mutex_trylock(&w->m) == 0); /* still free: nothing taken */
	CHILD_CHECK(ursa_cond_wait_async(&fake, &w->c, &w->m, &op) == -EOPNOTSUPP);
	CHILD_CHECK(ursa_mutex_unlock(&w->m) == 0); /* still held by us */
	CHILD_CHECK(ursa_rwlock_rdlock_async(&fake, &w->l, &op) == -EOPNOTSUPP);
	CHILD_CHECK(ursa_rwlock_wrlock_async(&fake, &w->l, &op) == -EOPNOTSUPP);
	CHILD_CHECK(ursa_rwlock_destroy(&w->l) == 0);
	CHILD_CHECK(ursa_sem_wait_async(&fake, &w->s, &op) == -EOPNOTSUPP);
	CHILD_CHECK(ursa_sem_destroy(&w->s) == 0);
	CHILD_CHECK(ursa_event_wait_async(&fake, &w->e, &op) == -EOPNOTSUPP);
	CHILD_CHECK(ursa_event_destroy(&w->e) == 0);
	CHILD_CHECK(ursa_waitq_prepare(q, 1, 5) == 0);
	CHILD_CHECK(ursa_waitq_wait_async(&fake, q, 1, &op) == -EOPNOTSUPP);
	CHILD_CHECK(ursa_waitq_cancel(q, 1) == 0); /* still queued: the op did nothing */
	siginfo_t si;
	CHILD_CHECK(ursa_waitid_async(&fake, P_ALL, 0, &si, WEXITED, &op) == -EOPNOTSUPP);
	ursa_waitable_t any[1] = {{URSA_WAIT_SEM, &w->s}};
	CHILD_CHECK(ursa_wait_any_async(&fake, any, 1, &op) == -EOPNOTSUPP);

	/* A waitq wake given a ring wakes by system call instead. */
	waitq_round(w, &fake);
}

static void child_main(const void *arg)
{
	struct refusal c = *(const struct refusal *)arg;
	alarm(30); /* nothing may hang: SIGALRM kills the child */
	static struct work w;
	size_t qsz = ursa_waitq_size(2);
	ursa_waitq_t *q = aligned_alloc(8, (qsz + 7) & ~(size_t)7);
	CHILD_CHECK(q);
	init_work(&w, q);
	if (c.what & AFTER_USE) {
		/* futex2 used (slept and woken through), and the probe's
		 * "present" cached, before the filter comes. */
		mutex_round(&w);
		struct ursa_features f;
		CHILD_CHECK(ursa_probe(&f) == 0);
	}

	struct nr_range nrs[4];
	int n = 0;
	if (c.what & NO_URING)
		nrs[n++] = uring_nrs[0];
	if (c.what & NO_FUTEX2) {
		nrs[n++] = futex2_nrs[0];
		nrs[n++] = futex2_nrs[1];
	}
	CHILD_CHECK(block_syscalls(nrs, n, c.err) == 0);

	if (c.what & NO_URING)
		uring_refused_checks(&w, c.err);
	if (c.what & NO_FUTEX2) {
		/* The filter is in force. */
		uint32_t word = 0;
		long r = syscall(NR_FUTEX_WAKE, &word, ~0ul, 0, 2u /* FUTEX2_SIZE_U32 */);
		CHILD_CHECK(r == -1 && errno == c.err);
		if (!(c.what & AFTER_USE)) {
			/* (After use the probe's answer was cached before the
			 * filter: what the kernel offered then.) */
			struct ursa_features f;
			CHILD_CHECK(ursa_probe(&f) == 0);
			CHILD_CHECK(!f.futex2 && !f.futex_waitv);
		}
	}
	init_work(&w, q);
	blocking_checks(&w, c.what & NO_FUTEX2);
	if (c.what & NO_FUTEX2) {
		/* The blocking calls and the wait-any met the filter: the probe
		 * says so now, whenever the filter came. */
		struct ursa_features f;
		CHILD_CHECK(ursa_probe(&f) == 0);
		CHILD_CHECK(!f.futex2 && !f.futex_waitv);
		timed_checks(&w);
		if (!(c.what & NO_URING))
			ring_meets_futex1(&w);
	}
	free(q);
	_exit(0);
}

/* Run fn(arg) in a fork child (fn leaves by _exit) and return its exit
 * status; a child killed by a signal (SIGALRM: it hung) fails the test. */
static int run_child(void (*fn)(const void *), const void *arg)
{
	fflush(NULL);
	pid_t pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0)
		fn(arg);
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(!WIFSIGNALED(st), "child killed by signal %d (SIGALRM = hung)", WTERMSIG(st));
	return WEXITSTATUS(st);
}

/* A hashless_child_ring child's status: 0 passes, 77 skips. */
static void expect_hash_child(int st)
{
	if (st == 77)
		cr_skip_test("this kernel gives a new process no private futex hash to install");
	cr_assert_eq(st, 0, "child check failed (status %d; see stderr)", st);
}

ParameterizedTestParameters(fault_seccomp, refused)
{
	static struct refusal cases[] = {
	    {NO_URING, ENOSYS},
	    {NO_URING, EPERM},
	    {NO_FUTEX2, ENOSYS},
	    {NO_FUTEX2, EPERM},
	    {NO_FUTEX2 | AFTER_USE, ENOSYS},
	    {NO_FUTEX2 | AFTER_USE, EPERM},
	    {NO_URING | NO_FUTEX2, EPERM},
	};
	return cr_make_param_array(struct refusal, cases, sizeof(cases) / sizeof(cases[0]));
}

ParameterizedTest(struct refusal *c, fault_seccomp, refused)
{
#ifndef NATIVE_ARCH
	cr_skip_test("seccomp filter written for x86_64 and aarch64 only");
#endif
	int st = run_child(child_main, c);
	cr_assert_eq(st, 0, "child check failed (status %d; see stderr)", st);
}

/* ---- the private futex hash query refused --------------------------------
 *
 * Before it arms a process-private ring wait, ursa asks the kernel whether
 * the process has its private futex hash yet (prctl PR_FUTEX_HASH,
 * GET_SLOTS; kernel/futex.c says why) and, if not, creates and joins a
 * thread to install it. A filter that refuses that prctl must not read as
 * "a kernel without private hashes": the hash must still be there before
 * the wait is armed. The filter refuses only ursa's form of the query
 * (arg3 0); the test asks with arg3 1, which the kernel ignores. */
#define T_PR_FUTEX_HASH	       78
#define T_FUTEX_HASH_GET_SLOTS 2

static int refuse_hash_query(int err)
{
#ifdef NATIVE_ARCH
	struct sock_filter f[] = {
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NATIVE_ARCH, 1, 0),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_prctl, 0, 5),
	    /* the low words of the arguments (little-endian targets) */
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, T_PR_FUTEX_HASH, 0, 3),
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[2])),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 1),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ((unsigned)err & SECCOMP_RET_DATA)),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	return install_filter(f, (int)(sizeof(f) / sizeof(f[0])));
#else
	(void)err;
	return -ENOTSUP;
#endif
}

static int hash_slots(void)
{
	return prctl(T_PR_FUTEX_HASH, T_FUTEX_HASH_GET_SLOTS, 1, 0, 0);
}

/* A fork child's start when it tests the private futex hash: a ring, and
 * exit 77 unless the process has no hash yet (a kernel without private
 * hashes, or one made already). */
static void hashless_child_ring(struct io_uring *ring)
{
	alarm(30);
	CHILD_CHECK(io_uring_queue_init(4, ring, 0) == 0);
	if (hash_slots() != 0)
		_exit(77);
}

/* In a fork child, single-threaded: 0 the hash was installed before the
 * wait was armed, 77 this kernel cannot tell, else the failing line. */
static void hash_child(const void *arg)
{
	int err = *(const int *)arg;
	struct io_uring ring;
	hashless_child_ring(&ring);
	CHILD_CHECK(refuse_hash_query(err) == 0);
	CHILD_CHECK(prctl(T_PR_FUTEX_HASH, T_FUTEX_HASH_GET_SLOTS, 0, 0, 0) == -1 &&
		    errno == err); /* the filter is in force */
	CHILD_CHECK(hash_slots() == 0);
	static ursa_mutex_t m;
	CHILD_CHECK(ursa_mutex_init(&m, 0) == 0);
	struct ursa_op op;
	start_lock_async(&ring, &m, &op);
	CHILD_CHECK(hash_slots() > 0); /* installed before the wait went in */
	finish_lock_async(&ring, &m, &op);
	_exit(0);
}

ParameterizedTestParameters(fault_seccomp, futex_hash_query_refused)
{
	static int errs[] = {EPERM, ENOSYS};
	return cr_make_param_array(int, errs, 2);
}

ParameterizedTest(int *err, fault_seccomp, futex_hash_query_refused)
{
#ifndef NATIVE_ARCH
	cr_skip_test("seccomp filter written for x86_64 and aarch64 only");
#endif
	t_require_uring_futex(false);
	expect_hash_child(run_child(hash_child, err));
}

/* ---- no thread for the private futex hash ---------------------------------
 *
 * On 6.17+ the first private ring wait of a single-threaded process starts
 * and joins a thread (kernel/futex.c). Where no thread can be started (a
 * filter refuses clone and clone3 here, with EAGAIN or EPERM; RLIMIT_NPROC,
 * memory), the starter says so, -EAGAIN, and changes nothing: a waitq slot
 * stays queued (its wake still counts it), a mutex keeps no registration,
 * a condvar wait leaves its mutex held. Waits on process-shared objects
 * need no hash and still work there. */
#define NR_CLONE3 435

static void nothread_child(const void *arg)
{
	int err = *(const int *)arg;
	struct io_uring ring;
	hashless_child_ring(&ring);
	struct nr_range nrs[2] = {{__NR_clone, __NR_clone}, {NR_CLONE3, NR_CLONE3}};
	CHILD_CHECK(block_syscalls(nrs, 2, err) == 0);
	size_t qsz = ursa_waitq_size(2);
	ursa_waitq_t *q = aligned_alloc(8, (qsz + 7) & ~(size_t)7);
	CHILD_CHECK(q && ursa_waitq_init(q, 2, 0) == 0);
	CHILD_CHECK(ursa_waitq_prepare(q, 0, 1) == 0);
	struct ursa_op op;
	memset(&op, 0, sizeof(op));
	int rc = ursa_waitq_wait_async(&ring, q, 0, &op);
	if (rc != -EAGAIN)
		fprintf(stderr, "seccomp child: waitq_wait_async said %d\n", rc);
	CHILD_CHECK(rc == -EAGAIN);
	CHILD_CHECK(ursa_waitq_cancel(q, 0) == 0); /* still queued: nothing changed */
	static ursa_mutex_t m;
	CHILD_CHECK(ursa_mutex_init(&m, 0) == 0);
	CHILD_CHECK(ursa_mutex_lock(&m) == 0);
	memset(&op, 0, sizeof(op));
	CHILD_CHECK(ursa_mutex_lock_async(&ring, &m, &op) == -EAGAIN);
	static ursa_cond_t c;
	CHILD_CHECK(ursa_cond_init(&c, 0) == 0);
	memset(&op, 0, sizeof(op));
	CHILD_CHECK(ursa_cond_wait_async(&ring, &c, &m, &op) == -EAGAIN);
	CHILD_CHECK(ursa_mutex_trylock(&m) == -EBUSY); /* m still held */
	CHILD_CHECK(ursa_mutex_unlock(&m) == 0);
	CHILD_CHECK(ursa_mutex_destroy(&m) == 0); /* no registration left */
	CHILD_CHECK(ursa_cond_destroy(&c) == 0);
	CHILD_CHECK(io_uring_sq_ready(&ring) == 0); /* nothing queued */

	/* Process-shared objects (a multi-process server's shared memory)
	 * need no private hash, so no thread: their waits go in and end. */
	static ursa_mutex_t sm;
	CHILD_CHECK(ursa_mutex_init(&sm, URSA_SHARED) == 0);
	start_lock_async(&ring, &sm, &op);
	finish_lock_async(&ring, &sm, &op);
	static ursa_sem_t ss;
	CHILD_CHECK(ursa_sem_init(&ss, 0, URSA_SHARED) == 0);
	ursa_waitable_t any[1] = {{URSA_WAIT_SEM, &ss}};
	memset(&op, 0, sizeof(op));
	CHILD_CHECK(ursa_wait_any_async(&ring, any, 1, &op) == 0);
	CHILD_CHECK(io_uring_submit(&ring) >= 0);
	CHILD_CHECK(ursa_sem_post(&ss) == 0);
	CHILD_CHECK(child_reap(&ring) == &op && op.res == 0);
	CHILD_CHECK(hash_slots() == 0); /* and no thread was made for one */
	free(q);
	_exit(0);
}

ParameterizedTestParameters(fault_seccomp, no_thread_for_futex_hash)
{
	static int errs[] = {EAGAIN, EPERM};
	return cr_make_param_array(int, errs, 2);
}

ParameterizedTest(int *err, fault_seccomp, no_thread_for_futex_hash)
{
#ifndef NATIVE_ARCH
	cr_skip_test("seccomp filter written for x86_64 and aarch64 only");
#endif
	t_require_uring_futex(false);
	expect_hash_child(run_child(nothread_child, err));
}

/* ---- io_uring_register refused ---------------------------------------------
 *
 * A filter that allows io_uring_setup and io_uring_enter but refuses
 * io_uring_register (or a sandbox without IORING_REGISTER_PROBE) leaves
 * ursa_probe no opcode list: it tries the operations on a ring instead, and
 * must find what the kernel has (the parent's unfiltered probe says), and
 * the async API must work. */
#define NR_IO_URING_REGISTER 427

static void register_child(const void *arg)
{
	int err = *(const int *)arg;
	alarm(30);
	struct nr_range nrs[1] = {{NR_IO_URING_REGISTER, NR_IO_URING_REGISTER}};
	CHILD_CHECK(block_syscalls(nrs, 1, err) == 0);
	struct ursa_features f;
	CHILD_CHECK(ursa_probe(&f) == 0);
	/* Exit status: the ring bits, for the parent to compare. */
	int bits = f.uring | f.uring_futex << 1 | f.uring_futexv << 2 | f.uring_waitid << 3;
	if (f.uring_futex) {
		/* End to end: a ring waiter woken by an unlock. */
		struct io_uring ring;
		CHILD_CHECK(io_uring_queue_init(8, &ring, 0) == 0);
		static ursa_mutex_t m;
		CHILD_CHECK(ursa_mutex_init(&m, 0) == 0);
		struct ursa_op op;
		start_lock_async(&ring, &m, &op);
		finish_lock_async(&ring, &m, &op);
	}
	_exit(100 + bits);
}

ParameterizedTestParameters(fault_seccomp, uring_register_refused)
{
	static int errs[] = {EPERM, ENOSYS};
	return cr_make_param_array(int, errs, 2);
}

ParameterizedTest(int *err, fault_seccomp, uring_register_refused)
{
#ifndef NATIVE_ARCH
	cr_skip_test("seccomp filter written for x86_64 and aarch64 only");
#endif
	/* The child before this process asks anything: no cached answer. */
	int st = run_child(register_child, err);
	cr_assert_geq(st, 100, "child check failed (status %d; see stderr)", st);
	struct ursa_features f;
	cr_assert_eq(ursa_probe(&f), 0);
	int bits = f.uring | f.uring_futex << 1 | f.uring_futexv << 2 | f.uring_waitid << 3;
	cr_assert_eq(st - 100, bits,
		     "without IORING_REGISTER_PROBE the probe found %#x, the kernel has %#x",
		     st - 100, bits);
}
