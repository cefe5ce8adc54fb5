/* SPDX-License-Identifier: MIT */
/*
 * bench/adapters.h — one small adapter per implementation, all one shape
 * (as Concurrency Kit's regressions do it), so bench_tmpl.h can be
 * instantiated once per implementation.
 *
 * For implementation X an adapter defines:
 *   ad_X_mutex_t  ad_X_mutex_init(m)  ad_X_mutex_destroy(m)
 *   ad_X_lock(m)  ad_X_unlock(m)  ad_X_trylock(m) -> true if taken
 *   ad_X_rw_t     ad_X_rw_init/destroy  ad_X_rdlock/rdunlock  ad_X_wrlock/wrunlock
 *   ad_X_pp_t     ad_X_pp_init/destroy  ad_X_pp_wait(p, me)  ad_X_pp_pass(p, to)
 *                 (the cond-pingpong turn: wait until it is side me's turn /
 *                 give the turn to side to; built from the mutex + condition
 *                 variable where the implementation has one)
 *
 * Every function is static inline and calls the implementation's public
 * API directly, so each one's inline fast path (ursa's CAS, Concurrency
 * Kit's header-only locks) is compiled into the scenario loop exactly as an
 * application would get it: no function pointer sits between the loop and
 * the lock. Errors abort the run: a benchmark of a failing lock means nothing.
 */
#ifndef URSA_BENCH_ADAPTERS_H
#define URSA_BENCH_ADAPTERS_H

#include "bench/bench.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

__attribute__((noreturn, cold)) static inline void ad_die(const char *what, int err)
{
	bench_fail(what, err);
	exit(2);
}

#define AD_CHECK(what, expr)                                                                       \
	do {                                                                                       \
		int ad_r_ = (expr);                                                                \
		if (__builtin_expect(ad_r_ != 0, 0))                                               \
			ad_die(what, ad_r_);                                                       \
	} while (0)

/* Turn-passing built from a mutex and two condition variables; the same
 * code for every implementation that has both. Signal under the mutex. */
#define AD_PP_FROM_COND(X)                                                                         \
	typedef struct {                                                                           \
		ad_##X##_mutex_t m;                                                                \
		ad_##X##_cond_t c[2];                                                              \
		int turn;                                                                          \
	} ad_##X##_pp_t;                                                                           \
	static inline void ad_##X##_pp_init(ad_##X##_pp_t *p)                                      \
	{                                                                                          \
		ad_##X##_mutex_init(&p->m);                                                        \
		ad_##X##_cond_init(&p->c[0]);                                                      \
		ad_##X##_cond_init(&p->c[1]);                                                      \
		p->turn = 0;                                                                       \
	}                                                                                          \
	static inline void ad_##X##_pp_destroy(ad_##X##_pp_t *p)                                   \
	{                                                                                          \
		ad_##X##_cond_destroy(&p->c[0]);                                                   \
		ad_##X##_cond_destroy(&p->c[1]);                                                   \
		ad_##X##_mutex_destroy(&p->m);                                                     \
	}                                                                                          \
	static inline void ad_##X##_pp_wait(ad_##X##_pp_t *p, int me)                              \
	{                                                                                          \
		ad_##X##_lock(&p->m);                                                              \
		while (p->turn != me)                                                              \
			ad_##X##_cond_wait(&p->c[me], &p->m);                                      \
		ad_##X##_unlock(&p->m);                                                            \
	}                                                                                          \
	static inline void ad_##X##_pp_pass(ad_##X##_pp_t *p, int to)                              \
	{                                                                                          \
		ad_##X##_lock(&p->m);                                                              \
		p->turn = to;                                                                      \
		ad_##X##_cond_signal(&p->c[to]);                                                   \
		ad_##X##_unlock(&p->m);                                                            \
	}

/* ------------------------------------------------------------- glibc */
#include <pthread.h>

typedef pthread_mutex_t ad_glibc_mutex_t;
static inline void ad_glibc_mutex_init(ad_glibc_mutex_t *m)
{
	AD_CHECK("pthread_mutex_init", pthread_mutex_init(m, NULL));
}
static inline void ad_glibc_mutex_destroy(ad_glibc_mutex_t *m)
{
	AD_CHECK("pthread_mutex_destroy", pthread_mutex_destroy(m));
}
static inline void ad_glibc_lock(ad_glibc_mutex_t *m)
{
	AD_CHECK("pthread_mutex_lock", pthread_mutex_lock(m));
}
static inline void ad_glibc_unlock(ad_glibc_mutex_t *m)
{
	AD_CHECK("pthread_mutex_unlock", pthread_mutex_unlock(m));
}
static inline bool ad_glibc_trylock(ad_glibc_mutex_t *m)
{
	return pthread_mutex_trylock(m) == 0;
}

