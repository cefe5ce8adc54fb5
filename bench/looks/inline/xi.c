/* Uncontended rwlock: exported (out-of-line) calls vs the header's inline paths. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <ursa.h>
static uint64_t counter;
static ursa_rwlock_t l __attribute__((aligned(64))) = URSA_RWLOCK_INIT;
static inline uint64_t now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000ull + t.tv_nsec;
}
static void *idle(void *a)
{
	(void)a;
	pause();
	return 0;
}
#define RUN(name, L, U)                                                                            \
	do {                                                                                       \
		uint64_t t0 = now();                                                               \
		for (long i = 0; i < n; i++) {                                                     \
			if (L(&l))                                                                 \
				abort();                                                           \
			__atomic_store_n(&counter, counter + 1, __ATOMIC_RELAXED);                 \
			if (U(&l))                                                                 \
				abort();                                                           \
		}                                                                                  \
		printf("%-28s %.2f ns\n", name, (double)(now() - t0) / n);                         \
	} while (0)
int main(int argc, char **argv)
{
	long n = 30000000;
	if (argc > 1) {
		pthread_t t;
		pthread_create(&t, 0, idle, 0);
	}
	for (int r = 0; r < 3; r++) {
		RUN("read, exported", (ursa_rwlock_rdlock), (ursa_rwlock_rdunlock));
		RUN("read, inline", ursa_rwlock_rdlock, ursa_rwlock_rdunlock);
		RUN("write, exported", (ursa_rwlock_wrlock), (ursa_rwlock_wrunlock));
		RUN("write, inline", ursa_rwlock_wrlock, ursa_rwlock_wrunlock);
	}
	return 0;
}
