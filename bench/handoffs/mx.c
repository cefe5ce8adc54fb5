/* SPDX-License-Identifier: MIT */
/*
 * bench/handoffs/mx.c — T threads lock one mutex (glibc, ursa, nsync or
 * absl::Mutex through bench/absl_adapter.cc), run a section and unlock:
 * the matrix's mutex point. Not built by make; see README.md here.
 *
 *   mx IMPL THREADS ITERS SECONDS [SAMPLING]
 *
 * The section is ITERS iterations of a loop on a volatile counter
 * (MX_WORK=alu: the matrix's register loop), or with MX_YIELD set one
 * sched_yield(). Prints ops/s, the least-served thread's share
 * (min x THREADS / total) and how often the owner changed (handovers/s).
 */
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
#include "absl_adapter.h"
static nsync_mu nm; static ursa_bench_absl_mu am;
static ursa_mutex_t um __attribute__((aligned(64))); static pthread_mutex_t pm __attribute__((aligned(64))) = PTHREAD_MUTEX_INITIALIZER;
static int impl; static uint32_t iters; static int sampling; static volatile int stop __attribute__((aligned(64))); static pthread_barrier_t bar;
static unsigned long counts[1024]; static uint64_t hist[1024][8];
static long last_owner=-1; static unsigned long switches; static volatile unsigned long shared_ctr __attribute__((aligned(64)));
/* MX_WORK=alu: the matrix's register loop (what "mx5" was); else a loop on
 * a volatile counter, a store and a load per iteration ("mx6"). */
static int alu; static int getenv_y;
static inline void work(uint32_t n){ if (alu) { for (uint32_t i=0;i<n;i++) __asm__ volatile("" ::: "memory"); } else { for (volatile uint32_t i=0;i<n;i++); } }
static void *thr(void *a){ long id=(long)a; unsigned long n=0; pthread_barrier_wait(&bar);
 for (uint64_t it=0;;it++){ int s = sampling && (it & 15)==0; uint64_t t0 = s ? __builtin_ia32_rdtsc() : 0;
  if(impl==1) ursa_mutex_lock(&um); else if(impl==2) nsync_mu_lock(&nm); else if(impl==3) ursa_bench_absl_lock(&am); else pthread_mutex_lock(&pm);
  if (s) hist[id][(__builtin_ia32_rdtsc()-t0) > 10000]++;
  shared_ctr++; if (last_owner!=id){last_owner=id; switches++;} if (getenv_y) sched_yield(); else work(iters);
  if(impl==1) ursa_mutex_unlock(&um); else if(impl==2) nsync_mu_unlock(&nm); else if(impl==3) ursa_bench_absl_unlock(&am); else pthread_mutex_unlock(&pm);
  if (__atomic_load_n(&stop, __ATOMIC_RELAXED)) break; n++; }
 counts[id]=n; return 0; }
int main(int c,char**v){ if (c < 5) { fprintf(stderr, "usage: mx glibc|ursa|nsync|absl THREADS ITERS SECONDS [SAMPLING]\n"); return 2; } impl=!strcmp(v[1],"ursa")?1:!strcmp(v[1],"nsync")?2:!strcmp(v[1],"absl")?3:0; nsync_mu_init(&nm); ursa_bench_absl_setup(); ursa_bench_absl_mu_init(&am); int T=atoi(v[2]); iters=atoi(v[3]); double d=atof(v[4]); sampling = c>5 ? atoi(v[5]) : 1; alu = getenv("MX_WORK") && !strcmp(getenv("MX_WORK"), "alu"); ursa_mutex_init(&um,0); getenv_y = getenv("MX_YIELD") != 0;
 pthread_barrier_init(&bar,0,T+1);
 pthread_t t[1024]; for(long i=0;i<T;i++) pthread_create(&t[i],0,thr,(void*)i);
 pthread_barrier_wait(&bar);
 struct timespec a,b; clock_gettime(CLOCK_MONOTONIC,&a); struct timespec s={ (time_t)d, (long)((d-(time_t)d)*1e9)}; nanosleep(&s,0); stop=1; clock_gettime(CLOCK_MONOTONIC,&b);
 unsigned long tot=0,mn=~0ul; for(int i=0;i<T;i++){ pthread_join(t[i],0); tot+=counts[i]; if(counts[i]<mn) mn=counts[i]; }
 double el=(b.tv_sec-a.tv_sec)+(b.tv_nsec-a.tv_nsec)/1e9;
 printf("%s T=%d iters=%u ops/s=%.0f minshare=%.2f handovers/s=%.0f\n", v[1], T, iters, tot/el, (double)mn*T/tot, switches/el); return 0; }
