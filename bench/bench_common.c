/* SPDX-License-Identifier: MIT */
/* bench/bench_common.c — timing, threads and statistics for ursa-bench. */
#include "bench/bench.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <sys/wait.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct bench_opts bench_opt;
double bench_iters_per_ns = 1.0;

int bench_fail(const char *what, int err)
{
	fprintf(stderr, "\nursa-bench: %s: %s\n", what, strerror(err < 0 ? -err : err));
	return -1;
}

void bench_add_impl(struct bench_scenario *s, const char *name, const char *note,
		    bench_measure_fn fn)
{
	if (s->nimpls >= BENCH_MAX_IMPLS)
		abort();
	s->impls[s->nimpls++] = (struct bench_impl){name, note, fn};
}

/*
 * A work loop's speed in iterations per ns: the fastest timing of n/4
 * iterations taken on every CPU this process may use, CAL_ROUNDS times
 * spread over about a quarter of a second. The fastest, so a preemption
 * does not make every later loop too short; spread over CPUs and time,
 * because virtual CPUs change speed on their own: on the 2-vCPU machine
 * of bench/README.md ("Method") each vCPU runs such a loop at half speed
 * for a third of the time, in phases of 10 ms to 3 s, independently of the
 * other. Five back-to-back timings (the rule before) landed in a slow
 * phase about a third of the time, and that run's sections were all twice
 * as long as named. bench_speed_slow is the share of these timings below
 * 0.85 of the fastest: the header prints it.
 */
#define CAL_ROUNDS 16
#define CAL_GAP_NS 15000000u
double bench_speed_slow;

static double cal_time(void (*loop)(uint32_t), uint32_t n)
{
	double best = 0;
	for (int i = 0; i < 2; i++) {
		uint64_t t0 = bench_now_ns();
		loop(n);
		uint64_t dt = bench_now_ns() - t0;
		double ipn = dt ? (double)n / (double)dt : 1.0;
		if (ipn > best)
			best = ipn;
	}
	return best;
}

double bench_calibrate_loop(void (*loop)(uint32_t), uint32_t n)
{
	enum { MAXS = CAL_ROUNDS * 64 };
	static double samples[MAXS];
	int ncpu = bench_opt.ncpu > 0 ? bench_opt.ncpu : 1, ns = 0;
	if (ncpu > 64)
		ncpu = 64;
	cpu_set_t saved;
	bool pin = sched_getaffinity(0, sizeof(saved), &saved) == 0 && bench_opt.ncpu > 1;
	double best = 0;
	n = n / 4 ? n / 4 : 1;
	for (int r = 0; r < CAL_ROUNDS; r++) {
		for (int c = 0; c < ncpu; c++) {
			if (pin) {
				cpu_set_t one;
				CPU_ZERO(&one);
				CPU_SET(bench_opt.cpus[c], &one);
				if (sched_setaffinity(0, sizeof(one), &one))
					continue;
			}
			double v = cal_time(loop, n);
			samples[ns++] = v;
			if (v > best)
				best = v;
			if (!pin)
				break;
		}
		if (r + 1 < CAL_ROUNDS)
			bench_sleep_ns(CAL_GAP_NS);
	}
	if (pin)
		sched_setaffinity(0, sizeof(saved), &saved);
	int slow = 0;
	for (int i = 0; i < ns; i++)
		slow += samples[i] < 0.85 * best;
	bench_speed_slow = ns ? (double)slow / ns : 0;
	return best > 0 ? best : 1.0;
}

static void work_loop(uint32_t n)
{
	bench_work_iters(n);
}

void bench_calibrate(void)
{
	bench_iters_per_ns = bench_calibrate_loop(work_loop, 2000000);
}

