#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <time.h>
#include <sched.h>
#include <pthread.h>
static double now(){struct timespec t; clock_gettime(CLOCK_MONOTONIC,&t); return t.tv_sec+t.tv_nsec/1e9;}
__attribute__((noinline)) void w0(uint32_t n){ for (volatile uint32_t i=0;i<n;i++); }
__attribute__((noinline)) void w2(uint32_t n){ for (uint32_t i=0;i<n;i++) __asm__ volatile("":::"memory"); }
static volatile int stop;
static void *other(void *a){ (void)a; while(!stop) sched_yield(); return 0; }
int main(int c,char**v){ int every=atoi(v[1]); int mode=atoi(v[2]); cpu_set_t s; CPU_ZERO(&s); CPU_SET(0,&s); sched_setaffinity(0,sizeof s,&s);
 pthread_t t; pthread_create(&t,0,other,0); 
 int N=20000; double sum=0; uint32_t n=1000;
 for(int r=0;r<N;r++){ if (every && r%every==0) sched_yield(); double t0=now(); if(mode==0) w0(n); else w2(n); sum+=now()-t0; }
 stop=1; pthread_join(t,0);
 printf("yield every %d chunks, mode %d: mean ns/iter %.3f\n", every, mode, sum/N*1e9/n); }