typedef pthread_rwlock_t ad_glibc_rw_t;
static inline void ad_glibc_rw_init(ad_glibc_rw_t *l)
{
	AD_CHECK("pthread_rwlock_init", pthread_rwlock_init(l, NULL));
}
static inline void ad_glibc_rw_destroy(ad_glibc_rw_t *l)
{
	AD_CHECK("pthread_rwlock_destroy", pthread_rwlock_destroy(l));
}
static inline void ad_glibc_rdlock(ad_glibc_rw_t *l)
{
	AD_CHECK("pthread_rwlock_rdlock", pthread_rwlock_rdlock(l));
}
static inline void ad_glibc_rdunlock(ad_glibc_rw_t *l)
{
	AD_CHECK("pthread_rwlock_unlock", pthread_rwlock_unlock(l));
}
static inline void ad_glibc_wrlock(ad_glibc_rw_t *l)
{
	AD_CHECK("pthread_rwlock_wrlock", pthread_rwlock_wrlock(l));
}
static inline void ad_glibc_wrunlock(ad_glibc_rw_t *l)
{
	AD_CHECK("pthread_rwlock_unlock", pthread_rwlock_unlock(l));
}

typedef pthread_cond_t ad_glibc_cond_t;
static inline void ad_glibc_cond_init(ad_glibc_cond_t *c)
{
	AD_CHECK("pthread_cond_init", pthread_cond_init(c, NULL));
}
static inline void ad_glibc_cond_destroy(ad_glibc_cond_t *c)
{
	AD_CHECK("pthread_cond_destroy", pthread_cond_destroy(c));
}
static inline void ad_glibc_cond_wait(ad_glibc_cond_t *c, ad_glibc_mutex_t *m)
{
	AD_CHECK("pthread_cond_wait", pthread_cond_wait(c, m));
}
static inline void ad_glibc_cond_signal(ad_glibc_cond_t *c)
{
	AD_CHECK("pthread_cond_signal", pthread_cond_signal(c));
}
static inline void ad_glibc_cond_broadcast(ad_glibc_cond_t *c)
{
	AD_CHECK("pthread_cond_broadcast", pthread_cond_broadcast(c));
}
AD_PP_FROM_COND(glibc)

/* POSIX unnamed semaphore (process-private). */
#include <errno.h>
#include <semaphore.h>
typedef sem_t ad_glibc_sem_t;
static inline void ad_glibc_sem_init(ad_glibc_sem_t *s, unsigned v)
{
	AD_CHECK("sem_init", sem_init(s, 0, v) ? errno : 0);
}
static inline void ad_glibc_sem_destroy(ad_glibc_sem_t *s)
{
	AD_CHECK("sem_destroy", sem_destroy(s) ? errno : 0);
}
static inline void ad_glibc_sem_wait(ad_glibc_sem_t *s)
{
	while (sem_wait(s))
		if (errno != EINTR)
			ad_die("sem_wait", errno);
}
static inline void ad_glibc_sem_post(ad_glibc_sem_t *s)
{
	AD_CHECK("sem_post", sem_post(s) ? errno : 0);
}

/* ------------------------------------------------------------- ursa */
#include <ursa.h>

typedef ursa_mutex_t ad_ursa_mutex_t;
static inline void ad_ursa_mutex_init(ad_ursa_mutex_t *m)
{
	AD_CHECK("ursa_mutex_init", ursa_mutex_init(m, 0));
}
static inline void ad_ursa_mutex_destroy(ad_ursa_mutex_t *m)
{
	AD_CHECK("ursa_mutex_destroy", ursa_mutex_destroy(m));
}
/* ursa_mutex_lock(m) etc. are macros for the inline fast paths (ursa/mutex.h). */
static inline void ad_ursa_lock(ad_ursa_mutex_t *m)
{
	AD_CHECK("ursa_mutex_lock", ursa_mutex_lock(m));
}
static inline void ad_ursa_unlock(ad_ursa_mutex_t *m)
{
	AD_CHECK("ursa_mutex_unlock", ursa_mutex_unlock(m));
}
static inline bool ad_ursa_trylock(ad_ursa_mutex_t *m)
{
	return ursa_mutex_trylock(m) == 0;
}

