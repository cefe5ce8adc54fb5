/* bench/polls/yield.c — scratch (not built by make): T threads lock one mutex
 * (glibc, ursa or nsync), call sched_yield() inside, unlock; prints ops/s,
 * the least-served share, how often the owner and its CPU change, and the
 * share and cost of the holder's yields that switched. See README.md. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <time.h>
#include <sched.h>
#include <ursa.h>
#include <nsync.h>
static ursa_mutex_t um __attribute__((aligned(64))); static pthread_mutex_t pm __attribute__((aligned(64))) = PTHREAD_MUTEX_INITIALIZER;
static nsync_mu nm __attribute__((aligned(64)));
static int impl; static volatile int stop __attribute__((aligned(64))); static pthread_barrier_t bar;
static unsigned long counts[1024]; static long last_owner=-1; static int last_cpu=-1; static unsigned long changes, cpuchanges; static unsigned long slowy[1024]; static uint64_t ytime[1024];
static void *thr(void *a){ long id=(long)a; unsigned long n=0; pthread_barrier_wait(&bar);
 for (;;){
  if(impl==1) ursa_mutex_lock(&um); else if (impl==2) nsync_mu_lock(&nm); else pthread_mutex_lock(&pm);
  if (last_owner!=id){changes++; last_owner=id;} { int c=sched_getcpu(); if (c!=last_cpu){cpuchanges++; last_cpu=c;} }
  { uint64_t t0=__builtin_ia32_rdtsc(); sched_yield(); uint64_t dt=__builtin_ia32_rdtsc()-t0; ytime[id]+=dt; if (dt>5000) slowy[id]++; }
  if(impl==1) ursa_mutex_unlock(&um); else if (impl==2) nsync_mu_unlock(&nm); else pthread_mutex_unlock(&pm);
  if (__atomic_load_n(&stop, __ATOMIC_RELAXED)) break; n++; }
 counts[id]=n; return 0; }
int main(int c,char**v){ impl=!strcmp(v[1],"ursa")?1:!strcmp(v[1],"nsync")?2:0; int T=atoi(v[2]); double d=atof(v[3]); ursa_mutex_init(&um,0); nsync_mu_init(&nm);
 pthread_barrier_init(&bar,0,T+1);
 pthread_t t[1024]; for(long i=0;i<T;i++) pthread_create(&t[i],0,thr,(void*)i);
 pthread_barrier_wait(&bar);
 struct timespec a,b; clock_gettime(CLOCK_MONOTONIC,&a); struct timespec s={ (time_t)d, (long)((d-(time_t)d)*1e9)}; nanosleep(&s,0); stop=1; clock_gettime(CLOCK_MONOTONIC,&b);
 unsigned long tot=0,mn=~0ul,sy=0; uint64_t yt=0; for(int i=0;i<T;i++){ pthread_join(t[i],0); tot+=counts[i]; sy+=slowy[i]; yt+=ytime[i]; if(counts[i]<mn) mn=counts[i]; }
 double el=(b.tv_sec-a.tv_sec)+(b.tv_nsec-a.tv_nsec)/1e9;
 printf("%s T=%d ops/s=%.0f minshare=%.2f owner-changes/s=%.0f cpu-changes/s=%.0f slowyield/op=%.3f yieldcyc/op=%.0f\n", v[1], T, tot/el, (double)mn*T/tot, changes/el, cpuchanges/el, (double)sy/tot, (double)yt/tot); return 0; }
