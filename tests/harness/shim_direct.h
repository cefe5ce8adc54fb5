/* SPDX-License-Identifier: MIT */
/*
 * tests/harness/shim_direct.h — call libursa-pthread's functions directly,
 * past ThreadSanitizer's interceptors. Included by tests/unit/shim_test.h
 * in a ThreadSanitizer build only.
 *
 * TSan interposes pthread_* in the executable and reaches glibc's condvar
 * with dlvsym("GLIBC_2.3.2"), which the shim's unversioned definitions never
 * satisfy, so a shim suite would use the shim's mutexes and glibc's
 * condvars. Here each name the shim exports becomes a pointer looked up in
 * the shim's own handle (dlsym) before main: the suites' calls reach the
 * shim, and TSan sees only the shim's (instrumented) atomics as
 * synchronisation — so it reports a race on the suites' plain data if the
 * shim's acquire/release is wrong anywhere. `(void *)pthread_mutex_lock`
 * still yields the shim's address, so the suites' "resolves to the shim"
 * checks hold.
 *
 * The program must be linked to libursa-pthread with --no-as-needed (it no
 * longer names the shim's symbols).
 */
#ifndef URSA_TESTS_SHIM_DIRECT_H
#define URSA_TESTS_SHIM_DIRECT_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define URSA_SHIM_DIRECT 1

/* X(name, return type, parameter list) for every function the shim exports
 * (lib/shim/libursa-pthread.map). */
#define URSA_SHIM_FUNCS(X)                                                                 \
	X(pthread_mutex_init, (pthread_mutex_t *, const pthread_mutexattr_t *))            \
	X(pthread_mutex_destroy, (pthread_mutex_t *))                                      \
	X(pthread_mutex_lock, (pthread_mutex_t *))                                         \
	X(pthread_mutex_trylock, (pthread_mutex_t *))                                      \
	X(pthread_mutex_timedlock, (pthread_mutex_t *, const struct timespec *))           \
	X(pthread_mutex_clocklock, (pthread_mutex_t *, clockid_t, const struct timespec *)) \
	X(pthread_mutex_unlock, (pthread_mutex_t *))                                       \
	X(pthread_mutex_consistent, (pthread_mutex_t *))                                   \
	X(pthread_cond_init, (pthread_cond_t *, const pthread_condattr_t *))               \
	X(pthread_cond_destroy, (pthread_cond_t *))                                        \
	X(pthread_cond_wait, (pthread_cond_t *, pthread_mutex_t *))                        \
	X(pthread_cond_timedwait,                                                          \
	  (pthread_cond_t *, pthread_mutex_t *, const struct timespec *))                  \
	X(pthread_cond_clockwait,                                                          \
	  (pthread_cond_t *, pthread_mutex_t *, clockid_t, const struct timespec *))       \
	X(pthread_cond_signal, (pthread_cond_t *))                                         \
	X(pthread_cond_broadcast, (pthread_cond_t *))                                      \
	X(pthread_rwlock_init, (pthread_rwlock_t *, const pthread_rwlockattr_t *))         \
	X(pthread_rwlock_destroy, (pthread_rwlock_t *))                                    \
	X(pthread_rwlock_rdlock, (pthread_rwlock_t *))                                     \
	X(pthread_rwlock_tryrdlock, (pthread_rwlock_t *))                                  \
	X(pthread_rwlock_timedrdlock, (pthread_rwlock_t *, const struct timespec *))       \
	X(pthread_rwlock_clockrdlock,                                                      \
	  (pthread_rwlock_t *, clockid_t, const struct timespec *))                        \
	X(pthread_rwlock_wrlock, (pthread_rwlock_t *))                                     \
	X(pthread_rwlock_trywrlock, (pthread_rwlock_t *))                                  \
	X(pthread_rwlock_timedwrlock, (pthread_rwlock_t *, const struct timespec *))       \
	X(pthread_rwlock_clockwrlock,                                                      \
	  (pthread_rwlock_t *, clockid_t, const struct timespec *))                        \
	X(pthread_rwlock_unlock, (pthread_rwlock_t *))                                     \
	X(sem_init, (sem_t *, int, unsigned))                                              \
	X(sem_destroy, (sem_t *))                                                          \
	X(sem_wait, (sem_t *))                                                             \
	X(sem_trywait, (sem_t *))                                                          \
	X(sem_timedwait, (sem_t *, const struct timespec *))                               \
	X(sem_clockwait, (sem_t *, clockid_t, const struct timespec *))                    \
	X(sem_post, (sem_t *))                                                             \
	X(sem_getvalue, (sem_t *, int *))

#define URSA_SHIM_PTR_(name, params) static int(*ursa_shim_##name) params;
URSA_SHIM_FUNCS(URSA_SHIM_PTR_)

