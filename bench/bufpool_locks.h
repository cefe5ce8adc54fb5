/* SPDX-License-Identifier: MIT */
/*
 * bench/bufpool_locks.h — the lock adapter of the buffer-pool demo.
 *
 * The pool (bufpool_pool.h) and the thread engine (bufpool_threads.h) are
 * written once against bp_mutex_t / bp_rwlock_t / bp_cond_t. A translation
 * unit defines BP_LOCKS_PTHREAD or BP_LOCKS_URSA, then includes this file:
 * every call below is static inline and goes straight to the library's
 * public API, so ursa's inline compare-and-swap fast paths (and glibc's
 * calls) are compiled into the pool code exactly as an application gets
 * them; no function pointer sits between the pool and the lock.
 *
 * The pthread variant is configured as a classic database would be on
 * glibc: default (non-spinning) mutexes, and writer-preferring rwlocks so
 * that both implementations have the same policy (ursa's rwlock prefers
 * writers; glibc's default prefers readers and could starve page writers).
 *
 * A failing lock call ends the run: a benchmark of a broken lock means
 * nothing.
 */
#ifndef URSA_BENCH_BUFPOOL_LOCKS_H
#define URSA_BENCH_BUFPOOL_LOCKS_H

#include "bench/bufpool.h"

#include <errno.h>

#define BP_CHECK(what, expr)                                                                       \
	do {                                                                                       \
		int bp_r_ = (expr);                                                                \
		if (__builtin_expect(bp_r_ != 0, 0))                                               \
			bp_die("%s: %s (%d)\n", what, strerror(bp_r_ < 0 ? -bp_r_ : bp_r_),        \
			       bp_r_);                                                             \
	} while (0)

#if defined(BP_LOCKS_PTHREAD)

#include <pthread.h>

#define BP_LOCKS_NAME "pthread"
typedef pthread_mutex_t bp_mutex_t;
typedef pthread_rwlock_t bp_rwlock_t;
typedef pthread_cond_t bp_cond_t;

static inline void bp_mutex_init(bp_mutex_t *m)
{
	pthread_mutexattr_t a;
	BP_CHECK("pthread_mutexattr_init", pthread_mutexattr_init(&a));
	if (bp_shared())
		BP_CHECK("pthread_mutexattr_setpshared",
			 pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED));
	BP_CHECK("pthread_mutex_init", pthread_mutex_init(m, &a));
	pthread_mutexattr_destroy(&a);
}
static inline int bp_mutex_destroy(bp_mutex_t *m)
{
	return -pthread_mutex_destroy(m);
}
static inline bool bp_mutex_trylock(bp_mutex_t *m)
{
	return pthread_mutex_trylock(m) == 0;
}
static inline void bp_mutex_lock(bp_mutex_t *m)
{
	BP_CHECK("pthread_mutex_lock", pthread_mutex_lock(m));
}
static inline void bp_mutex_unlock(bp_mutex_t *m)
{
	BP_CHECK("pthread_mutex_unlock", pthread_mutex_unlock(m));
}

static inline void bp_rwlock_init(bp_rwlock_t *l)
{
	pthread_rwlockattr_t a;
	BP_CHECK("pthread_rwlockattr_init", pthread_rwlockattr_init(&a));
	BP_CHECK("pthread_rwlockattr_setkind_np",
		 pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP));
	if (bp_shared())
		BP_CHECK("pthread_rwlockattr_setpshared",
			 pthread_rwlockattr_setpshared(&a, PTHREAD_PROCESS_SHARED));
	BP_CHECK("pthread_rwlock_init", pthread_rwlock_init(l, &a));
	pthread_rwlockattr_destroy(&a);
}
static inline int bp_rwlock_destroy(bp_rwlock_t *l)
{
	return -pthread_rwlock_destroy(l);
}
static inline bool bp_rwlock_tryrdlock(bp_rwlock_t *l)
{
	return pthread_rwlock_tryrdlock(l) == 0;
}
static inline void bp_rwlock_rdlock(bp_rwlock_t *l)
{
	BP_CHECK("pthread_rwlock_rdlock", pthread_rwlock_rdlock(l));
}
static inline void bp_rwlock_rdunlock(bp_rwlock_t *l)
{
	BP_CHECK("pthread_rwlock_unlock", pthread_rwlock_unlock(l));
}
static inline bool bp_rwlock_trywrlock(bp_rwlock_t *l)
{
	return pthread_rwlock_trywrlock(l) == 0;
}
static inline void bp_rwlock_wrlock(bp_rwlock_t *l)
{
	BP_CHECK("pthread_rwlock_wrlock", pthread_rwlock_wrlock(l));
}
static inline void bp_rwlock_wrunlock(bp_rwlock_t *l)
{
	BP_CHECK("pthread_rwlock_unlock", pthread_rwlock_unlock(l));
}

