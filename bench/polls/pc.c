/* bench/polls/pc.c — scratch (not built by make): the matrix's condvar
 * producer/consumer (16-slot queue, mutex + 2 condvars, signal under the
 * mutex, sched_yield() in the section), glibc or ursa; prints items/s and
 * the CPU seconds used per second. See README.md. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <time.h>
#include <sched.h>
#include <sys/resource.h>
#include <ursa.h>
#define QCAP 16
static int impl; static volatile int stop; static pthread_barrier_t bar;
static ursa_mutex_t um; static ursa_cond_t une, unf; static pthread_mutex_t pm = PTHREAD_MUTEX_INITIALIZER; static pthread_cond_t pne = PTHREAD_COND_INITIALIZER, pnf = PTHREAD_COND_INITIALIZER;
static int count, qstop; static unsigned long counts[1024];
#define LK() (impl ? ursa_mutex_lock(&um) : pthread_mutex_lock(&pm))
#define UL() (impl ? ursa_mutex_unlock(&um) : pthread_mutex_unlock(&pm))
#define WT(u,p) (impl ? ursa_cond_wait(u,&um) : pthread_cond_wait(p,&pm))
#define SG(u,p) (impl ? ursa_cond_signal(u) : pthread_cond_signal(p))
#define BC(u,p) (impl ? ursa_cond_broadcast(u) : pthread_cond_broadcast(p))
static void *thr(void *a){ long id=(long)a; int prod = id%2==0; unsigned long n=0; pthread_barrier_wait(&bar);
 for(;;){ LK(); if (prod) while (count==QCAP && !qstop) WT(&unf,&pnf); else while (count==0 && !qstop) WT(&une,&pne);
  if (qstop) { UL(); break; }
  if (prod) { count++; sched_yield(); SG(&une,&pne); } else { count--; sched_yield(); SG(&unf,&pnf); }
  UL(); n++; }
 counts[id]=n; return 0; }
int main(int c,char**v){ impl=!strcmp(v[1],"ursa"); int T=atoi(v[2]); double d=atof(v[3]); ursa_mutex_init(&um,0); ursa_cond_init(&une,0); ursa_cond_init(&unf,0);
 pthread_barrier_init(&bar,0,T+1); pthread_t t[1024]; for(long i=0;i<T;i++) pthread_create(&t[i],0,thr,(void*)i);
 pthread_barrier_wait(&bar); struct rusage r0,r1; getrusage(RUSAGE_SELF,&r0);
 struct timespec a,b; clock_gettime(CLOCK_MONOTONIC,&a); struct timespec s={ (time_t)d, (long)((d-(time_t)d)*1e9)}; nanosleep(&s,0);
 LK(); qstop=1; BC(&une,&pne); BC(&unf,&pnf); UL(); clock_gettime(CLOCK_MONOTONIC,&b); getrusage(RUSAGE_SELF,&r1);
 unsigned long tot=0; for(int i=0;i<T;i++){ pthread_join(t[i],0); if (i%2) tot+=counts[i]; }
 double el=(b.tv_sec-a.tv_sec)+(b.tv_nsec-a.tv_nsec)/1e9;
 double cpu=(r1.ru_utime.tv_sec-r0.ru_utime.tv_sec)+(r1.ru_stime.tv_sec-r0.ru_stime.tv_sec)+((r1.ru_utime.tv_usec-r0.ru_utime.tv_usec)+(r1.ru_stime.tv_usec-r0.ru_stime.tv_usec))/1e6;
 printf("%s T=%d ops/s=%.0f cpu/s=%.2f vcs/op=%.3f ivcs/op=%.3f\n", v[1], T, tot/el, cpu/el, (double)(r1.ru_nvcsw-r0.ru_nvcsw)/tot, (double)(r1.ru_nivcsw-r0.ru_nivcsw)/tot); return 0; }
