/* SPDX-License-Identifier: MIT */
/*
 * tests/stress/destroy_churn.c — free an object as soon as POSIX says one
 * may, over and over, with real timing instead of tests/fault's held
 * syscalls (tests/fault/unlock_destroy.c, tests/fault/waker_destroy.c).
 *
 * Two threads per round: the waiter W waits on a fresh object (a mutex or
 * an rwlock held by the waker, a semaphore at 0, a closed latch); the
 * waker K wakes it (unlock, post, count_down) and goes straight on to the
 * next round. W, once its wait returned (and it unlocked), destroys the
 * object (which must say 0: nobody else holds or waits) and frees it: the
 * object's page becomes PROT_NONE, so a waker that still touched it after
 * W could free it dies of SIGSEGV at that access instead of writing into
 * reused memory. Pages go round-robin over a reserved range, so a freed
 * page stays inaccessible for the next NPAGES - 1 rounds. W varies how it
 * waits (blocking, with a deadline, or spinning on the try call first)
 * and K varies a short delay before its wake, so that W is sometimes
 * asleep, sometimes on its way to sleep and sometimes spinning when the
 * wake comes.
 *
 * Usage: destroy_churn [-n ROUNDS] (per kind; default 20000). Prints each
 * kind's rounds; a crash (SIGSEGV: a late access) or a non-zero exit (an
 * error from a call, destroy saying -EBUSY) is the failure.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <ursa.h>

#define NPAGES 64

enum kind { MUTEX, SEM, RWLOCK, LATCH, NKINDS };
static const char *const kind_name[NKINDS] = {"mutex", "sem", "rwlock", "latch"};

static char *pages;
static size_t page_size;
static enum kind kind;
static long rounds = 20000;

/* The round's object, handed from W to K: W publishes it (ready), K wakes
 * and takes the next one. */
static void *_Atomic ready;
static atomic_long k_done; /* rounds K has woken */

static void fail(const char *what, int r)
{
	fprintf(stderr, "destroy_churn: %s %s: %d\n", kind_name[kind], what, r);
	exit(1);
}

static uint32_t rnd(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

static void deadline(struct timespec *ts, long us)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_nsec += us * 1000;
	ts->tv_sec += ts->tv_nsec / 1000000000L;
	ts->tv_nsec %= 1000000000L;
}

/* K: for each published object, maybe a short delay, then the wake. */
static void *waker(void *arg)
{
	uint32_t seed = 0x9e3779b9u;
	(void)arg;
	for (long i = 0; i < rounds; i++) {
		void *o;
		while (!(o = atomic_exchange(&ready, NULL)))
			sched_yield();
		uint32_t d = rnd(&seed) % 8;
		if (d == 1)
			sched_yield();
		else if (d == 2)
			usleep(20);
		else if (d >= 3)
			for (volatile unsigned j = 0; j < (d << 6); j++)
				;
		int r;
		switch (kind) {
		case MUTEX:
			r = ursa_mutex_unlock(o);
			break;
		case SEM:
			r = ursa_sem_post(o);
			break;
		case RWLOCK:
			r = ursa_rwlock_wrunlock(o);
			break;
		default:
			r = ursa_latch_count_down(o, 1);
			break;
		}
		if (r)
			fail("wake", r);
		atomic_fetch_add(&k_done, 1);
	}
	return NULL;
}

/* W's wait: blocking, timed (retried on -ETIMEDOUT), or try first. */
static int wait_on(void *o, uint32_t how)
{
	struct timespec ts;
	for (;;) {
		int r;
		deadline(&ts, 50 + how % 200);
		switch (kind) {
		case MUTEX:
			r = how & 1 ? ursa_mutex_timedlock(o, CLOCK_MONOTONIC, &ts)
				    : ursa_mutex_lock(o);
			if (r == 0)
				r = ursa_mutex_unlock(o);
			break;
		case SEM:
			r = how & 1 ? ursa_sem_timedwait(o, CLOCK_MONOTONIC, &ts)
				    : ursa_sem_wait(o);
			break;
		case RWLOCK:
			r = how & 1 ? ursa_rwlock_timedwrlock(o, CLOCK_MONOTONIC, &ts)
				    : ursa_rwlock_wrlock(o);
			if (r == 0)
				r = ursa_rwlock_wrunlock(o);
			break;
		default:
			r = how & 1 ? ursa_latch_timedwait(o, CLOCK_MONOTONIC, &ts)
				    : ursa_latch_wait(o);
			break;
		}
		if (r != -ETIMEDOUT)
			return r;
	}
}

static int destroy(void *o)
{
	switch (kind) {
	case MUTEX:
		return ursa_mutex_destroy(o);
	case SEM:
		return ursa_sem_destroy(o);
	case RWLOCK:
		return ursa_rwlock_destroy(o);
	default:
		return ursa_latch_destroy(o);
	}
}

static void run_kind(enum kind k)
{
	kind = k;
	atomic_store(&k_done, 0);
	uint32_t seed = 0x2545f491u + k;
	pthread_t t;
	if (pthread_create(&t, NULL, waker, NULL))
		fail("pthread_create", errno);
	for (long i = 0; i < rounds; i++) {
		char *page = pages + (size_t)(i % NPAGES) * page_size;
		if (mprotect(page, page_size, PROT_READ | PROT_WRITE))
			fail("mprotect", errno);
		void *o = page;
		uint32_t how = rnd(&seed);
		unsigned flags = how & 2 ? URSA_SHARED : 0;
		int r;
		switch (k) {
		case MUTEX:
			r = ursa_mutex_init(o, flags);
			if (!r)
				r = ursa_mutex_lock(o); /* K's to unlock */
			break;
		case SEM:
			r = ursa_sem_init(o, 0, flags);
			break;
		case RWLOCK:
			r = ursa_rwlock_init(o, flags);
			if (!r)
				r = ursa_rwlock_wrlock(o);
			break;
		default:
			r = ursa_latch_init(o, 1, flags);
			break;
		}
		if (r)
			fail("init", r);
		atomic_store(&ready, o);
		if ((r = wait_on(o, how >> 2)))
			fail("wait", r);
		if ((r = destroy(o)))
			fail("destroy", r);
		/* Free: the page is inaccessible until its next turn. */
		if (madvise(page, page_size, MADV_DONTNEED) || mprotect(page, page_size, PROT_NONE))
			fail("free", errno);
	}
	if (pthread_join(t, NULL))
		fail("pthread_join", errno);
	printf("%-7s %ld rounds, every destroy 0, no access after it\n", kind_name[k],
	       atomic_load(&k_done));
}

int main(int argc, char **argv)
{
	int c;
	while ((c = getopt(argc, argv, "n:")) != -1) {
		if (c != 'n' || (rounds = atol(optarg)) <= 0) {
			fprintf(stderr, "usage: %s [-n ROUNDS]\n", argv[0]);
			return 2;
		}
	}
	page_size = (size_t)sysconf(_SC_PAGESIZE);
	pages = mmap(NULL, NPAGES * page_size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (pages == MAP_FAILED)
		fail("mmap", errno);
	for (enum kind k = 0; k < NKINDS; k++)
		run_kind(k);
	return 0;
}
