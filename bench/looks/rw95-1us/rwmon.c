/* bench/looks/rw95-1us/rwmon.c — bench/rwphase/rw.c with a monitor
 * thread: every ~200 us (nanosleep) it samples how many workers are inside
 * a write-lock call, the lock's state (free / read-held / write-held /
 * handed, READERS_WAITING), and how many of the process's threads are
 * running (R in /proc/self/task/N/stat, less the monitor). Prints, per
 * number of writers inside a lock call, how often each state and each
 * count of running threads was seen. Scratch; not built by make.
 *   gcc -O2 -pthread -Iinclude -Ibuild/include bench/looks/rw95-1us/rwmon.c \
 *     -o rwmon -Lbuild/lib/.libs -lursa -lnsync
 *   rwmon ursa|glibc|nsync THREADS WRITE% SECONDS [ITER]
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
static unsigned long rh[64][8];
#include <nsync.h>
#include <ursa.h>
static ursa_rwlock_t ul __attribute__((aligned(64)));
static pthread_rwlock_t pl __attribute__((aligned(64))) = PTHREAD_RWLOCK_INITIALIZER;
static nsync_mu nl __attribute__((aligned(64))) = NSYNC_MU_INIT;
static int impl, wpct, yieldcs, csn;
static volatile int stop __attribute__((aligned(64)));
static pthread_barrier_t bar;
static unsigned long counts[1024];
static int inlock_r, inlock_w;
static unsigned long hist[64][2][4];
static void *thr(void *a)
{
	long id = (long)a;
	unsigned long n = 0;
	uint64_t x = 0x9e3779b97f4a7c15ull * (id + 1);
	pthread_barrier_wait(&bar);
	for (;;) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		int w = (x % 100) < (uint64_t)wpct;
		__atomic_fetch_add(w ? &inlock_w : &inlock_r, 1, __ATOMIC_RELAXED);
		if (impl == 1) {
			if (w)
				ursa_rwlock_wrlock(&ul);
			else
				ursa_rwlock_rdlock(&ul);
		} else if (impl == 2) {
			if (w)
				nsync_mu_lock(&nl);
			else
				nsync_mu_rlock(&nl);
		} else {
			if (w)
				pthread_rwlock_wrlock(&pl);
			else
				pthread_rwlock_rdlock(&pl);
		}
		__atomic_fetch_sub(w ? &inlock_w : &inlock_r, 1, __ATOMIC_RELAXED);
		if (yieldcs)
			sched_yield();
		else
			for (int i = 0; i < csn; i++)
				__asm__ volatile("" ::: "memory");
		if (impl == 1) {
			if (w)
				ursa_rwlock_wrunlock(&ul);
			else
				ursa_rwlock_rdunlock(&ul);
		} else if (impl == 2) {
			if (w)
				nsync_mu_unlock(&nl);
			else
				nsync_mu_runlock(&nl);
		} else
			pthread_rwlock_unlock(&pl);
		if (__atomic_load_n(&stop, __ATOMIC_RELAXED))
			break;
		n++;
	}
	counts[id] = n;
	return 0;
}
static int nrun(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;
	char p[128], b[512];
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof p, "/proc/self/task/%s/stat", e->d_name);
		int fd = open(p, O_RDONLY);
		if (fd < 0)
			continue;
		int k = read(fd, b, sizeof b - 1);
		close(fd);
		if (k <= 0)
			continue;
		b[k] = 0;
		char *q = strrchr(b, ')');
		if (q && q[2] == 'R')
			n++;
	}
	closedir(d);
	return n - 1;
}
static void *mon(void *a)
{
	struct timespec t = {0, 200000};
	unsigned long n = 0;
	while (!stop) {
		nanosleep(&t, 0);
		{
			int w0 = inlock_w;
			int r = nrun();
			rh[w0 < 64 ? w0 : 63][r < 7 ? (r < 0 ? 0 : r) : 7]++;
		}
		unsigned st = __atomic_load_n(&ul.__state, __ATOMIC_RELAXED);
		int r = inlock_r, w = inlock_w;
		int cnt = st & 0x7fff;
		int ci = cnt == 0 ? 0 : cnt == 0x7fff ? 2 : cnt == 0x7ffe ? 3 : 1;
		hist[w < 64 ? w : 63][(st >> 30) & 1][ci]++;
		(void)w;
		n++;
	}
	return 0;
}
int main(int c, char **v)
{
	impl = !strcmp(v[1], "ursa") ? 1 : !strcmp(v[1], "nsync") ? 2 : 0;
	int T = atoi(v[2]);
	wpct = atoi(v[3]);
	double d = atof(v[4]);
	csn = c > 5 ? atoi(v[5]) : -1;
	yieldcs = csn < 0;
	ursa_rwlock_init(&ul, 0);
	pthread_barrier_init(&bar, 0, T + 1);
	pthread_t t[1024];
	for (long i = 0; i < T; i++)
		pthread_create(&t[i], 0, thr, (void *)i);
	pthread_barrier_wait(&bar);
	pthread_t mt;
	pthread_create(&mt, 0, mon, 0);
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	struct timespec s = {(time_t)d, (long)((d - (time_t)d) * 1e9)};
	nanosleep(&s, 0);
	stop = 1;
	clock_gettime(CLOCK_MONOTONIC, &b);
	unsigned long tot = 0, mn = ~0ul;
	for (int i = 0; i < T; i++) {
		pthread_join(t[i], 0);
		tot += counts[i];
		if (counts[i] < mn)
			mn = counts[i];
	}
	double el = (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9;
	printf("%s T=%d w%%=%d ops/s=%.0f minshare=%.2f\n", v[1], T, wpct, tot / el,
	       (double)mn * T / tot);
	pthread_join(mt, 0);
	for (int i = 0; i < 64; i++)
		for (int j = 0; j < 2; j++) {
			unsigned long x =
			    hist[i][j][0] + hist[i][j][1] + hist[i][j][2] + hist[i][j][3];
			if (x)
				printf("writers-in=%2d readers_waiting=%d: %6lu  free %lu read %lu "
				       "write %lu handed %lu\n",
				       i, j, x, hist[i][j][0], hist[i][j][1], hist[i][j][2],
				       hist[i][j][3]);
		}
	for (int i = 0; i < 64; i++) {
		unsigned long x = 0;
		for (int j = 0; j < 8; j++)
			x += rh[i][j];
		if (x) {
			printf("writers-in=%2d running:", i);
			for (int j = 0; j < 8; j++)
				printf(" %d:%lu", j, rh[i][j]);
			printf("\n");
		}
	}
	return 0;
}
