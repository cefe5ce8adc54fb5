/* bench/looks/spp.c — semaphore ping-pong: two threads, each waits on its own semaphore and posts the other's (ursa or glibc); prints round trips a second, CPU-seconds a second and context switches per round trip. Not built by make: gcc -O2 -pthread -Iinclude bench/looks/spp.c -Lbuild/lib/.libs -lursa (or against a scratch copy, as mkvar.sh builds mx). */
#define _GNU_SOURCE
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include <ursa.h>
static ursa_sem_t us[2]; static sem_t ps[2]; static int impl; static long N;
static void *thr(void *a) { long id = (long)a;
 for (long i = 0; i < N; i++) {
  if (id == 0) { if (impl) { ursa_sem_post(&us[1]); ursa_sem_wait(&us[0]); } else { sem_post(&ps[1]); sem_wait(&ps[0]); } }
  else { if (impl) { ursa_sem_wait(&us[1]); ursa_sem_post(&us[0]); } else { sem_wait(&ps[1]); sem_post(&ps[0]); } } }
 return 0; }
int main(int c, char **v) { impl = !strcmp(v[1], "ursa"); N = atol(v[2]);
 for (int i = 0; i < 2; i++) { ursa_sem_init(&us[i], 0, 0); sem_init(&ps[i], 0, 0); }
 struct timespec a, b; struct rusage r0, r1; getrusage(RUSAGE_SELF, &r0); clock_gettime(CLOCK_MONOTONIC, &a);
 pthread_t t[2]; for (long i = 0; i < 2; i++) pthread_create(&t[i], 0, thr, (void *)i);
 for (int i = 0; i < 2; i++) pthread_join(t[i], 0);
 clock_gettime(CLOCK_MONOTONIC, &b); getrusage(RUSAGE_SELF, &r1);
 double el = (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9;
 double cpu = (r1.ru_utime.tv_sec - r0.ru_utime.tv_sec + r1.ru_stime.tv_sec - r0.ru_stime.tv_sec) + (r1.ru_utime.tv_usec - r0.ru_utime.tv_usec + r1.ru_stime.tv_usec - r0.ru_stime.tv_usec) / 1e6;
 printf("%s round-trips/s=%.0f ns/rt=%.0f cpu/s=%.2f cs/rt=%.2f\n", v[1], N / el, el * 1e9 / N, cpu / el, (double)(r1.ru_nvcsw + r1.ru_nivcsw - r0.ru_nvcsw - r0.ru_nivcsw) / N);
 return 0; }
