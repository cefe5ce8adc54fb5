#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sched.h>
#include <ursa.h>
static ursa_mutex_t um; static pthread_mutex_t pm = PTHREAD_MUTEX_INITIALIZER;
static int impl, cs; static volatile int stop, go; static unsigned long counts[1024];
static volatile unsigned long shared_ctr;
static void section(void){ if (cs==1){ for (volatile int i=0;i<30;i++); } else if (cs==2) { for (volatile int i=0;i<300;i++); } else if (cs==3) sched_yield(); else if (cs==4) { for (volatile int i=0;i<1100;i++); } shared_ctr++; }
static void *thr(void *a){ long id=(long)a; unsigned long n=0; while(!go); while(!stop){ for(int k=0;k<64;k++){ if(impl) {ursa_mutex_lock(&um); section(); ursa_mutex_unlock(&um);} else {pthread_mutex_lock(&pm); section(); pthread_mutex_unlock(&pm);} } n+=64; } counts[id]=n; return 0; }
int main(int c,char**v){ impl=!strcmp(v[1],"ursa"); int T=atoi(v[2]); cs=atoi(v[3]); double d=atof(v[4]); ursa_mutex_init(&um,0);
 pthread_t t[1024]; for(long i=0;i<T;i++) pthread_create(&t[i],0,thr,(void*)i);
 struct timespec a,b; clock_gettime(CLOCK_MONOTONIC,&a); go=1; struct timespec s={ (time_t)d, (long)((d-(time_t)d)*1e9)}; nanosleep(&s,0); stop=1; clock_gettime(CLOCK_MONOTONIC,&b);
 unsigned long tot=0,mn=~0ul; for(int i=0;i<T;i++){ pthread_join(t[i],0); tot+=counts[i]; if(counts[i]<mn) mn=counts[i]; }
 double el=(b.tv_sec-a.tv_sec)+(b.tv_nsec-a.tv_nsec)/1e9; if (tot!=shared_ctr) { fprintf(stderr,"MUTUAL EXCLUSION BROKEN\n"); return 1; }
 printf("%s T=%d cs=%d ops/s=%.0f minshare=%.2f\n", v[1], T, cs, tot/el, (double)mn*T/tot); return 0; }
