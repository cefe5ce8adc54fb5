/* SPDX-License-Identifier: MIT */
/* bench/looks/bts/slow.c — lock+unlock of one mutex in a loop, one thread,
 * with the word preset (W0: 0 free, 0x20 one waiter registered, 0x24 one
 * registered and a woken waiter on its way; nobody really waits, so the
 * unlock never wakes), YIELD 1: a sched_yield() inside; a third argument:
 * glibc's mutex instead. `slow W0 YIELD [g]`; build: gcc -O2 -pthread
 * -Iinclude slow.c -Lbuild/lib/.libs -lursa. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <ursa.h>
static ursa_mutex_t m;
static pthread_mutex_t pm = PTHREAD_MUTEX_INITIALIZER;
static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}
static void *idle(void *a)
{
	return a;
}
int main(int c, char **v)
{
	if (c < 3) {
		fprintf(stderr, "usage: slow W0 YIELD [g]\n");
		return 2;
	}
	unsigned w0 = strtoul(v[1], 0, 0);
	int y = atoi(v[2]);
	int g = c > 3;
	pthread_t t;
	pthread_create(&t, 0, idle, 0);
	pthread_join(t, 0);
	ursa_mutex_init(&m, 0);
	m.__word = w0;
	long N = 2000000;
	if (y)
		N = 500000;
	for (int r = 0; r < 3; r++) {
		double a = now();
		for (long i = 0; i < N; i++) {
			if (g)
				pthread_mutex_lock(&pm);
			else
				ursa_mutex_lock(&m);
			if (y)
				sched_yield();
			else
				__asm__ volatile("" ::: "memory");
			if (g)
				pthread_mutex_unlock(&pm);
			else
				ursa_mutex_unlock(&m);
		}
		printf("w0=%#x yield=%d %s %.1f ns/op\n", w0, y, g ? "glibc" : "ursa",
		       (now() - a) / N * 1e9);
	}
	return 0;
}
