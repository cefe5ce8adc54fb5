/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE /* RUSAGE_THREAD */
#define URSA_TESTS_HELPERS_C /* the suites, not this file, carry the report hook */
#include "tests/helpers.h"

#include <dlfcn.h>

#include <errno.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

struct timespec t_deadline(clockid_t clk, long ms)
{
	struct timespec ts;
	clock_gettime(clk, &ts);
	long long ns = (long long)ts.tv_nsec + (long long)ms * 1000000LL;
	ts.tv_sec += ns / 1000000000LL;
	ns %= 1000000000LL;
	if (ns < 0) {
		ns += 1000000000LL;
		ts.tv_sec--;
	}
	ts.tv_nsec = (long)ns;
	return ts;
}

uint64_t t_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void t_sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0)
		;
}

long t_iters(long n)
{
	const char *e = getenv("URSA_TEST_SCALE");
	double f = e ? atof(e) : 1.0;
	if (!(f > 0))
		f = 1.0;
	long r = (long)((double)n * f);
	return r > 0 ? r : 1;
}

long t_nvcsw(void)
{
	struct rusage ru;
	cr_assert_eq(getrusage(RUSAGE_THREAD, &ru), 0);
	return ru.ru_nvcsw;
}

void *t_shared_alloc(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	cr_assert(p != MAP_FAILED, "mmap shared");
	return p;
}

void t_shared_free(void *p, size_t len)
{
	munmap(p, len);
}

void t_spawn(pthread_t *tids, int n, void *(*fn)(void *), void *args, size_t stride)
{
	for (int i = 0; i < n; i++)
		cr_assert_eq(pthread_create(&tids[i], NULL, fn, (char *)args + (size_t)i * stride), 0);
}

void t_join_all(pthread_t *tids, int n)
{
	for (int i = 0; i < n; i++)
		cr_assert_eq(pthread_join(tids[i], NULL), 0);
}

bool t_fork_all(int n, bool (*fn)(int i, void *arg), void *arg)
{
	pid_t pids[256];
	cr_assert(n <= 256);
	for (int i = 0; i < n; i++) {
		pids[i] = fork();
		cr_assert(pids[i] >= 0, "fork");
		if (pids[i] == 0) {
			/* A test that times out must not leave sleepers behind. */
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			_exit(fn(i, arg) ? 0 : 1);
		}
	}
	bool ok = true;
	for (int i = 0; i < n; i++) {
		int st;
		if (waitpid(pids[i], &st, 0) != pids[i] || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			ok = false;
	}
	return ok;
}

void t_require_uring_futex(bool want_waitv)
{
	struct ursa_features f;
	cr_assert_eq(ursa_probe(&f), 0);
	if (!f.uring)
		cr_skip_test("io_uring unavailable (disabled or blocked) on this kernel");
	if (!f.uring_futex)
		cr_skip_test("kernel lacks IORING_OP_FUTEX_WAIT/WAKE (needs Linux 6.7+)");
	if (want_waitv && !f.uring_futexv)
		cr_skip_test("kernel lacks IORING_OP_FUTEX_WAITV (needs Linux 6.7+)");
}

bool t_have_futex_waitv(void)
{
	struct ursa_features f;
	cr_assert_eq(ursa_probe(&f), 0);
	return f.futex_waitv;
}

void t_require_futex_waitv(void)
{
	if (!t_have_futex_waitv())
		cr_skip_test("kernel lacks futex_waitv (needs Linux 5.16+), or a seccomp filter "
			     "refuses it: ursa_wait_any answers -ENOSYS");
}

static const char *ring_setup(void)
{
	const char *e = getenv("URSA_TEST_RING_SETUP");
	return e && *e ? e : "default";
}

const char *t_ring_setup_name(void)
{
	return ring_setup();
}

unsigned t_ring_setup_flags(void)
{
	const char *s = ring_setup();
	if (strcmp(s, "sqpoll") == 0)
		return IORING_SETUP_SQPOLL;
	if (strcmp(s, "coop") == 0)
		return IORING_SETUP_COOP_TASKRUN;
	if (strcmp(s, "defer") == 0)
		return IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
	cr_assert(strcmp(s, "default") == 0,
		  "URSA_TEST_RING_SETUP=%s: not default, sqpoll, coop or defer", s);
	return 0;
}

int t_ring_init_params(unsigned entries, struct io_uring *r, struct io_uring_params *p)
{
	unsigned extra = t_ring_setup_flags();
	p->flags |= extra;
	if ((extra & IORING_SETUP_SQPOLL) && !p->sq_thread_idle)
		p->sq_thread_idle = 100; /* ms: the poller sleeps between tests' bursts */
	int rc = io_uring_queue_init_params(entries, r, p);
	if (rc == -EINVAL && extra)
		cr_skip_test("the kernel refuses ring setup %s (flags %#x)", ring_setup(), p->flags);
	return rc;
}

int t_ring_init(unsigned entries, struct io_uring *r, unsigned flags)
{
	struct io_uring_params p;
	memset(&p, 0, sizeof(p));
	p.flags = flags;
	return t_ring_init_params(entries, r, &p);
}

bool t_is_sleeping(pid_t tid)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	size_t len = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[len] = 0;
	char *p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] == 'S';
}