/* Before every other constructor: the suites use the shim in theirs. */
__attribute__((constructor(101))) static void ursa_shim_direct_load(void)
{
	void *h = dlopen("libursa-pthread.so.0", RTLD_NOW | RTLD_NOLOAD);
	if (!h) {
		fprintf(stderr, "shim_direct: libursa-pthread.so.0 is not loaded (link it with "
				"--no-as-needed)\n");
		abort();
	}
#define URSA_SHIM_LOAD_(name, params)                                                      \
	{                                                                                  \
		Dl_info info;                                                              \
		void *p = dlsym(h, #name);                                                 \
		if (!p || !dladdr(p, &info) || !strstr(info.dli_fname, "libursa-pthread")) { \
			fprintf(stderr, "shim_direct: %s is not the shim's\n", #name);     \
			abort();                                                           \
		}                                                                          \
		*(void **)&ursa_shim_##name = p;                                           \
	}
	URSA_SHIM_FUNCS(URSA_SHIM_LOAD_)
}

/* The shim bridges robust and priority-inheritance mutexes to glibc's,
 * whose atomics are not instrumented: TSan cannot see their
 * synchronisation, so a test that asks for one skips (needs Criterion's or
 * the plain runner's cr_skip_test: tests/unit/shim_test.h includes this
 * file after tests/helpers.h). */
static inline int ursa_shim_setrobust(pthread_mutexattr_t *a, int robust)
{
	if (robust == PTHREAD_MUTEX_ROBUST)
		cr_skip_test("ThreadSanitizer cannot see glibc's robust mutexes (the shim bridges "
			     "them to glibc's)");
	return pthread_mutexattr_setrobust(a, robust);
}

static inline int ursa_shim_setprotocol(pthread_mutexattr_t *a, int protocol)
{
	if (protocol != PTHREAD_PRIO_NONE)
		cr_skip_test("ThreadSanitizer cannot see glibc's PI/PP mutexes (the shim bridges "
			     "them to glibc's)");
	return pthread_mutexattr_setprotocol(a, protocol);
}

#define pthread_mutexattr_setrobust ursa_shim_setrobust
#define pthread_mutexattr_setprotocol ursa_shim_setprotocol
#define pthread_mutex_init (*ursa_shim_pthread_mutex_init)
#define pthread_mutex_destroy (*ursa_shim_pthread_mutex_destroy)
#define pthread_mutex_lock (*ursa_shim_pthread_mutex_lock)
#define pthread_mutex_trylock (*ursa_shim_pthread_mutex_trylock)
#define pthread_mutex_timedlock (*ursa_shim_pthread_mutex_timedlock)
#define pthread_mutex_clocklock (*ursa_shim_pthread_mutex_clocklock)
#define pthread_mutex_unlock (*ursa_shim_pthread_mutex_unlock)
#define pthread_mutex_consistent (*ursa_shim_pthread_mutex_consistent)
#define pthread_cond_init (*ursa_shim_pthread_cond_init)
#define pthread_cond_destroy (*ursa_shim_pthread_cond_destroy)
#define pthread_cond_wait (*ursa_shim_pthread_cond_wait)
#define pthread_cond_timedwait (*ursa_shim_pthread_cond_timedwait)
#define pthread_cond_clockwait (*ursa_shim_pthread_cond_clockwait)
#define pthread_cond_signal (*ursa_shim_pthread_cond_signal)
#define pthread_cond_broadcast (*ursa_shim_pthread_cond_broadcast)
#define pthread_rwlock_init (*ursa_shim_pthread_rwlock_init)
#define pthread_rwlock_destroy (*ursa_shim_pthread_rwlock_destroy)
#define pthread_rwlock_rdlock (*ursa_shim_pthread_rwlock_rdlock)
#define pthread_rwlock_tryrdlock (*ursa_shim_pthread_rwlock_tryrdlock)
#define pthread_rwlock_timedrdlock (*ursa_shim_pthread_rwlock_timedrdlock)
#define pthread_rwlock_clockrdlock (*ursa_shim_pthread_rwlock_clockrdlock)
#define pthread_rwlock_wrlock (*ursa_shim_pthread_rwlock_wrlock)
#define pthread_rwlock_trywrlock (*ursa_shim_pthread_rwlock_trywrlock)
#define pthread_rwlock_timedwrlock (*ursa_shim_pthread_rwlock_timedwrlock)
#define pthread_rwlock_clockwrlock (*ursa_shim_pthread_rwlock_clockwrlock)
#define pthread_rwlock_unlock (*ursa_shim_pthread_rwlock_unlock)
#define sem_init (*ursa_shim_sem_init)
#define sem_destroy (*ursa_shim_sem_destroy)
#define sem_wait (*ursa_shim_sem_wait)
#define sem_trywait (*ursa_shim_sem_trywait)
#define sem_timedwait (*ursa_shim_sem_timedwait)
#define sem_clockwait (*ursa_shim_sem_clockwait)
#define sem_post (*ursa_shim_sem_post)
#define sem_getvalue (*ursa_shim_sem_getvalue)

#endif
