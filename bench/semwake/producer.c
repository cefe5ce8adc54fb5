/* bench/semwake/producer.c — scratch (not built by make): 1 producer posts one counting
 * semaphore (N loop turns of work per post), C consumers wait on it (M turns of work per
 * item). Prints items/s. usage: producer C SECONDS N M
 * cc -O2 -pthread -Iinclude bench/semwake/producer.c -o producer -Lbuild/lib/.libs -lursa */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <ursa.h>
static ursa_sem_t s; static volatile int stop; static int N, M; static unsigned long got[64];
static void *cons(void *a){ long id=(long)a; unsigned long n=0; struct timespec dl;
 while(!stop){ clock_gettime(CLOCK_MONOTONIC,&dl); dl.tv_nsec+=1000000; if(dl.tv_nsec>=1000000000L){dl.tv_nsec-=1000000000L;dl.tv_sec++;}
  if (ursa_sem_timedwait(&s, CLOCK_MONOTONIC, &dl)==0){ n++; for(int i=0;i<M;i++) __asm__ volatile("":::"memory"); } }
 got[id]=n; return 0; }
int main(int c, char **v){ int C=atoi(v[1]); double d=atof(v[2]); N=atoi(v[3]); M=atoi(v[4]); ursa_sem_init(&s,0,0);
 pthread_t t[64]; for(long i=0;i<C;i++) pthread_create(&t[i],0,cons,(void*)i);
 struct timespec a,b; clock_gettime(CLOCK_MONOTONIC,&a); unsigned long posts=0;
 for(;;){ ursa_sem_post(&s); posts++; for(int i=0;i<N;i++) __asm__ volatile("":::"memory");
  if((posts&1023)==0){ clock_gettime(CLOCK_MONOTONIC,&b); if((b.tv_sec-a.tv_sec)+(b.tv_nsec-a.tv_nsec)/1e9>=d) break; } }
 stop=1; for(int i=0;i<C;i++) ursa_sem_post(&s); unsigned long tot=0; for(int i=0;i<C;i++){ pthread_join(t[i],0); tot+=got[i]; }
 printf("C=%d items/s=%.0f posts/s=%.0f\n", C, tot/d, posts/d); return 0; }
