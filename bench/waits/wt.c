/* bench/waits/wt.c — scratch (not built by make): T threads lock one mutex (glibc or
 * ursa), the section a counter increment and N turns of an empty loop (300: about
 * 100 ns here), nothing outside. Every 16th acquisition is timed with the TSC
 * (2.3 GHz here); prints ops/s, the least-served share, the p99 wait and the share
 * of timed acquisitions that waited over 5 us. usage: wt glibc|ursa T SECONDS N */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <time.h>
#include <ursa.h>
static ursa_mutex_t um __attribute__((aligned(64))); static pthread_mutex_t pm __attribute__((aligned(64))) = PTHREAD_MUTEX_INITIALIZER;
static int impl, csn; static volatile int stop __attribute__((aligned(64))); static pthread_barrier_t bar;
static unsigned long counts[256]; static uint64_t *samp[256]; static unsigned long ns_[256];
static volatile unsigned long shared_ctr;
static void *thr(void *a){ long id=(long)a; unsigned long n=0; samp[id]=malloc(sizeof(uint64_t)*(1<<22)); pthread_barrier_wait(&bar);
 for (;;){ uint64_t t0 = (n & 15) == 0 ? __builtin_ia32_rdtsc() : 0;
  if(impl) ursa_mutex_lock(&um); else pthread_mutex_lock(&pm);
  if ((n & 15) == 0 && ns_[id] < (1u<<22)) samp[id][ns_[id]++] = __builtin_ia32_rdtsc() - t0;
  shared_ctr++; for (int i=0;i<csn;i++) __asm__ volatile("" ::: "memory");
  if(impl) ursa_mutex_unlock(&um); else pthread_mutex_unlock(&pm);
  if (stop) break; n++; }
 counts[id]=n; return 0; }
static int cmpu(const void*a,const void*b){uint64_t x=*(uint64_t*)a,y=*(uint64_t*)b;return x<y?-1:x>y;}
int main(int c,char**v){ impl=!strcmp(v[1],"ursa"); int T=atoi(v[2]); double d=atof(v[3]); csn=atoi(v[4]); ursa_mutex_init(&um,0);
 pthread_barrier_init(&bar,0,T+1); pthread_t t[256]; for(long i=0;i<T;i++) pthread_create(&t[i],0,thr,(void*)i);
 pthread_barrier_wait(&bar); struct timespec s={(time_t)d,(long)((d-(time_t)d)*1e9)}; nanosleep(&s,0); stop=1;
 unsigned long tot=0,mn=~0ul,ns=0; for(int i=0;i<T;i++){ pthread_join(t[i],0); tot+=counts[i]; if(counts[i]<mn)mn=counts[i]; ns+=ns_[i]; }
 uint64_t *all=malloc(ns*8); unsigned long k=0,over=0; for(int i=0;i<T;i++) for(unsigned long j=0;j<ns_[i];j++){ all[k++]=samp[i][j]; if (samp[i][j] > 5*2300) over++; }
 qsort(all,ns,8,cmpu);
 printf("%s T=%d ops/s=%.0f minshare=%.2f p99us=%.2f waited>5us=%.4f\n", v[1], T, tot/d, (double)mn*T/tot, all[(size_t)(ns*0.99)]/2300.0, (double)over/ns); return 0; }