void t_wait_sleeping(pid_t tid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/task/%d", (int)tid);
	while (!t_is_sleeping(tid)) {
		cr_assert(access(path, F_OK) == 0, "thread %d exited before it slept", (int)tid);
		sched_yield();
	}
}

void t_pin_one_cpu(void)
{
	cpu_set_t set, one;
	cr_assert_eq(sched_getaffinity(0, sizeof(set), &set), 0);
	CPU_ZERO(&one);
	for (int c = 0; c < CPU_SETSIZE; c++) {
		if (CPU_ISSET(c, &set)) {
			CPU_SET(c, &one);
			break;
		}
	}
	cr_assert_eq(CPU_COUNT(&one), 1);
	cr_assert_eq(sched_setaffinity(0, sizeof(one), &one), 0);
}

void t_die_with_parent(void)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
}

void t_ring(struct io_uring *r, unsigned entries, unsigned flags)
{
	int rc = t_ring_init(entries, r, flags);
	/* No io_uring here: a kernel built without it, sysctl
	 * kernel.io_uring_disabled, or a seccomp filter (Docker's default
	 * profile refuses io_uring_setup). A ring's tests have nothing to
	 * run on; the async API's -EOPNOTSUPP there is tests/fault's. */
	if (rc == -ENOSYS || rc == -EPERM)
		cr_skip_test("io_uring unavailable here (io_uring_setup: %s)", strerror(-rc));
	cr_assert_eq(rc, 0, "io_uring_queue_init: %d", rc);
}

struct ursa_op *t_reap(struct io_uring *r, int *app, long timeout_ms)
{
	uint64_t end = t_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	for (;;) {
		io_uring_submit(r);
		struct io_uring_cqe *cqe;
		struct __kernel_timespec ts = {0, 10 * 1000000};
		int rc = io_uring_wait_cqe_timeout(r, &cqe, &ts);
		if (rc == -ETIME || rc == -EINTR) {
			if (t_now_ns() > end)
				return NULL;
			continue;
		}
		cr_assert_eq(rc, 0, "wait_cqe: %d", rc);
		struct ursa_op *done = NULL;
		int mine = ursa_handle_cqe(r, cqe, &done);
		cr_assert(mine == 0 || mine == 1, "ursa_handle_cqe: %d", mine);
		if (!mine && app)
			(*app)++;
		io_uring_cqe_seen(r, cqe);
		if (done)
			return done;
	}
}

int t_drain(struct io_uring *r, long ms)
{
	int app = 0;
	uint64_t end = t_now_ns() + (uint64_t)ms * 1000000ull;
	while (t_now_ns() < end) {
		io_uring_submit(r);
		struct io_uring_cqe *cqe;
		struct __kernel_timespec ts = {0, 5 * 1000000};
		if (io_uring_wait_cqe_timeout(r, &cqe, &ts) != 0)
			continue;
		struct ursa_op *done = NULL;
		int mine = ursa_handle_cqe(r, cqe, &done);
		cr_assert_null(done, "an op finished twice");
		if (!mine)
			app++;
		io_uring_cqe_seen(r, cqe);
	}
	return app;
}

