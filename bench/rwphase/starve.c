/* bench/rwphase/starve.c — how long one locker waits while T threads keep
 * taking the same lock: ursa's rwlock in write mode (whose writers have no
 * hand-off among themselves) or ursa's mutex (which hands off to a waiter
 * that has waited 1 ms, or to a ring waiter that lost two races).
 *
 * T threads take the lock, run about 1 us, release, and go again. The main
 * thread does the same, as a ring waiter in its own io_uring (MODE ring) or
 * as a blocked thread (MODE thread), timing each of its waits. Prints how
 * often it got the lock, the hammering threads' mean, and its p50 / p99 /
 * max wait. Usage: starve rwlock|mutex T ring|thread SECONDS
 * (bench/rwphase/README.md). */
#define _GNU_SOURCE
#include <liburing.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ursa.h>
#include <ursa/async.h>

#define MAXT 64
#define MAXW 4000000

static bool use_rw;
static ursa_rwlock_t rwl;
static ursa_mutex_t mu;
static volatile int stop;
static unsigned long ops[MAXT];
static uint64_t waits[MAXW];

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void section(void)
{
	for (int i = 0; i < 3000; i++) /* about 1 us */
		__asm__ volatile("" ::: "memory");
}

static void lock(void)
{
	if (use_rw)
		ursa_rwlock_wrlock(&rwl);
	else
		ursa_mutex_lock(&mu);
}

static void unlock(void)
{
	if (use_rw)
		ursa_rwlock_wrunlock(&rwl);
	else
		ursa_mutex_unlock(&mu);
}

/* Take the lock as a ring waiter; exits on any error. */
static void lock_ring(struct io_uring *r)
{
	struct ursa_op op = URSA_OP_INIT;
	int rc = use_rw ? ursa_rwlock_wrlock_async(r, &rwl, &op) : ursa_mutex_lock_async(r, &mu, &op);
	if (rc == 0) {
		io_uring_submit(r);
		for (struct ursa_op *done = NULL; !done;) {
			struct io_uring_cqe *cqe;
			if (io_uring_wait_cqe(r, &cqe)) {
				fprintf(stderr, "starve: io_uring_wait_cqe failed\n");
				exit(1);
			}
			ursa_handle_cqe(r, cqe, &done);
			io_uring_cqe_seen(r, cqe);
			io_uring_submit(r);
		}
	} else if (rc != 1) {
		fprintf(stderr, "starve: starting the lock op: %d\n", rc);
		exit(1);
	}
	if (op.res) {
		fprintf(stderr, "starve: the lock op finished with %d\n", op.res);
		exit(1);
	}
}

static void *hammer(void *a)
{
	unsigned long n = 0;
	while (!stop) {
		lock();
		section();
		unlock();
		n++;
	}
	ops[(long)a] = n;
	return NULL;
}

static int cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	if (argc != 5 || (strcmp(argv[1], "rwlock") && strcmp(argv[1], "mutex")) ||
	    (strcmp(argv[3], "ring") && strcmp(argv[3], "thread"))) {
		fprintf(stderr, "usage: starve rwlock|mutex T ring|thread SECONDS\n");
		return 2;
	}
	use_rw = !strcmp(argv[1], "rwlock");
	int t = atoi(argv[2]);
	bool ring = !strcmp(argv[3], "ring");
	double secs = atof(argv[4]);
	if (t < 1 || t > MAXT || secs <= 0) {
		fprintf(stderr, "starve: 1 <= T <= %d, SECONDS > 0\n", MAXT);
		return 2;
	}
	ursa_rwlock_init(&rwl, 0);
	ursa_mutex_init(&mu, 0);
	struct io_uring r;
	if (ring && io_uring_queue_init(64, &r, 0)) {
		fprintf(stderr, "starve: io_uring_queue_init failed\n");
		return 1;
	}
	pthread_t th[MAXT];
	for (long i = 0; i < t; i++)
		pthread_create(&th[i], NULL, hammer, (void *)i);
	size_t nw = 0;
	uint64_t end = now_ns() + (uint64_t)(secs * 1e9);
	while (now_ns() < end && nw < MAXW) {
		uint64_t t0 = now_ns();
		if (ring)
			lock_ring(&r);
		else
			lock();
		waits[nw++] = now_ns() - t0;
		section();
		unlock();
	}
	stop = 1;
	unsigned long sum = 0;
	for (int i = 0; i < t; i++) {
		pthread_join(th[i], NULL);
		sum += ops[i];
	}
	qsort(waits, nw, sizeof waits[0], cmp);
	printf("%s %s T=%d: it took the lock %zu times (each other thread %lu); "
	       "wait p50 %.1f us, p99 %.1f us, max %.1f us\n",
	       argv[1], argv[3], t, nw, sum / (unsigned long)t, waits[nw / 2] / 1e3,
	       waits[nw * 99 / 100] / 1e3, waits[nw - 1] / 1e3);
	return 0;
}
