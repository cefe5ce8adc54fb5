/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/shim_test.h — what the libursa-pthread suites share. They are
 * linked to the shim ahead of libc, so plain pthread_* calls reach it; each
 * test first checks that they really do.
 */
#ifndef URSA_TESTS_SHIM_TEST_H
#define URSA_TESTS_SHIM_TEST_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* the _NP initializers, clocklock, gettid, dladdr */
#endif

#include "tests/helpers.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* ThreadSanitizer interposes pthread_* itself and reaches glibc's condvar
 * with dlvsym("GLIBC_2.3.2"), which an unversioned definition (the shim's)
 * never satisfies, so mutexes would be the shim's and condvars glibc's:
 * under TSan the suites call the shim's functions directly. */
#if defined(__SANITIZE_THREAD__)
#include "tests/harness/shim_direct.h"
#endif

/* The object a function pointer resolves into. */
static inline const char *shim_t_object_of(void *fn)
{
	Dl_info info;
	return dladdr(fn, &info) && info.dli_fname ? info.dli_fname : "?";
}

/* Check, by behaviour, that calls reach the shim: glibc records a normal
 * mutex's owner, ursa does not; glibc counts a reader as 8 in the rwlock's
 * first word, the shim as 1. (ASan also intercepts pthread_mutex_lock, but
 * forwards to the shim; under TSan shim_direct.h calls the shim.) */
static inline void shim_t_require(void)
{
#if defined(__SANITIZE_THREAD__) && !defined(URSA_SHIM_DIRECT)
	cr_skip_test("ThreadSanitizer intercepts pthread_* before the shim");
#else
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	pthread_rwlock_t l = PTHREAD_RWLOCK_INITIALIZER;
	cr_assert_eq(pthread_mutex_lock(&m), 0);
	cr_assert_eq(m.__data.__owner, 0, "pthread_mutex_lock is glibc's, not the shim's");
	cr_assert_eq(pthread_mutex_unlock(&m), 0);
	cr_assert_eq(pthread_rwlock_rdlock(&l), 0);
	cr_assert_eq(l.__data.__readers, 1, "pthread_rwlock_rdlock is glibc's, not the shim's");
	cr_assert_eq(pthread_rwlock_unlock(&l), 0);
#endif
}

/* Each of fns resolves into the shim (ASan's interceptors sit in front of
 * some, and forward to the shim: the behavioural checks cover those). */
static inline void shim_t_resolve_to_shim(void *const *fns, size_t n)
{
#if defined(__SANITIZE_ADDRESS__)
	cr_skip_test("ASan's interceptors sit in front of the shim");
#endif
	for (size_t i = 0; i < n; i++)
		cr_assert(strstr(shim_t_object_of(fns[i]), "libursa-pthread") != NULL,
			  "pthread function %zu resolved to %s, not the shim", i,
			  shim_t_object_of(fns[i]));
}

/* Start fn(arg) in a child process made by forker (fork, or _Fork: a
 * child in which no fork handler runs), which exits 0 when fn returns
 * true; shim_t_reaped_ok waits for it: true when it exited 0. */
static inline pid_t shim_t_spawn_by(pid_t (*forker)(void), bool (*fn)(void *), void *arg)
{
	pid_t p = forker();
	cr_assert(p >= 0);
	if (p == 0)
		_exit(fn(arg) ? 0 : 1);
	return p;
}

static inline pid_t shim_t_spawn(bool (*fn)(void *), void *arg)
{
	return shim_t_spawn_by(fork, fn, arg);
}

static inline bool shim_t_reaped_ok(pid_t p)
{
	int st;
	cr_assert_eq(waitpid(p, &st, 0), p);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* Run fn in a child process; true when it exited 0. */
static inline bool shim_t_in_child(bool (*fn)(void *), void *arg)
{
	return shim_t_reaped_ok(shim_t_spawn(fn, arg));
}

/* Run fn(arg) in another thread and join it. */
static inline void shim_t_in_thread(void *(*fn)(void *), void *arg)
{
	pthread_t t;
	cr_assert_eq(pthread_create(&t, NULL, fn, arg), 0);
	cr_assert_eq(pthread_join(t, NULL), 0);
}

/* Defines in_other_thread(T *obj, int (*op)(T *)): op(obj) run by another
 * thread (joined before it returns); what op returned. Typed per object, so
 * that pthread_mutex_trylock and friends are called through their own type. */
#define SHIM_T_IN_OTHER_THREAD(T)                                                                  \
	struct shim_t_other {                                                                      \
		T *obj;                                                                            \
		int (*op)(T *);                                                                    \
		int ret;                                                                           \
	};                                                                                         \
	static void *shim_t_other_fn(void *p)                                                      \
	{                                                                                          \
		struct shim_t_other *o = p;                                                        \
		o->ret = o->op(o->obj);                                                            \
		return NULL;                                                                       \
	}                                                                                          \
	static int in_other_thread(T *obj, int (*op)(T *))                                         \
	{                                                                                          \
		struct shim_t_other o = {obj, op, -1};                                             \
		shim_t_in_thread(shim_t_other_fn, &o);                                             \
		return o.ret;                                                                      \
	}

/* A timed call made by another thread: call(obj, how, clk, deadline), the
 * deadline ms from now on clk, with errno set to 4242 just before, so that
 * the caller can check the call left errno alone. started is set before the
 * call, done after it. */
struct shim_t_timed {
	int (*call)(void *obj, int how, clockid_t clk, const struct timespec *deadline);
	void *obj;
	int how; /* the suite's own flags for call */
	clockid_t clk;
	long ms;
	int ret;       /* what call returned */
	int err_after; /* errno after call */
	atomic_int started, done;
};

static inline void *shim_t_timed_fn(void *p)
{
	struct shim_t_timed *t = p;
	struct timespec ts = t_deadline(t->clk, t->ms);
	atomic_store(&t->started, 1);
	errno = 4242;
	t->ret = t->call(t->obj, t->how, t->clk, &ts);
	t->err_after = errno;
	atomic_store(&t->done, 1);
	return NULL;
}

static inline void shim_t_timed_start(struct shim_t_timed *t, pthread_t *th)
{
	t->ret = -1;
	cr_assert_eq(pthread_create(th, NULL, shim_t_timed_fn, t), 0);
}

/* The call made and finished; what it returned. */
static inline int shim_t_timed_run(struct shim_t_timed *t)
{
	t->ret = -1;
	shim_t_in_thread(shim_t_timed_fn, t);
	return t->ret;
}

/* Join t, giving it at most 10 s: a thread that should have gone at once
 * (a cancelled sleeper) and did not would otherwise hang the test. On time
 * out, rescue(arg) lets it go (it should report, not hang) and t is joined
 * anyway. Returns pthread_timedjoin_np's answer: 0 when t went in time. */
static inline int shim_t_join_within(pthread_t t, void **ret, void (*rescue)(void *), void *arg)
{
	struct timespec dl = t_deadline(CLOCK_REALTIME, 10000);
	int jr = pthread_timedjoin_np(t, ret, &dl);
	if (jr) {
		rescue(arg);
		cr_assert_eq(pthread_join(t, ret), 0);
	}
	return jr;
}

/* Spin (yielding) until *flag is non-zero. */
static inline void shim_t_await(atomic_int *flag)
{
	while (!atomic_load(flag))
		sched_yield();
}

/* Cancel t, asleep in a wait (thread id tid), and join it: it must go
 * within 10 s (rescue(arg) lets it go otherwise, to report), cancelled,
 * its cleanup handler (which sets *cleanup_ran) run. */
static inline void shim_t_cancel_asleep(pthread_t t, pid_t tid, atomic_int *cleanup_ran,
					void (*rescue)(void *), void *arg)
{
	void *ret;
	t_wait_sleeping(tid);
	cr_assert_eq(pthread_cancel(t), 0);
	cr_assert_eq(shim_t_join_within(t, &ret, rescue, arg), 0,
		     "the cancelled thread kept sleeping");
	cr_assert_eq(ret, PTHREAD_CANCELED);
	cr_assert(atomic_load(cleanup_ran));
}

#endif
