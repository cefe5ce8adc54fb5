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

/* Run fn in a child process; true when it exited 0. */
static inline bool shim_t_in_child(bool (*fn)(void *), void *arg)
{
	int st;
	pid_t p = fork();
	cr_assert(p >= 0);
	if (p == 0)
		_exit(fn(arg) ? 0 : 1);
	cr_assert_eq(waitpid(p, &st, 0), p);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* Spin (yielding) until *flag is non-zero. */
static inline void shim_t_await(atomic_int *flag)
{
	while (!atomic_load(flag))
		sched_yield();
}

#endif
