/* SPDX-License-Identifier: MIT */
/*
 * bench/looks/timer/tpp.c — what a futex sleep's timeout costs: two
 * threads pass a turn through two futex words (each sleeps on its own,
 * wakes the other's), every sleep with a relative timeout of T us that
 * never expires (0: no timeout). Prints microseconds per round trip (two
 * sleeps, two wakes). Not built by make; README.md here.
 *
 *   gcc -O2 -pthread bench/looks/timer/tpp.c -o tpp
 *   taskset -c 0 ./tpp 2000     # both threads on one CPU
 *   ./tpp 2000                  # on two CPUs (each idles between turns)
 */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static uint32_t turn[2][16] __attribute__((aligned(64))); /* one line each */
static long timeout_us;
static volatile int stop;
static unsigned long rounds;

static void sleep_on(uint32_t *w)
{
	struct timespec ts, *p = NULL;
	if (timeout_us) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		long ns = ts.tv_nsec + (timeout_us % 1000000) * 1000;
		ts.tv_sec += timeout_us / 1000000 + ns / 1000000000;
		ts.tv_nsec = ns % 1000000000;
		p = &ts;
	}
	syscall(SYS_futex, w, FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG, 0, p, NULL,
		FUTEX_BITSET_MATCH_ANY);
}

static void pass(uint32_t *w)
{
	__atomic_store_n(w, 1, __ATOMIC_RELEASE);
	syscall(SYS_futex, w, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1);
}

static void *player(void *arg)
{
	long me = (long)arg;
	for (;;) {
		while (!__atomic_load_n(&turn[me][0], __ATOMIC_ACQUIRE))
			sleep_on(&turn[me][0]);
		turn[me][0] = 0;
		if (stop)
			break;
		if (me == 0)
			rounds++;
		pass(&turn[!me][0]);
	}
	pass(&turn[!me][0]);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: tpp TIMEOUT_US [SECONDS]\n");
		return 2;
	}
	timeout_us = atol(argv[1]);
	double secs = argc > 2 ? atof(argv[2]) : 0.5;
	pthread_t a, b;
	pthread_create(&a, NULL, player, (void *)0);
	pthread_create(&b, NULL, player, (void *)1);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pass(&turn[0][0]);
	usleep((useconds_t)(secs * 1e6));
	stop = 1;
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double el = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("timeout %6ld us: %.2f us a round trip\n", timeout_us, el * 1e6 / rounds);
	return 0;
}