typedef ursa_rwlock_t ad_ursa_rw_t;
static inline void ad_ursa_rw_init(ad_ursa_rw_t *l)
{
	AD_CHECK("ursa_rwlock_init", ursa_rwlock_init(l, 0));
}
static inline void ad_ursa_rw_destroy(ad_ursa_rw_t *l)
{
	AD_CHECK("ursa_rwlock_destroy", ursa_rwlock_destroy(l));
}
static inline void ad_ursa_rdlock(ad_ursa_rw_t *l)
{
	AD_CHECK("ursa_rwlock_rdlock", ursa_rwlock_rdlock(l));
}
static inline void ad_ursa_rdunlock(ad_ursa_rw_t *l)
{
	AD_CHECK("ursa_rwlock_rdunlock", ursa_rwlock_rdunlock(l));
}
static inline void ad_ursa_wrlock(ad_ursa_rw_t *l)
{
	AD_CHECK("ursa_rwlock_wrlock", ursa_rwlock_wrlock(l));
}
static inline void ad_ursa_wrunlock(ad_ursa_rw_t *l)
{
	AD_CHECK("ursa_rwlock_wrunlock", ursa_rwlock_wrunlock(l));
}

typedef ursa_cond_t ad_ursa_cond_t;
static inline void ad_ursa_cond_init(ad_ursa_cond_t *c)
{
	AD_CHECK("ursa_cond_init", ursa_cond_init(c, 0));
}
static inline void ad_ursa_cond_destroy(ad_ursa_cond_t *c)
{
	AD_CHECK("ursa_cond_destroy", ursa_cond_destroy(c));
}
static inline void ad_ursa_cond_wait(ad_ursa_cond_t *c, ad_ursa_mutex_t *m)
{
	AD_CHECK("ursa_cond_wait", ursa_cond_wait(c, m));
}
static inline void ad_ursa_cond_signal(ad_ursa_cond_t *c)
{
	AD_CHECK("ursa_cond_signal", ursa_cond_signal(c));
}
static inline void ad_ursa_cond_broadcast(ad_ursa_cond_t *c)
{
	AD_CHECK("ursa_cond_broadcast", ursa_cond_broadcast(c));
}
AD_PP_FROM_COND(ursa)

typedef ursa_sem_t ad_ursa_sem_t;
static inline void ad_ursa_sem_init(ad_ursa_sem_t *s, unsigned v)
{
	AD_CHECK("ursa_sem_init", ursa_sem_init(s, v, 0));
}
static inline void ad_ursa_sem_destroy(ad_ursa_sem_t *s)
{
	AD_CHECK("ursa_sem_destroy", ursa_sem_destroy(s));
}
static inline void ad_ursa_sem_wait(ad_ursa_sem_t *s)
{
	AD_CHECK("ursa_sem_wait", ursa_sem_wait(s));
}
static inline void ad_ursa_sem_post(ad_ursa_sem_t *s)
{
	AD_CHECK("ursa_sem_post", ursa_sem_post(s));
}

/* ------------------------------------------------------------- nsync */
#ifdef HAVE_NSYNC
#include <nsync.h>

typedef nsync_mu ad_nsync_mutex_t;
static inline void ad_nsync_mutex_init(ad_nsync_mutex_t *m)
{
	nsync_mu_init(m);
}
static inline void ad_nsync_mutex_destroy(ad_nsync_mutex_t *m)
{
	(void)m; /* nsync objects need no destruction */
}
static inline void ad_nsync_lock(ad_nsync_mutex_t *m)
{
	nsync_mu_lock(m);
}
static inline void ad_nsync_unlock(ad_nsync_mutex_t *m)
{
	nsync_mu_unlock(m);
}
static inline bool ad_nsync_trylock(ad_nsync_mutex_t *m)
{
	return nsync_mu_trylock(m) != 0;
}

