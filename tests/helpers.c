/* SPDX-License-Identifier: MIT */
#include "tests/helpers.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
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
