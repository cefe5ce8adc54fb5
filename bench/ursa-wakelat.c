/* SPDX-License-Identifier: MIT */
/*
 * bench/ursa-wakelat.c — wake-to-completion latency of one cross-thread
 * wake: a waiter asleep on a semaphore, a waker on another thread posts it;
 * the time from just before the post to the waiter running again.
 *
 * Waiters: a blocked thread (ursa_sem_wait) or a ring wait
 * (ursa_sem_wait_async, the thread asleep in io_uring_enter waiting for
 * the CQE), on a private or an URSA_SHARED semaphore, the ring set up
 * plainly, with COOP_TASKRUN or with SINGLE_ISSUER|DEFER_TASKRUN. A runtime
 * reported about half of its cross-thread wakes of SHARED ring futex waits
 * ~11 ms late (zio #503): the p99 and max columns show such a tail.
 *
 * Each wake: the waker waits until the waiter is asleep (its /proc state
 * is S), then takes t0 and posts; the waiter takes t1 when it runs. Modes
 * alternate round by round (100 wakes a round), so drift and load hit all
 * alike. Prints p50, p90, p99, max (microseconds) and how many wakes took
 * over 5 ms, per mode.
 *
 * Usage: ursa-wakelat [-n WAKES] [-c CPU_WAITER,CPU_WAKER]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <liburing.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <ursa.h>

#ifndef IORING_SETUP_COOP_TASKRUN
#define IORING_SETUP_COOP_TASKRUN (1U << 8)
#endif
#ifndef IORING_SETUP_SINGLE_ISSUER
#define IORING_SETUP_SINGLE_ISSUER (1U << 12)
#endif
#ifndef IORING_SETUP_DEFER_TASKRUN
#define IORING_SETUP_DEFER_TASKRUN (1U << 13)
#endif

struct mode {
	const char *name;
	bool ring;
	unsigned sem_flags;
	unsigned ring_flags;
	bool usable;
	uint64_t *lat; /* ns */
	int n;
};

static struct mode modes[] = {
	{"thread private", false, 0, 0, false, NULL, 0},
	{"thread shared", false, URSA_SHARED, 0, false, NULL, 0},
	{"ring private", true, 0, 0, false, NULL, 0},
	{"ring shared", true, URSA_SHARED, 0, false, NULL, 0},
	{"ring private coop", true, 0, IORING_SETUP_COOP_TASKRUN, false, NULL, 0},
	{"ring shared coop", true, URSA_SHARED, IORING_SETUP_COOP_TASKRUN, false, NULL, 0},
	{"ring private defer", true, 0, IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN, false, NULL, 0},
	{"ring shared defer", true, URSA_SHARED,
	 IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN, false, NULL, 0},
};
#define NMODES (sizeof(modes) / sizeof(modes[0]))

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static char task_state(pid_t tid)
{
	char path[64], buf[256];
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	FILE *f = fopen(path, "r");
	if (!f)
		return '?';
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	char *p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : '?';
}

static void pin(int cpu)
{
	if (cpu < 0)
		return;
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	pthread_setaffinity_np(pthread_self(), sizeof(s), &s);
}

struct round {
	struct mode *m;
	int wakes;
	ursa_sem_t sem;
	atomic_int tid;
	atomic_int armed;	/* wakes the waiter is ready for */
	_Atomic uint64_t t0; /* the waker's post time */
	atomic_int done;	/* wakes the waiter has seen */
	int cpu;
	int err;
};

static void *waiter(void *arg)
{
	struct round *r = arg;
	struct io_uring ring;
	pin(r->cpu);
	if (r->m->ring && io_uring_queue_init(8, &ring, r->m->ring_flags) != 0) {
		r->err = 1;
		atomic_store(&r->tid, -1);
		return NULL;
	}
	atomic_store(&r->tid, (int)syscall(SYS_gettid));
	for (int i = 0; i < r->wakes; i++) {
		if (r->m->ring) {
			struct ursa_op op = URSA_OP_INIT;
			int rc = ursa_sem_wait_async(&ring, &r->sem, &op);
			if (rc != 0) {
				r->err = 2;
				break;
			}
			io_uring_submit(&ring);
			atomic_store(&r->armed, i + 1);
			for (;;) {
				struct io_uring_cqe *cqe;
				if (io_uring_wait_cqe(&ring, &cqe) != 0)
					continue;
				struct ursa_op *done = NULL;
				ursa_handle_cqe(&ring, cqe, &done);
				io_uring_cqe_seen(&ring, cqe);
				if (done)
					break;
				io_uring_submit(&ring); /* a re-armed wait */
			}
			if (op.res != 0) {
				r->err = 3;
				break;
			}
		} else {
			atomic_store(&r->armed, i + 1);
			if (ursa_sem_wait(&r->sem) != 0) {
				r->err = 4;
				break;
			}
		}
		uint64_t t1 = now_ns();
		r->m->lat[r->m->n++] = t1 - atomic_load(&r->t0);
		atomic_store(&r->done, i + 1);
	}
	if (r->m->ring)
		io_uring_queue_exit(&ring);
	return NULL;
}

