/* bench/rwphase/rw.c — T threads on one rwlock (glibc's, ursa's or nsync's
 * nsync_mu), each operation a read or a write lock chosen at random with
 * WRITE% writes; the section a sched_yield() (ITER absent or -1) or ITER
 * turns of a register loop. Prints ops/s and the least-served thread's
 * share. Usage: rw glibc|ursa|nsync THREADS WRITE% SECONDS [ITER]
 * (bench/rwphase/README.md). */
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
static ursa_rwlock_t ul __attribute__((aligned(64))); static pthread_rwlock_t pl __attribute__((aligned(64))) = PTHREAD_RWLOCK_INITIALIZER;
static nsync_mu nl __attribute__((aligned(64))) = NSYNC_MU_INIT;
static int impl, wpct, yieldcs, csn; static volatile int stop __attribute__((aligned(64))); static pthread_barrier_t bar;
static unsigned long counts[1024];
static void *thr(void *a){ long id=(long)a; unsigned long n=0; uint64_t x = 0x9e3779b97f4a7c15ull*(id+1); pthread_barrier_wait(&bar);
 for (;;){ x ^= x<<13; x^= x>>7; x^= x<<17; int w = (x % 100) < (uint64_t)wpct;
  if (impl==1) { if (w) ursa_rwlock_wrlock(&ul); else ursa_rwlock_rdlock(&ul); }
  else if (impl==2) { if (w) nsync_mu_lock(&nl); else nsync_mu_rlock(&nl); }
  else { if (w) pthread_rwlock_wrlock(&pl); else pthread_rwlock_rdlock(&pl); }
  if (yieldcs) sched_yield(); else for (int i=0;i<csn;i++) __asm__ volatile("" ::: "memory");
  if (impl==1) { if (w) ursa_rwlock_wrunlock(&ul); else ursa_rwlock_rdunlock(&ul); }
  else if (impl==2) { if (w) nsync_mu_unlock(&nl); else nsync_mu_runlock(&nl); }
  else pthread_rwlock_unlock(&pl);
  if (__atomic_load_n(&stop, __ATOMIC_RELAXED)) break; n++; }
 counts[id]=n; return 0; }
int main(int c,char**v){ impl=!strcmp(v[1],"ursa")?1:!strcmp(v[1],"nsync")?2:0; int T=atoi(v[2]); wpct=atoi(v[3]); double d=atof(v[4]); csn = c>5 ? atoi(v[5]) : -1; yieldcs = csn < 0; ursa_rwlock_init(&ul,0);
 pthread_barrier_init(&bar,0,T+1);
 pthread_t t[1024]; for(long i=0;i<T;i++) pthread_create(&t[i],0,thr,(void*)i);
 pthread_barrier_wait(&bar);
 struct timespec a,b; clock_gettime(CLOCK_MONOTONIC,&a); struct timespec s={ (time_t)d, (long)((d-(time_t)d)*1e9)}; nanosleep(&s,0); stop=1; clock_gettime(CLOCK_MONOTONIC,&b);
 unsigned long tot=0,mn=~0ul; for(int i=0;i<T;i++){ pthread_join(t[i],0); tot+=counts[i]; if(counts[i]<mn) mn=counts[i]; }
 double el=(b.tv_sec-a.tv_sec)+(b.tv_nsec-a.tv_nsec)/1e9;
 printf("%s T=%d w%%=%d ops/s=%.0f minshare=%.2f\n", v[1], T, wpct, tot/el, (double)mn*T/tot); return 0; }
