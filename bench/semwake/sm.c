#define _GNU_SOURCE
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <time.h>
#include <sched.h>
#include <sys/resource.h>
#include <ursa.h>
static ursa_sem_t us; static sem_t ps; static int impl; static uint32_t iters; static volatile int stop; static pthread_barrier_t bar; static unsigned long counts[1024];
static void *thr(void *a){ long id=(long)a; unsigned long n=0; pthread_barrier_wait(&bar);
 while(!stop){ if(impl) ursa_sem_wait(&us); else sem_wait(&ps); for (uint32_t i=0;i<iters;i++) __asm__ volatile("" ::: "memory"); if(impl) ursa_sem_post(&us); else sem_post(&ps); n++; }
 counts[id]=n; return 0; }
int main(int c,char**v){ impl=!strcmp(v[1],"ursa"); int T=atoi(v[2]); iters=atoi(v[3]); double d=atof(v[4]); ursa_sem_init(&us,1,0); sem_init(&ps,0,1);
 pthread_barrier_init(&bar,0,T+1); pthread_t t[1024]; for(long i=0;i<T;i++) pthread_create(&t[i],0,thr,(void*)i);
 pthread_barrier_wait(&bar); struct rusage r0,r1; getrusage(RUSAGE_SELF,&r0);
 struct timespec a,b; clock_gettime(CLOCK_MONOTONIC,&a); struct timespec s={ (time_t)d, (long)((d-(time_t)d)*1e9)}; nanosleep(&s,0); stop=1; clock_gettime(CLOCK_MONOTONIC,&b); getrusage(RUSAGE_SELF,&r1);
 unsigned long tot=0,mn=~0ul; for(int i=0;i<T;i++){ pthread_join(t[i],0); tot+=counts[i]; if(counts[i]<mn) mn=counts[i]; }
 double el=(b.tv_sec-a.tv_sec)+(b.tv_nsec-a.tv_nsec)/1e9;
 double cpu=(r1.ru_utime.tv_sec-r0.ru_utime.tv_sec)+(r1.ru_stime.tv_sec-r0.ru_stime.tv_sec)+((r1.ru_utime.tv_usec-r0.ru_utime.tv_usec)+(r1.ru_stime.tv_usec-r0.ru_stime.tv_usec))/1e6;
 printf("%s T=%d ops/s=%.0f minshare=%.2f cpu/s=%.2f cs/s=%.0f\n", v[1], T, tot/el, (double)mn*T/tot, cpu/el, (double)(r1.ru_nvcsw-r0.ru_nvcsw+r1.ru_nivcsw-r0.ru_nivcsw)/el); return 0; }