static void *waiter_main(void *arg)
{
	struct t_waiter *w = arg;
	__atomic_store_n(&w->tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	atomic_store(&w->ret, w->wait(w->arg));
	atomic_store(&w->done, 1);
	return NULL;
}

void t_waiters_start(struct t_waiter *w, int n, int (*wait)(void *arg), void *args,
		     size_t stride)
{
	for (int i = 0; i < n; i++) {
		w[i].wait = wait;
		w[i].arg = (char *)args + (size_t)i * stride;
		w[i].tid = 0;
		atomic_store(&w[i].ret, 0);
		atomic_store(&w[i].done, 0);
		cr_assert_eq(pthread_create(&w[i].thread, NULL, waiter_main, &w[i]), 0);
	}
	for (int i = 0; i < n; i++) {
		while (!__atomic_load_n(&w[i].tid, __ATOMIC_ACQUIRE))
			sched_yield();
		t_wait_sleeping(w[i].tid);
	}
	for (int i = 0; i < n; i++)
		cr_assert_eq(atomic_load(&w[i].done), 0, "waiter %d returned before the wake", i);
}

void t_waiter_start(struct t_waiter *w, int (*wait)(void *arg), void *arg)
{
	t_waiters_start(w, 1, wait, arg, 0);
}

bool t_waiter_done(struct t_waiter *w)
{
	return atomic_load(&w->done) != 0;
}

int t_waiter_join(struct t_waiter *w)
{
	cr_assert_eq(pthread_join(w->thread, NULL), 0);
	return atomic_load(&w->ret);
}

void t_excl_check(struct t_excl *x, long entries)
{
	cr_assert_eq(__atomic_load_n(&x->violations, __ATOMIC_RELAXED), 0,
		     "mutual exclusion violated %d times", x->violations);
	cr_assert_eq(x->counter, entries, "exclusive entries: %ld, want %ld", x->counter, entries);
	for (int k = 1; k < 4; k++)
		cr_assert_eq(x->data[k], x->data[0]);
}

int t_waiters_done(struct t_waiter *w, int n)
{
	int done = 0;
	for (int i = 0; i < n; i++)
		done += t_waiter_done(&w[i]);
	return done;
}

void t_waiters_join_ok(struct t_waiter *w, int n)
{
	for (int i = 0; i < n; i++)
		cr_assert_eq(t_waiter_join(&w[i]), 0, "waiter %d", i);
}

static void *hog_main(void *arg)
{
	struct t_hogs *h = arg;
	while (!atomic_load(&h->stop)) {
		ursa_mutex_lock(h->m);
		for (volatile int i = 0; i < h->spin; i++)
			;
		ursa_mutex_unlock(h->m);
		atomic_fetch_add(&h->rounds, 1);
	}
	return NULL;
}

void t_hogs_start(struct t_hogs *h, ursa_mutex_t *m, int n, int spin)
{
	cr_assert(n >= 1 && n <= 4);
	h->m = m;
	h->spin = spin;
	h->n = n;
	atomic_store(&h->stop, 0);
	atomic_store(&h->rounds, 0);
	t_spawn(h->t, n, hog_main, h, 0);
}

void t_hogs_stop(struct t_hogs *h)
{
	atomic_store(&h->stop, 1);
	t_join_all(h->t, h->n);
}

/* futex2's futex_wake (Linux 6.7; the same number on every architecture,
 * as kernel/uapi.h has it). */
#ifndef SYS_futex_wake
#define SYS_futex_wake 454
#endif

bool t_is_futex_wake(long n, long op)
{
	if (n == SYS_futex_wake)
		return true;
	return n == SYS_futex &&
	       ((op & FUTEX_CMD_MASK) == FUTEX_WAKE || (op & FUTEX_CMD_MASK) == FUTEX_WAKE_BITSET);
}

bool t_hold_until(const atomic_int *flag, int ms)
{
	int e = errno;
	bool set = false;
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		if (atomic_load(flag)) {
			set = true;
			break;
		}
		struct timespec one = {0, 1000000};
		nanosleep(&one, NULL);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < ms);
	errno = e;
	return set;
}

long t_syscall_real(long n, const long a[6])
{
	static t_syscall_fn real; /* looked up by the first caller (any thread) */
	t_syscall_fn f = __atomic_load_n(&real, __ATOMIC_ACQUIRE);
	if (!f) {
		f = (t_syscall_fn)dlsym(RTLD_NEXT, "syscall");
		__atomic_store_n(&real, f, __ATOMIC_RELEASE);
	}
	return f(n, a[0], a[1], a[2], a[3], a[4], a[5]);
}
