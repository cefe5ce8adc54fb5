/* SPDX-License-Identifier: MIT */
/* bench/looks/bts/btr.c — two unlocks of a word taken by a bit-test-and-set,
 * one thread: MODE 0 the compare-and-swap 1 -> 0, and when it fails a
 * load and a compare-and-swap clearing bit 0 (the library's unlock);
 * MODE 1 a `lock btr` of bit 0, then a load of the word to see whether
 * anything is left to do (a sketch: it does nothing then). W0 presets the
 * other bits (0x20: a waiter registered). `btr W0 MODE`; gcc -O2 -pthread. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static uint32_t w __attribute__((aligned(64)));
static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}
__attribute__((noinline)) static int slow(uint32_t *p)
{
	uint32_t v = __atomic_load_n(p, __ATOMIC_RELAXED);
	while (
	    !__atomic_compare_exchange_n(p, &v, v & ~1u, false, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		;
	return 0;
}
static inline bool bts(uint32_t *p)
{
	return __atomic_fetch_or(p, 1u, __ATOMIC_ACQUIRE) & 1u;
}
static inline int un_cas(uint32_t *p)
{
	uint32_t e = 1;
	if (__atomic_compare_exchange_n(p, &e, 0, false, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		return 0;
	return slow(p);
}
static inline int un_btr(uint32_t *p)
{
	bool was;
	__asm__ __volatile__("lock btrl $0, %1" : "=@ccc"(was), "+m"(*p) : : "memory");
	if (!was)
		return -1;
	uint32_t v = __atomic_load_n(p, __ATOMIC_RELAXED);
	if (__builtin_expect((v & 0x1e) == 0 || (v & 0x16) == 0x4, 1))
		return 0;
	return 1;
}
static void *idle(void *a)
{
	return a;
}
int main(int c, char **v)
{
	if (c < 3) {
		fprintf(stderr, "usage: btr W0 MODE\n");
		return 2;
	}
	uint32_t w0 = strtoul(v[1], 0, 0);
	int mode = atoi(v[2]);
	pthread_t t;
	pthread_create(&t, 0, idle, 0);
	pthread_join(t, 0);
	w = w0;
	long N = 20000000;
	for (int r = 0; r < 3; r++) {
		double a = now();
		for (long i = 0; i < N; i++) {
			if (bts(&w))
				abort();
			__asm__ volatile("" ::: "memory");
			if (mode)
				un_btr(&w);
			else
				un_cas(&w);
		}
		printf("w0=%#x %s %.2f ns\n", w0, mode ? "btr+load" : "cas", (now() - a) / N * 1e9);
	}
	return 0;
}
