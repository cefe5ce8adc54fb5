/* SPDX-License-Identifier: MIT */
/*
 * bench/bench.h — the shared pieces of ursa-bench: options, the scenario
 * table, timing, threads, statistics.
 *
 * A scenario is a list of implementations, each with one measure function
 * that runs ONE repetition at one point (a thread or waiter count, and a
 * variant such as short/long critical section) and fills one value per
 * metric. The runner (ursa-bench.c) does the warm-up, the repetitions, the
 * medians, the table and the CSV; measure functions only measure.
 */
#ifndef URSA_BENCH_H
#define URSA_BENCH_H

#include "config.h"

/* The gnuplot configure found; plain "gnuplot" from PATH without config.h's. */
#ifndef URSA_GNUPLOT
#define URSA_GNUPLOT "gnuplot"
#endif

#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <time.h>

/* abseil's absl::Mutex (bench/absl_adapter.cc) is built when configure
 * found it (HAVE_ABSL in config.h). */
#ifdef HAVE_ABSL
static const bool bench_have_absl = true;
#else
static const bool bench_have_absl = false;
#endif

#define BENCH_CACHELINE	 64
#define BENCH_ALIGNED	 __attribute__((aligned(BENCH_CACHELINE)))
#define BENCH_CAT_(a, b) a##b
#define BENCH_CAT(a, b)	 BENCH_CAT_(a, b)
#define BENCH_STR_(a)	 #a
#define BENCH_STR(a)	 BENCH_STR_(a)

#define BENCH_MAX_METRICS  4
#define BENCH_MAX_IMPLS	   8
#define BENCH_MAX_POINTS   16
#define BENCH_MAX_VARIANTS 4

/* ------------------------------------------------------------- options */

struct bench_opts {
	bool quick;
	bool pin;	      /* pin thread i to allowed CPU i % ncpu */
	int max_threads;      /* top of the thread axis (default 2 x CPUs) */
	int reps;	      /* repetitions per point (median taken) */
	double duration_s;    /* one timed repetition of a throughput scenario */
	long uncontended_ops; /* lock+unlock pairs per mutex-uncontended rep */
	bool uncontended_here; /* mutex-uncontended: measure in this process
				  (the child ursa-bench --uncontended-child) */
	int pingpong_rounds;  /* round trips per cond-pingpong / sem-pingpong rep */
	int handoff_samples;  /* hand-offs per handoff-latency rep */
	int wake_rounds;      /* wake rounds per wake-batch rep */
	bool threads_set, reps_set, duration_set; /* given on the command line */
	const char *cn_workloads; /* contention: --workloads list, or NULL: all */
	const char *cn_sections;  /* contention: --sections list, or NULL: all */
	double cn_outside_ns;	  /* contention: --outside, work after each operation */
	bool cn_work_shared;	  /* contention: --work shared (the protected data) */
	int ncpu;	      /* CPUs this process may run on */
	int cpus[1024];	      /* their numbers, for --pin */
};

extern struct bench_opts bench_opt;

/* ------------------------------------------------------------- scenarios */

struct bench_metric {
	const char *name; /* CSV metric column (prefixed by the variant) */
	const char *unit;
	bool higher_better;
};

/* One repetition at one point. warmup: a shortened run whose values are
 * discarded. Returns 0, or -1 after printing why the harness failed. */
struct bench_point {
	int threads; /* thread count, or waiter count for wake-batch */
	int variant; /* index into the scenario's variants */
	bool warmup;
};
typedef int (*bench_measure_fn)(const struct bench_point *pt, double *values);

struct bench_impl {
	const char *name;
	const char *note; /* shown under the table (e.g. "spins, never sleeps"), or NULL */
	bench_measure_fn measure;
};

struct bench_scenario {
	const char *name;
	const char *what; /* one line for --help and the table header */
	const char *axis; /* "threads" or "waiters" */
	int npoints;	  /* filled by the runner when points_fn is set */
	int points[BENCH_MAX_POINTS];
	bool thread_axis; /* points = 1, 2, 4, ... max_threads */
	int nvariants;
	const char *variants[BENCH_MAX_VARIANTS];
	int nmetrics;
	struct bench_metric metrics[BENCH_MAX_METRICS];
	int nimpls; /* impls[0] is the baseline of the ratios */
	struct bench_impl impls[BENCH_MAX_IMPLS];
	const char *missing; /* why some ursa implementation is not built, or NULL */
	/* A scenario with its own runner (contention: rounds in alternating
	 * order, ratios per round): called instead of the generic loop. */
	int (*run)(const struct bench_scenario *s, FILE *csv, const char *csv_path);
	bool opt_in; /* runs only when named with --scenario */
};

