/* bench/looks/cpp.c — condvar ping-pong, the loop of ursa-bench's cond-pingpong (lock, turn = other, signal, unlock; lock, wait while turn != me, unlock), ursa or glibc; prints round trips a second and context switches per round trip. Not built by make: gcc -O2 -pthread -Iinclude bench/looks/cpp.c -Lbuild/lib/.libs -lursa, or against a scratch copy. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include <ursa.h>
static ursa_mutex_t um; static ursa_cond_t uc[2]; static pthread_mutex_t pm = PTHREAD_MUTEX_INITIALIZER; static pthread_cond_t pc[2] = {PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER};
static int impl, turn; static long N;
static void pass(int to) { if (impl) { ursa_mutex_lock(&um); turn = to; ursa_cond_signal(&uc[to]); ursa_mutex_unlock(&um); } else { pthread_mutex_lock(&pm); turn = to; pthread_cond_signal(&pc[to]); pthread_mutex_unlock(&pm); } }
static void wait_(int me) { if (impl) { ursa_mutex_lock(&um); while (turn != me) ursa_cond_wait(&uc[me], &um); ursa_mutex_unlock(&um); } else { pthread_mutex_lock(&pm); while (turn != me) pthread_cond_wait(&pc[me], &pm); pthread_mutex_unlock(&pm); } }
static void *b(void *a) { (void)a; for (long i = 0; i < N; i++) { wait_(1); pass(0); } return 0; }
int main(int c, char **v) { impl = !strcmp(v[1], "ursa"); N = atol(v[2]); ursa_mutex_init(&um, 0); ursa_cond_init(&uc[0], 0); ursa_cond_init(&uc[1], 0);
 struct timespec a, e; struct rusage r0, r1; getrusage(RUSAGE_SELF, &r0); clock_gettime(CLOCK_MONOTONIC, &a);
 pthread_t t; pthread_create(&t, 0, b, 0);
 for (long i = 0; i < N; i++) { pass(1); wait_(0); }
 pthread_join(t, 0); clock_gettime(CLOCK_MONOTONIC, &e); getrusage(RUSAGE_SELF, &r1);
 double el = (e.tv_sec - a.tv_sec) + (e.tv_nsec - a.tv_nsec) / 1e9;
 printf("%s rt/s=%.0f us/rt=%.2f cs/rt=%.2f\n", v[1], N / el, el * 1e6 / N, (double)(r1.ru_nvcsw + r1.ru_nivcsw - r0.ru_nvcsw - r0.ru_nivcsw) / N);
 return 0; }