/* nsync_mu is itself a reader-writer lock. */
typedef nsync_mu ad_nsync_rw_t;
static inline void ad_nsync_rw_init(ad_nsync_rw_t *l)
{
	nsync_mu_init(l);
}
static inline void ad_nsync_rw_destroy(ad_nsync_rw_t *l)
{
	(void)l;
}
static inline void ad_nsync_rdlock(ad_nsync_rw_t *l)
{
	nsync_mu_rlock(l);
}
static inline void ad_nsync_rdunlock(ad_nsync_rw_t *l)
{
	nsync_mu_runlock(l);
}
static inline void ad_nsync_wrlock(ad_nsync_rw_t *l)
{
	nsync_mu_lock(l);
}
static inline void ad_nsync_wrunlock(ad_nsync_rw_t *l)
{
	nsync_mu_unlock(l);
}

typedef nsync_cv ad_nsync_cond_t;
static inline void ad_nsync_cond_init(ad_nsync_cond_t *c)
{
	nsync_cv_init(c);
}
static inline void ad_nsync_cond_destroy(ad_nsync_cond_t *c)
{
	(void)c;
}
static inline void ad_nsync_cond_wait(ad_nsync_cond_t *c, ad_nsync_mutex_t *m)
{
	nsync_cv_wait(c, m);
}
static inline void ad_nsync_cond_signal(ad_nsync_cond_t *c)
{
	nsync_cv_signal(c);
}
static inline void ad_nsync_cond_broadcast(ad_nsync_cond_t *c)
{
	nsync_cv_broadcast(c);
}
AD_PP_FROM_COND(nsync)
#endif

/* ------------------------------------------------------------- ck */
#ifdef HAVE_CK
/*
 * Concurrency Kit has no sleeping mutex, reader-writer lock or condition
 * variable: ck_spinlock (the default, test-and-set "fas") and ck_rwlock
 * spin until they get the lock, whatever the wait. Its one sleeping
 * primitive is the event count ck_ec, which blocks through futex functions
 * the application supplies (below); cond-pingpong uses it.
 */
#include <ck_ec.h>
#include <ck_rwlock.h>
#include <ck_spinlock.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

typedef ck_spinlock_t ad_ck_mutex_t;
static inline void ad_ck_mutex_init(ad_ck_mutex_t *m)
{
	ck_spinlock_init(m);
}
static inline void ad_ck_mutex_destroy(ad_ck_mutex_t *m)
{
	(void)m;
}
static inline void ad_ck_lock(ad_ck_mutex_t *m)
{
	ck_spinlock_lock(m);
}
static inline void ad_ck_unlock(ad_ck_mutex_t *m)
{
	ck_spinlock_unlock(m);
}
static inline bool ad_ck_trylock(ad_ck_mutex_t *m)
{
	return ck_spinlock_trylock(m);
}

typedef ck_rwlock_t ad_ck_rw_t;
static inline void ad_ck_rw_init(ad_ck_rw_t *l)
{
	ck_rwlock_init(l);
}
static inline void ad_ck_rw_destroy(ad_ck_rw_t *l)
{
	(void)l;
}
static inline void ad_ck_rdlock(ad_ck_rw_t *l)
{
	ck_rwlock_read_lock(l);
}
static inline void ad_ck_rdunlock(ad_ck_rw_t *l)
{
	ck_rwlock_read_unlock(l);
}
static inline void ad_ck_wrlock(ad_ck_rw_t *l)
{
	ck_rwlock_write_lock(l);
}
static inline void ad_ck_wrunlock(ad_ck_rw_t *l)
{
	ck_rwlock_write_unlock(l);
}

/* ck_ec's operating-system half: time, futex wait with an absolute
 * CLOCK_MONOTONIC deadline, futex wake of all. CK leaves these to the user. */
static int ad_ck_gettime(const struct ck_ec_ops *ops, struct timespec *out)
{
	(void)ops;
	return clock_gettime(CLOCK_MONOTONIC, out);
}
static void ad_ck_wait32(const struct ck_ec_wait_state *st, const uint32_t *addr, uint32_t expect,
			 const struct timespec *deadline)
{
	(void)st;
	syscall(SYS_futex, addr, FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG, expect, deadline, NULL,
		FUTEX_BITSET_MATCH_ANY);
}
static void ad_ck_wake32(const struct ck_ec_ops *ops, const uint32_t *addr)
{
	(void)ops;
	syscall(SYS_futex, addr, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, INT_MAX, NULL, NULL, 0);
}
/* 64-bit event counts wait on their low half (little-endian). */
static void ad_ck_wait64(const struct ck_ec_wait_state *st, const uint64_t *addr, uint64_t expect,
			 const struct timespec *deadline)
{
	ad_ck_wait32(st, (const uint32_t *)addr, (uint32_t)expect, deadline);
}
static void ad_ck_wake64(const struct ck_ec_ops *ops, const uint64_t *addr)
{
	ad_ck_wake32(ops, (const uint32_t *)addr);
}
static const struct ck_ec_ops ad_ck_ec_ops = {
    .gettime = ad_ck_gettime,
    .wait32 = ad_ck_wait32,
    .wait64 = ad_ck_wait64,
    .wake32 = ad_ck_wake32,
    .wake64 = ad_ck_wake64,
};
static const struct ck_ec_mode ad_ck_ec_mode = {.ops = &ad_ck_ec_ops, .single_producer = false};

