#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#define MAXR 0x7ffdu
static uint32_t st __attribute__((aligned(64)));
static volatile uint64_t counter;
static inline uint64_t now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000ull + t.tv_nsec;
}
__attribute__((noinline)) static int slow(void)
{
	abort();
}
static inline int rd1(void)
{
	uint32_t s = __atomic_load_n(&st, __ATOMIC_RELAXED);
	if (__builtin_expect(s < MAXR, 1) &&
	    __atomic_compare_exchange_n(&st, &s, s + 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return 0;
	return slow();
}
static inline int ru1(void)
{
	uint32_t s = __atomic_load_n(&st, __ATOMIC_RELAXED);
	if (__builtin_expect(s - 1 < MAXR, 1)) {
		s = __atomic_fetch_sub(&st, 1, __ATOMIC_RELEASE);
		if (__builtin_expect(s - 1 < MAXR, 1))
			return 0;
	}
	return slow();
}
static inline int rd2(void)
{
	uint32_t s = 0;
	if (__atomic_compare_exchange_n(&st, &s, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return 0;
	if (s < MAXR &&
	    __atomic_compare_exchange_n(&st, &s, s + 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return 0;
	return slow();
}
static inline int rd5(void)
{
	uint32_t s = __atomic_load_n(&st, __ATOMIC_RELAXED);
	if (__builtin_expect(s == 0, 1)) {
		uint32_t e = 0;
		if (__atomic_compare_exchange_n(&st, &e, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			return 0;
		s = e;
	}
	if (s < MAXR &&
	    __atomic_compare_exchange_n(&st, &s, s + 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return 0;
	return slow();
}
static inline int ru3(void)
{
	uint32_t s = __atomic_fetch_sub(&st, 1, __ATOMIC_RELEASE);
	if (__builtin_expect(s - 1 < MAXR, 1))
		return 0;
	return slow();
}
static inline int ru4(void)
{
	uint32_t s = 1;
	if (__atomic_compare_exchange_n(&st, &s, 0, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		return 0;
	if (s - 1 < MAXR) {
		s = __atomic_fetch_sub(&st, 1, __ATOMIC_RELEASE);
		if (s - 1 < MAXR)
			return 0;
	}
	return slow();
}
static inline int wl(void)
{
	uint32_t e = 0;
	return __atomic_compare_exchange_n(&st, &e, 0x7fff, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)
		   ? 0
		   : slow();
}
static inline int wu(void)
{
	uint32_t e = 0x7fff;
	return __atomic_compare_exchange_n(&st, &e, 0, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED)
		   ? 0
		   : slow();
}
#define RUN(name, L, U)                                                                            \
	do {                                                                                       \
		uint64_t t0 = now();                                                               \
		for (long i = 0; i < n; i++) {                                                     \
			L();                                                                       \
			counter++;                                                                 \
			U();                                                                       \
		}                                                                                  \
		double d = (double)(now() - t0) / n;                                               \
		printf("%-22s %.2f ns\n", name, d);                                                \
	} while (0)
static void *idle(void *a)
{
	(void)a;
	sleep(1000);
	return 0;
}
int main(int argc, char **argv)
{
	long n = 50000000;
	if (argc > 1) {
		pthread_t t;
		pthread_create(&t, 0, idle, 0);
	}
	pthread_rwlock_t g = PTHREAD_RWLOCK_INITIALIZER;
	for (int r = 0; r < 3; r++) {
		RUN("load+cas / load+xadd", rd1, ru1);
		RUN("cas0 / load+xadd", rd2, ru1);
		RUN("load+cas / xadd", rd1, ru3);
		RUN("load,cas0 / load+xadd", rd5, ru1);
		RUN("cas0 / cas1", rd2, ru4);
		RUN("write cas/cas", wl, wu);
#define GL() pthread_rwlock_rdlock(&g)
#define GU() pthread_rwlock_unlock(&g)
		RUN("glibc rd", GL, GU);
	}
}
