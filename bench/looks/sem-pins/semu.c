#define _GNU_SOURCE
#include <ursa/sem.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static void *idle(void *a){(void)a;for(;;)pause();return NULL;}
int main(int argc,char**argv){
  if(argc>1){pthread_t t;pthread_create(&t,NULL,idle,NULL);}
  ursa_sem_t s; ursa_sem_init(&s,0,0);
  long n=20000000; double best=1e9;
  for(int r=0;r<5;r++){double t0=now();
   for(long i=0;i<n;i++){ursa_sem_post(&s);ursa_sem_trywait(&s);}
   double d=(now()-t0)/n*1e9; if(d<best)best=d;}
  printf("%.2f\n",best); return 0;}