void bench_pin_self(int i)
{
	if (!bench_opt.pin || bench_opt.ncpu <= 0)
		return;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(bench_opt.cpus[i % bench_opt.ncpu], &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static int spawn(pthread_t *tids, int n, void *(*fn)(void *), void *args, size_t stride,
		 size_t stack)
{
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	if (stack)
		pthread_attr_setstacksize(&attr, stack);
	for (int i = 0; i < n; i++) {
		if (bench_opt.pin && bench_opt.ncpu > 0) {
			cpu_set_t set;
			CPU_ZERO(&set);
			CPU_SET(bench_opt.cpus[i % bench_opt.ncpu], &set);
			pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
		}
		int r = pthread_create(&tids[i], &attr, fn, (char *)args + (size_t)i * stride);
		if (r) {
			/* The threads already started may wait for the others (a
			 * barrier, a wake): the caller exits instead of joining. */
			pthread_attr_destroy(&attr);
			return bench_fail("pthread_create", r);
		}
	}
	pthread_attr_destroy(&attr);
	return 0;
}

int bench_spawn(pthread_t *tids, int n, void *(*fn)(void *), void *args, size_t stride)
{
	return spawn(tids, n, fn, args, stride, 0);
}

int bench_spawn_small(pthread_t *tids, int n, void *(*fn)(void *), void *args, size_t stride)
{
	return spawn(tids, n, fn, args, stride, 128 * 1024);
}

/* Start one thread fn(arg), on the CPUs of set (NULL: wherever). */
static int spawn_one(pthread_t *tid, const cpu_set_t *set, void *(*fn)(void *), void *arg)
{
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	if (set)
		pthread_attr_setaffinity_np(&attr, sizeof(*set), set);
	int r = pthread_create(tid, &attr, fn, arg);
	pthread_attr_destroy(&attr);
	return r ? bench_fail("pthread_create", r) : 0;
}

int bench_spawn_on(pthread_t *tid, int cpu_index, void *(*fn)(void *), void *arg)
{
	if (!bench_opt.pin || bench_opt.ncpu <= 0)
		return spawn_one(tid, NULL, fn, arg);
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(bench_opt.cpus[cpu_index % bench_opt.ncpu], &set);
	return spawn_one(tid, &set, fn, arg);
}

static void first_cpu(cpu_set_t *set)
{
	CPU_ZERO(set);
	CPU_SET(bench_opt.ncpu > 0 ? bench_opt.cpus[0] : 0, set);
}

int bench_spawn_on_first_cpu(pthread_t *tid, void *(*fn)(void *), void *arg)
{
	cpu_set_t set;
	first_cpu(&set);
	return spawn_one(tid, &set, fn, arg);
}

int bench_pin_self_first_cpu(cpu_set_t *old)
{
	cpu_set_t set;
	int r = pthread_getaffinity_np(pthread_self(), sizeof(*old), old);
	if (r)
		return bench_fail("pthread_getaffinity_np", r);
	first_cpu(&set);
	r = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	return r ? bench_fail("pthread_setaffinity_np", r) : 0;
}

void bench_unpin_self(const cpu_set_t *old)
{
	pthread_setaffinity_np(pthread_self(), sizeof(*old), old);
}

void bench_join(pthread_t *tids, int n)
{
	for (int i = 0; i < n; i++)
		pthread_join(tids[i], NULL);
}

pid_t bench_gettid(void)
{
	return gettid();
}

bool bench_thread_asleep(pid_t tid)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	/* "tid (comm) S ...": the state follows the last ')'. */
	char *p = strrchr(buf, ')');
	return p && p[1] == ' ' && (p[2] == 'S' || p[2] == 'D');
}

bool bench_wait_asleep(pid_t tid, int timeout_ms)
{
	uint64_t end = bench_now_ns() + (uint64_t)timeout_ms * 1000000u;
	while (!bench_thread_asleep(tid)) {
		if (bench_now_ns() > end)
			return false;
		sched_yield();
	}
	return true;
}

void bench_yield_until_eq(const int *p, int val)
{
	while (__atomic_load_n(p, __ATOMIC_ACQUIRE) != val)
		sched_yield();
}

void bench_sleep_ns(uint64_t ns)
{
	struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

double bench_median(double *v, int n)
{
	if (n <= 0)
		return 0;
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

uint64_t bench_quantile_u64(uint64_t *u, size_t n, double q)
{
	if (!n)
		return 0;
	qsort(u, n, sizeof(*u), cmp_u64);
	size_t i = (size_t)(q * (double)(n - 1) + 0.5);
	return u[i < n ? i : n - 1];
}

int bench_uncontended_spawn(const char *impl, const struct bench_point *pt, double *v)
{
	char threads[16], ops[32], variant[16];
	snprintf(threads, sizeof(threads), "%d", pt->threads);
	snprintf(ops, sizeof(ops), "%ld", bench_opt.uncontended_ops / (pt->warmup ? 5 : 1));
	snprintf(variant, sizeof(variant), "%d", pt->variant);
	char *argv[] = {"ursa-bench", "--uncontended-child", (char *)impl, threads, ops, variant,
			NULL};
	int fd[2];
	if (pipe(fd))
		return bench_fail("mutex-uncontended: pipe", errno);
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fd[1], STDOUT_FILENO);
	posix_spawn_file_actions_addclose(&fa, fd[0]);
	pid_t pid;
	extern char **environ;
	int r = posix_spawn(&pid, "/proc/self/exe", &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(fd[1]);
	if (r) {
		close(fd[0]);
		return bench_fail("mutex-uncontended: posix_spawn /proc/self/exe", r);
	}
	char buf[64] = {0};
	ssize_t got = 0, k;
	while (got < (ssize_t)sizeof(buf) - 1 && (k = read(fd[0], buf + got, sizeof(buf) - 1 - got)) > 0)
		got += k;
	close(fd[0]);
	int st;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0 ||
	    sscanf(buf, "%lf", &v[0]) != 1)
		return bench_fail("mutex-uncontended: the child measurement failed", EPROTO);
	return 0;
}

static void *idle_thread(void *arg)
{
	int fd = *(int *)arg;
	char c;
	while (read(fd, &c, 1) < 0 && errno == EINTR)
		;
	return NULL;
}

int bench_uncontended_child(struct bench_scenario *unc, int argc, char **argv)
{
	if (argc != 6)
		return 2;
	int threads = atoi(argv[3]);
	bench_opt.uncontended_ops = atol(argv[4]);
	bench_opt.uncontended_here = true;
	int variant = atoi(argv[5]);
	if (threads < 1 || threads > 64 || bench_opt.uncontended_ops < 1 || variant < 0 ||
	    variant >= unc->nvariants)
		return 2;
	/* The process's other threads: asleep on a pipe nobody writes. */
	static int idle[2];
	if (threads > 1 && pipe(idle))
		return 1;
	for (int i = 1; i < threads; i++) {
		pthread_t t;
		if (pthread_create(&t, NULL, idle_thread, &idle[0]))
			return 1;
	}
	for (int i = 0; i < unc->nimpls; i++) {
		if (strcmp(unc->impls[i].name, argv[2]))
			continue;
		struct bench_point pt = {.threads = threads, .variant = variant};
		double v[BENCH_MAX_METRICS];
		if (unc->impls[i].measure(&pt, v))
			return 1;
		printf("%.6f\n", v[0]);
		return fflush(stdout) ? 1 : 0;
	}
	return 2;
}