/* Each scenario module fills its descriptors (adds impls it has). */
void bench_locks_register(struct bench_scenario *uncontended, struct bench_scenario *contended,
			  struct bench_scenario *rwlock, struct bench_scenario *pingpong,
			  struct bench_scenario *sem_pingpong, struct bench_scenario *handoff);
void bench_wake_register(struct bench_scenario *wake);
void bench_async_register(struct bench_scenario *async);
void bench_shim_register(struct bench_scenario *shim);
void bench_contention_register(struct bench_scenario *contention);

void bench_add_impl(struct bench_scenario *s, const char *name, const char *note,
		    bench_measure_fn fn);

/* ------------------------------------------------------------- helpers */

/* Print "ursa-bench: what: strerror(-err)" and return -1. */
/* mutex-uncontended runs each measurement in a fresh process (a thread
 * ever created makes glibc use atomics for good, even in a forked child):
 * this re-executes ursa-bench as `--uncontended-child IMPL THREADS OPS
 * VARIANT`, which makes THREADS - 1 idle threads, measures the variant
 * (0 the mutex, 1 / 2 an rwlock's read / write lock) with IMPL's function
 * and prints the figure. */
int bench_uncontended_spawn(const char *impl, const struct bench_point *pt, double *v);
int bench_uncontended_child(struct bench_scenario *unc, int argc, char **argv);

int bench_fail(const char *what, int err);

static inline uint64_t bench_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Busy work of about ns nanoseconds (calibrated at start-up): stands for
 * the code inside or outside a critical section. */
extern double bench_iters_per_ns;
/* Share of the calibration's timings below 0.85 of the fastest: how often
 * this machine's CPUs ran slow while it calibrated (bench_common.c). */
extern double bench_speed_slow;
void bench_calibrate(void);
double bench_calibrate_loop(void (*loop)(uint32_t), uint32_t n);
static inline void bench_work_iters(uint32_t iters)
{
	for (uint32_t i = 0; i < iters; i++)
		__asm__ volatile("" ::: "memory");
}
/* Iterations of a loop that runs per_ns of them a nanosecond, for about
 * ns nanoseconds (at least 1). */
static inline uint32_t bench_iters_at(double ns, double per_ns)
{
	double it = ns * per_ns;
	return it < 1 ? 1 : (uint32_t)it;
}
static inline uint32_t bench_iters(double ns)
{
	return bench_iters_at(ns, bench_iters_per_ns);
}

static inline void bench_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield" ::: "memory");
#endif
}

static inline uint64_t bench_xorshift(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

/* Start n threads fn(args + i * stride), pinned when --pin. Returns 0, or -1
 * with the threads already started left running (callers exit). */
int bench_spawn(pthread_t *tids, int n, void *(*fn)(void *), void *args, size_t stride);
/* Same, with a small stack (for hundreds of sleeping waiters). */
int bench_spawn_small(pthread_t *tids, int n, void *(*fn)(void *), void *args, size_t stride);
/* Start one thread fn(arg), pinned to allowed CPU cpu_index when --pin. */
int bench_spawn_on(pthread_t *tid, int cpu_index, void *(*fn)(void *), void *arg);
/* Start one thread fn(arg) on the first allowed CPU only, --pin or not. */
int bench_spawn_on_first_cpu(pthread_t *tid, void *(*fn)(void *), void *arg);
void bench_join(pthread_t *tids, int n);
/* Pin the calling thread to allowed CPU i % ncpu when --pin. */
void bench_pin_self(int i);
/* Move the calling thread to the first allowed CPU, --pin or not, saving
 * its affinity in *old for bench_unpin_self. 0, or -1 after saying why. */
int bench_pin_self_first_cpu(cpu_set_t *old);
void bench_unpin_self(const cpu_set_t *old);

/* The calling thread's kernel id. */
pid_t bench_gettid(void);
/* True when thread tid of this process is asleep in the kernel ('S' or 'D'
 * in /proc), i.e. it has left any spinning phase and blocked. */
bool bench_thread_asleep(pid_t tid);
/* Wait (polling, up to timeout_ms) until tid is asleep. Returns true if it is. */
bool bench_wait_asleep(pid_t tid, int timeout_ms);

/* Yield until *p == val (acquire). For waits on another thread's step. */
void bench_yield_until_eq(const int *p, int val);

/* Sleep ns nanoseconds. */
void bench_sleep_ns(uint64_t ns);

/* Median of v[0..n-1] (reorders v). */
double bench_median(double *v, int n);
/* Quantile q in [0,1] of u[0..n-1] (sorts u). */
uint64_t bench_quantile_u64(uint64_t *u, size_t n, double q);

/* Run duration: the timed length of one repetition (shorter for warm-up). */
static inline uint64_t bench_duration_ns(const struct bench_point *pt)
{
	double s = bench_opt.duration_s * (pt->warmup ? 0.2 : 1.0);
	return (uint64_t)(s * 1e9);
}

#endif
