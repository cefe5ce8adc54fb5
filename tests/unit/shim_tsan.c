/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/shim_tsan.c — the shim's contended paths in plain C, for
 * ThreadSanitizer (Criterion cannot run under it) and for every other build.
 *
 * The functions are taken from the shim's own handle with dlsym, so that a
 * sanitizer's pthread interceptors (which sit in the executable, and under
 * TSan would send condvars to glibc) are bypassed: TSan then sees the shim's
 * (instrumented) atomics as the only synchronisation, and reports a race on
 * the plain, unprotected-looking data below if the shim's acquire/release
 * is wrong anywhere. Exits 0 when all rounds pass; extra arguments (the test
 * driver's) are ignored.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define THREADS 4
#define ITERS 20000

static struct {
	int (*mutex_init)(pthread_mutex_t *, const pthread_mutexattr_t *);
	int (*mutex_lock)(pthread_mutex_t *);
	int (*mutex_trylock)(pthread_mutex_t *);
	int (*mutex_unlock)(pthread_mutex_t *);
	int (*cond_wait)(pthread_cond_t *, pthread_mutex_t *);
	int (*cond_signal)(pthread_cond_t *);
	int (*cond_broadcast)(pthread_cond_t *);
	int (*rw_init)(pthread_rwlock_t *, const pthread_rwlockattr_t *);
	int (*rw_rdlock)(pthread_rwlock_t *);
	int (*rw_wrlock)(pthread_rwlock_t *);
	int (*rw_unlock)(pthread_rwlock_t *);
	int (*sem_init)(sem_t *, int, unsigned);
	int (*sem_wait)(sem_t *);
	int (*sem_post)(sem_t *);
} f;

static void die(const char *what)
{
	fprintf(stderr, "shim_tsan: %s\n", what);
	exit(1);
}

static void *sym(void *h, const char *name)
{
	Dl_info info;
	void *p = dlsym(h, name);
	if (!p || !dladdr(p, &info) || !strstr(info.dli_fname, "libursa-pthread"))
		die(name);
	return p;
}

static void load(void)
{
	void *h = dlopen("libursa-pthread.so.0", RTLD_NOW | RTLD_NOLOAD);
	if (!h)
		die("the shim is not loaded");
	f.mutex_init = sym(h, "pthread_mutex_init");
	f.mutex_lock = sym(h, "pthread_mutex_lock");
	f.mutex_trylock = sym(h, "pthread_mutex_trylock");
	f.mutex_unlock = sym(h, "pthread_mutex_unlock");
	f.cond_wait = sym(h, "pthread_cond_wait");
	f.cond_signal = sym(h, "pthread_cond_signal");
	f.cond_broadcast = sym(h, "pthread_cond_broadcast");
	f.rw_init = sym(h, "pthread_rwlock_init");
	f.rw_rdlock = sym(h, "pthread_rwlock_rdlock");
	f.rw_wrlock = sym(h, "pthread_rwlock_wrlock");
	f.rw_unlock = sym(h, "pthread_rwlock_unlock");
	f.sem_init = sym(h, "sem_init");
	f.sem_wait = sym(h, "sem_wait");
	f.sem_post = sym(h, "sem_post");
}

static void run(void *(*fn)(void *), void *arg)
{
	pthread_t t[THREADS];
	for (int i = 0; i < THREADS; i++)
		if (pthread_create(&t[i], NULL, fn, arg))
			die("pthread_create");
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
}

/* ---- mutexes: a plain counter under each kind ---- */

static pthread_mutex_t m;
static int m_type;
static long counter; /* plain: the mutex is its only protection */

static void *mutex_fn(void *arg)
{
	(void)arg;
	for (int i = 0; i < ITERS; i++) {
		if (i % 5 ? f.mutex_lock(&m) : (f.mutex_trylock(&m) ? f.mutex_lock(&m) : 0))
			die("lock");
		if (m_type == PTHREAD_MUTEX_RECURSIVE && f.mutex_lock(&m))
			die("relock");
		counter++;
		if (m_type == PTHREAD_MUTEX_RECURSIVE && f.mutex_unlock(&m))
			die("unlock inner");
		if (f.mutex_unlock(&m))
			die("unlock");
	}
	return NULL;
}

static void mutexes(void)
{
	int types[] = {PTHREAD_MUTEX_NORMAL, PTHREAD_MUTEX_RECURSIVE, PTHREAD_MUTEX_ERRORCHECK,
		       PTHREAD_MUTEX_ADAPTIVE_NP};
	for (int k = 0; k < 4; k++) {
		pthread_mutexattr_t a;
		pthread_mutexattr_init(&a);
		pthread_mutexattr_settype(&a, types[k]);
		f.mutex_init(&m, &a);
		m_type = types[k];
		counter = 0;
		run(mutex_fn, NULL);
		if (counter != (long)THREADS * ITERS)
			die("mutex: lost increments");
	}
	printf("shim_tsan: mutexes ok\n");
}

/* ---- condvar: a bounded queue of plain ints ---- */

#define SLOTS 4
static pthread_cond_t not_empty = PTHREAD_COND_INITIALIZER;
static pthread_cond_t not_full = PTHREAD_COND_INITIALIZER;
static pthread_mutex_t qm = PTHREAD_MUTEX_INITIALIZER;
static int buf[SLOTS], n, head, tail, consumed;
static long sum_in, sum_out;

static void *producer(void *arg)
{
	(void)arg;
	for (int i = 1; i <= ITERS; i++) {
		f.mutex_lock(&qm);
		while (n == SLOTS)
			f.cond_wait(&not_full, &qm);
		buf[tail] = i;
		tail = (tail + 1) % SLOTS;
		n++;
		sum_in += i;
		(i & 1 ? f.cond_signal : f.cond_broadcast)(&not_empty);
		f.mutex_unlock(&qm);
	}
	return NULL;
}

static void *consumer(void *arg)
{
	(void)arg;
	for (;;) {
		f.mutex_lock(&qm);
		while (n == 0 && consumed < 2 * ITERS)
			f.cond_wait(&not_empty, &qm);
		if (consumed == 2 * ITERS) {
			f.cond_broadcast(&not_empty);
			f.mutex_unlock(&qm);
			return NULL;
		}
		sum_out += buf[head];
		head = (head + 1) % SLOTS;
		n--;
		consumed++;
		f.cond_signal(&not_full);
		f.mutex_unlock(&qm);
	}
}

static void *pc_fn(void *arg)
{
	static int next;
	int me = __atomic_fetch_add(&next, 1, __ATOMIC_RELAXED);
	return me % 2 ? producer(arg) : consumer(arg);
}

static void condvars(void)
{
	run(pc_fn, NULL);
	if (sum_in != sum_out || consumed != 2 * ITERS)
		die("condvar: items lost or doubled");
	printf("shim_tsan: condvars ok\n");
}

/* ---- rwlocks: writers bump a plain pair, readers check it ---- */

static pthread_rwlock_t rw;
static long pair[2];

static void *rw_fn(void *arg)
{
	(void)arg;
	for (int i = 0; i < ITERS; i++) {
		if (i % 4 == 0) {
			f.rw_wrlock(&rw);
			pair[0]++;
			pair[1]++;
		} else {
			f.rw_rdlock(&rw);
			if (i % 3 == 0) { /* recursive read (default kind only) */
				if (f.rw_rdlock(&rw))
					die("recursive rdlock");
				f.rw_unlock(&rw);
			}
			if (pair[0] != pair[1])
				die("rwlock: a reader saw a half-done write");
		}
		f.rw_unlock(&rw);
	}
	return NULL;
}

static void *rw_wp_fn(void *arg)
{
	(void)arg;
	for (int i = 0; i < ITERS; i++) {
		if (i % 4 == 0) {
			f.rw_wrlock(&rw);
			pair[0]++;
			pair[1]++;
		} else {
			f.rw_rdlock(&rw);
			if (pair[0] != pair[1])
				die("rwlock: a reader saw a half-done write");
		}
		f.rw_unlock(&rw);
	}
	return NULL;
}

static void rwlocks(void)
{
	pthread_rwlockattr_t a;
	pthread_rwlockattr_init(&a);
	f.rw_init(&rw, NULL);
	run(rw_fn, NULL);
	pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	f.rw_init(&rw, &a);
	run(rw_wp_fn, NULL);
	if (pair[0] != 2L * THREADS * ITERS / 4)
		die("rwlock: lost writes");
	printf("shim_tsan: rwlocks ok\n");
}

/* ---- semaphores: a binary one as a lock, a counting one as a queue ---- */

static sem_t lock, items;
static long sem_counter;

static void *sem_fn(void *arg)
{
	static int next;
	int me = __atomic_fetch_add(&next, 1, __ATOMIC_RELAXED);
	(void)arg;
	for (int i = 0; i < ITERS; i++) {
		if (me % 2)
			f.sem_post(&items);
		else if (f.sem_wait(&items))
			die("sem_wait");
		f.sem_wait(&lock);
		sem_counter++;
		f.sem_post(&lock);
	}
	return NULL;
}

static void semaphores(void)
{
	f.sem_init(&lock, 0, 1);
	f.sem_init(&items, 0, 0);
	run(sem_fn, NULL);
	if (sem_counter != (long)THREADS * ITERS)
		die("sem: lost increments");
	printf("shim_tsan: semaphores ok\n");
}

int main(void)
{
	load();
	mutexes();
	condvars();
	rwlocks();
	semaphores();
	return 0;
}