/* The turn is the event count's parity: passing increments it (and wakes
 * the other side if it sleeps); waiting sleeps until the value changes. */
typedef struct {
	struct ck_ec32 ec;
} ad_ck_pp_t;
static inline void ad_ck_pp_init(ad_ck_pp_t *p)
{
	ck_ec32_init(&p->ec, 0);
}
static inline void ad_ck_pp_destroy(ad_ck_pp_t *p)
{
	(void)p;
}
static inline void ad_ck_pp_wait(ad_ck_pp_t *p, int me)
{
	for (;;) {
		uint32_t v = ck_ec32_value(&p->ec);
		if ((int)(v & 1) == me)
			return;
		ck_ec32_wait(&p->ec, &ad_ck_ec_mode, v, NULL);
	}
}
static inline void ad_ck_pp_pass(ad_ck_pp_t *p, int to)
{
	(void)to;
	ck_ec32_inc(&p->ec, &ad_ck_ec_mode);
}
#endif

/* ------------------------------------------------------------- absl */
#ifdef HAVE_ABSL
/*
 * abseil's absl::Mutex (a reader-writer mutex: ReaderLock) and
 * absl::CondVar, through the C functions of bench/absl_adapter.cc (one
 * call each; absl's own Lock/Unlock are out of line in libabsl anyway).
 * absl has no counting semaphore.
 */
#include "bench/absl_adapter.h"

typedef ursa_bench_absl_mu ad_absl_mutex_t;
static inline void ad_absl_mutex_init(ad_absl_mutex_t *m)
{
	ursa_bench_absl_mu_init(m);
}
static inline void ad_absl_mutex_destroy(ad_absl_mutex_t *m)
{
	ursa_bench_absl_mu_destroy(m);
}
static inline void ad_absl_lock(ad_absl_mutex_t *m)
{
	ursa_bench_absl_lock(m);
}
static inline void ad_absl_unlock(ad_absl_mutex_t *m)
{
	ursa_bench_absl_unlock(m);
}
static inline bool ad_absl_trylock(ad_absl_mutex_t *m)
{
	return ursa_bench_absl_trylock(m);
}

typedef ursa_bench_absl_mu ad_absl_rw_t;
static inline void ad_absl_rw_init(ad_absl_rw_t *l)
{
	ursa_bench_absl_mu_init(l);
}
static inline void ad_absl_rw_destroy(ad_absl_rw_t *l)
{
	ursa_bench_absl_mu_destroy(l);
}
static inline void ad_absl_rdlock(ad_absl_rw_t *l)
{
	ursa_bench_absl_rdlock(l);
}
static inline void ad_absl_rdunlock(ad_absl_rw_t *l)
{
	ursa_bench_absl_rdunlock(l);
}
static inline void ad_absl_wrlock(ad_absl_rw_t *l)
{
	ursa_bench_absl_lock(l);
}
static inline void ad_absl_wrunlock(ad_absl_rw_t *l)
{
	ursa_bench_absl_unlock(l);
}

typedef ursa_bench_absl_cv ad_absl_cond_t;
static inline void ad_absl_cond_init(ad_absl_cond_t *c)
{
	ursa_bench_absl_cv_init(c);
}
static inline void ad_absl_cond_destroy(ad_absl_cond_t *c)
{
	ursa_bench_absl_cv_destroy(c);
}
static inline void ad_absl_cond_wait(ad_absl_cond_t *c, ad_absl_mutex_t *m)
{
	ursa_bench_absl_cv_wait(c, m);
}
static inline void ad_absl_cond_signal(ad_absl_cond_t *c)
{
	ursa_bench_absl_cv_signal(c);
}
static inline void ad_absl_cond_broadcast(ad_absl_cond_t *c)
{
	ursa_bench_absl_cv_broadcast(c);
}
#endif

#endif
