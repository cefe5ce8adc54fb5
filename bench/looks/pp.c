#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <time.h>
#include <stdatomic.h>
static _Alignas(64) atomic_int flag;
#define N 2000000
static void pin(int c){cpu_set_t s;CPU_ZERO(&s);CPU_SET(c,&s);pthread_setaffinity_np(pthread_self(),sizeof s,&s);}
static void *other(void *a){pin(1);for(int i=0;i<N;i++){while(atomic_load_explicit(&flag,memory_order_acquire)!=2*i+1);atomic_store_explicit(&flag,2*i+2,memory_order_release);}return 0;}
int main(){pthread_t t;pin(0);pthread_create(&t,0,other,0);struct timespec a,b;clock_gettime(CLOCK_MONOTONIC,&a);
for(int i=0;i<N;i++){atomic_store_explicit(&flag,2*i+1,memory_order_release);while(atomic_load_explicit(&flag,memory_order_acquire)!=2*i+2);}
clock_gettime(CLOCK_MONOTONIC,&b);pthread_join(t,0);printf("round trip %.1f ns\n",((b.tv_sec-a.tv_sec)*1e9+(b.tv_nsec-a.tv_nsec))/N);
/* pause cost */
clock_gettime(CLOCK_MONOTONIC,&a);for(int i=0;i<1000000;i++)__builtin_ia32_pause();clock_gettime(CLOCK_MONOTONIC,&b);
printf("pause %.1f ns\n",((b.tv_sec-a.tv_sec)*1e9+(b.tv_nsec-a.tv_nsec))/1e6);
clock_gettime(CLOCK_MONOTONIC,&a);for(int i=0;i<200000;i++)sched_yield();clock_gettime(CLOCK_MONOTONIC,&b);
printf("sched_yield alone %.1f ns\n",((b.tv_sec-a.tv_sec)*1e9+(b.tv_nsec-a.tv_nsec))/2e5);
}