static inline void bp_cond_init(bp_cond_t *c)
{
	pthread_condattr_t a;
	BP_CHECK("pthread_condattr_init", pthread_condattr_init(&a));
	if (bp_shared())
		BP_CHECK("pthread_condattr_setpshared",
			 pthread_condattr_setpshared(&a, PTHREAD_PROCESS_SHARED));
	BP_CHECK("pthread_cond_init", pthread_cond_init(c, &a));
	pthread_condattr_destroy(&a);
}
static inline int bp_cond_destroy(bp_cond_t *c)
{
	return -pthread_cond_destroy(c);
}
static inline void bp_cond_wait(bp_cond_t *c, bp_mutex_t *m)
{
	BP_CHECK("pthread_cond_wait", pthread_cond_wait(c, m));
}
static inline void bp_cond_broadcast(bp_cond_t *c)
{
	BP_CHECK("pthread_cond_broadcast", pthread_cond_broadcast(c));
}

#elif defined(BP_LOCKS_URSA)

#include <ursa/cond.h>
#include <ursa/mutex.h>
#include <ursa/rwlock.h>

#define BP_LOCKS_NAME "ursa"
typedef ursa_mutex_t bp_mutex_t;
typedef ursa_rwlock_t bp_rwlock_t;
typedef ursa_cond_t bp_cond_t;

static inline void bp_mutex_init(bp_mutex_t *m)
{
	BP_CHECK("ursa_mutex_init", ursa_mutex_init(m, bp_shared() ? URSA_SHARED : 0));
}
static inline int bp_mutex_destroy(bp_mutex_t *m)
{
	return ursa_mutex_destroy(m);
}
static inline bool bp_mutex_trylock(bp_mutex_t *m)
{
	return ursa_mutex_trylock(m) == 0;
}
static inline void bp_mutex_lock(bp_mutex_t *m)
{
	BP_CHECK("ursa_mutex_lock", ursa_mutex_lock(m));
}
static inline void bp_mutex_unlock(bp_mutex_t *m)
{
	BP_CHECK("ursa_mutex_unlock", ursa_mutex_unlock(m));
}

static inline void bp_rwlock_init(bp_rwlock_t *l)
{
	BP_CHECK("ursa_rwlock_init", ursa_rwlock_init(l, bp_shared() ? URSA_SHARED : 0));
}
static inline int bp_rwlock_destroy(bp_rwlock_t *l)
{
	return ursa_rwlock_destroy(l);
}
static inline bool bp_rwlock_tryrdlock(bp_rwlock_t *l)
{
	return ursa_rwlock_tryrdlock(l) == 0;
}
static inline void bp_rwlock_rdlock(bp_rwlock_t *l)
{
	BP_CHECK("ursa_rwlock_rdlock", ursa_rwlock_rdlock(l));
}
static inline void bp_rwlock_rdunlock(bp_rwlock_t *l)
{
	BP_CHECK("ursa_rwlock_rdunlock", ursa_rwlock_rdunlock(l));
}
static inline bool bp_rwlock_trywrlock(bp_rwlock_t *l)
{
	return ursa_rwlock_trywrlock(l) == 0;
}
static inline void bp_rwlock_wrlock(bp_rwlock_t *l)
{
	BP_CHECK("ursa_rwlock_wrlock", ursa_rwlock_wrlock(l));
}
static inline void bp_rwlock_wrunlock(bp_rwlock_t *l)
{
	BP_CHECK("ursa_rwlock_wrunlock", ursa_rwlock_wrunlock(l));
}

static inline void bp_cond_init(bp_cond_t *c)
{
	BP_CHECK("ursa_cond_init", ursa_cond_init(c, bp_shared() ? URSA_SHARED : 0));
}
static inline int bp_cond_destroy(bp_cond_t *c)
{
	return ursa_cond_destroy(c);
}
static inline void bp_cond_wait(bp_cond_t *c, bp_mutex_t *m)
{
	BP_CHECK("ursa_cond_wait", ursa_cond_wait(c, m));
}
static inline void bp_cond_broadcast(bp_cond_t *c)
{
	BP_CHECK("ursa_cond_broadcast", ursa_cond_broadcast(c));
}

#else
#error "define BP_LOCKS_PTHREAD or BP_LOCKS_URSA before including bench/bufpool_locks.h"
#endif

/* Take a lock, counting the acquisitions that had to wait (the try failed:
 * the lock was held, so the caller spun or slept). Same two calls for both
 * implementations, so the count costs both the same. */
static inline void bp_lock(bp_mutex_t *m, struct bp_stats *s)
{
	if (!bp_mutex_trylock(m)) {
		s->lock_waits++;
		bp_mutex_lock(m);
	}
}

static inline void bp_rdlock(bp_rwlock_t *l, struct bp_stats *s)
{
	if (!bp_rwlock_tryrdlock(l)) {
		s->lock_waits++;
		bp_rwlock_rdlock(l);
	}
}

static inline void bp_wrlock(bp_rwlock_t *l, struct bp_stats *s)
{
	if (!bp_rwlock_trywrlock(l)) {
		s->lock_waits++;
		bp_rwlock_wrlock(l);
	}
}

#endif