/* One round of a mode: the waker is the calling thread. */
static int run_round(struct mode *m, int wakes, int cpu_waiter, int cpu_waker)
{
	static struct round r;
	memset(&r, 0, sizeof(r));
	r.m = m;
	r.wakes = wakes;
	r.cpu = cpu_waiter;
	ursa_sem_init(&r.sem, 0, m->sem_flags);
	pin(cpu_waker);
	pthread_t t;
	pthread_create(&t, NULL, waiter, &r);
	while (atomic_load(&r.tid) == 0)
		sched_yield();
	if (atomic_load(&r.tid) < 0) {
		pthread_join(t, NULL);
		return -1;
	}
	for (int i = 0; i < wakes && !r.err; i++) {
		while (atomic_load(&r.armed) != i + 1 && !r.err)
			sched_yield();
		/* Asleep: in the futex wait, or in io_uring_enter for the CQE. */
		while (task_state(atomic_load(&r.tid)) != 'S' && !r.err)
			sched_yield();
		atomic_store(&r.t0, now_ns());
		ursa_sem_post(&r.sem);
		while (atomic_load(&r.done) != i + 1 && !r.err)
			sched_yield();
	}
	pthread_join(t, NULL);
	return r.err ? -1 : 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	int total = 3000, cpu_waiter = -1, cpu_waker = -1, opt;
	while ((opt = getopt(argc, argv, "n:c:")) != -1) {
		if (opt == 'n')
			total = atoi(optarg);
		else if (opt == 'c' && sscanf(optarg, "%d,%d", &cpu_waiter, &cpu_waker) == 2)
			;
		else {
			fprintf(stderr, "usage: %s [-n WAKES] [-c CPU_WAITER,CPU_WAKER]\n", argv[0]);
			return 64;
		}
	}
	struct ursa_features f;
	ursa_probe(&f);
	for (unsigned i = 0; i < NMODES; i++) {
		modes[i].lat = calloc((size_t)total + 100, sizeof(uint64_t));
		modes[i].usable = !modes[i].ring || f.uring_futex;
	}
	const int per_round = 100;
	for (int done = 0; done < total; done += per_round)
		for (unsigned k = 0; k < NMODES; k++) {
			/* Rotate the order each round. */
			struct mode *m = &modes[(k + (unsigned)done / per_round) % NMODES];
			if (m->usable && run_round(m, per_round, cpu_waiter, cpu_waker) != 0) {
				fprintf(stderr, "ursa-wakelat: %s unavailable here; skipped\n", m->name);
				m->usable = false;
			}
		}
	double load[3] = {0};
	if (getloadavg(load, 3) < 0)
		load[0] = -1;
	printf("# wake-to-completion latency, %d wakes per mode, load average %.2f\n", total,
	       load[0]);
	printf("%-20s %8s %8s %8s %9s %7s\n", "mode", "p50_us", "p90_us", "p99_us", "max_us",
	       ">5ms");
	for (unsigned i = 0; i < NMODES; i++) {
		struct mode *m = &modes[i];
		if (!m->usable || m->n == 0) {
			printf("%-20s %8s\n", m->name, "n/a");
			continue;
		}
		qsort(m->lat, (size_t)m->n, sizeof(uint64_t), cmp_u64);
		int over = 0;
		for (int j = 0; j < m->n; j++)
			over += m->lat[j] > 5000000ull;
		printf("%-20s %8.1f %8.1f %8.1f %9.1f %7d\n", m->name, m->lat[m->n / 2] / 1e3,
		       m->lat[m->n * 9 / 10] / 1e3, m->lat[m->n * 99 / 100] / 1e3,
		       m->lat[m->n - 1] / 1e3, over);
	}
	return 0;
}
