/* SPDX-License-Identifier: MIT */
/*
 * lib/shim/shim.h — libursa-pthread internals: how ursa's state sits inside
 * glibc's pthread objects, glibc's own functions for the kinds ursa leaves
 * to it, call counters, the cached thread id. Private to lib/shim/.
 *
 * The shim is built on ursa's public API only (include/ursa.h). It overlays
 * its own layout on the caller's pthread_*_t, keeping glibc's fields where a
 * static initializer or glibc itself puts meaning: the mutex kind at byte 16
 * (PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP and friends write it there), the
 * rwlock kind at byte 48 (PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP).
 * Everything else an initializer writes is zero, and zero is a valid ursa
 * object, so static initializers work untouched.
 */
#ifndef URSA_SHIM_H
#define URSA_SHIM_H

#include "config.h"

#include <ursa.h>

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#define SHIM_API __attribute__((visibility("default")))
#define SHIM_HIDDEN __attribute__((visibility("hidden")))
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

/* struct shim_NAME overlays the caller's T (it must fit): shim_NAME(p) is
 * p seen as it. */
#define SHIM_OVERLAY(name, T)                                                      \
	_Static_assert(sizeof(struct name) <= sizeof(T), #name " overlay too big"); \
	static inline struct name *name(T *p)                                      \
	{                                                                          \
		return (struct name *)(void *)p;                                   \
	}

/* ------------------------------------------------------------------ mutex */

/*
 * pthread_mutex_t (40 bytes). The first 20 bytes mirror glibc's
 * struct __pthread_mutex_s: __lock, __count, __owner, __nusers, __kind.
 *
 * kind (glibc's __kind, byte 16): bits 0-1 the type (0 normal, 1 recursive,
 * 2 errorcheck, 3 adaptive — glibc's values, so the _NP initializers select
 * them), bit 7 process-shared. A kind with any of glibc's robust (16),
 * priority-inherit (32) or priority-protect (64) bits set — or glibc's -1
 * after its destroy — was initialised by glibc's pthread_mutex_init, which
 * the shim calls for those attributes: every later call on that object goes
 * to glibc. The kind is written once, at init, so the choice never changes
 * under a live object.
 */
struct shim_mutex {
	ursa_mutex_t word; /* 0: the lock itself */
	uint32_t count;    /* 4: recursive: times locked by the owner */
	int32_t owner;     /* 8: recursive/errorcheck: owner's tid, 0 when free */
	uint32_t unused;   /* 12: glibc's __nusers, always 0 here */
	int32_t kind;      /* 16: see above */
};

#define SHIM_MUTEX_TYPE 3
#define SHIM_MUTEX_SHARED 128
#define SHIM_MUTEX_GLIBC (16 | 32 | 64)

SHIM_OVERLAY(shim_mutex, pthread_mutex_t)
_Static_assert(__builtin_offsetof(pthread_mutex_t, __data.__kind) ==
		       __builtin_offsetof(struct shim_mutex, kind),
	       "mutex kind must sit where glibc's initializers put it");

static inline bool kind_is_glibc(int32_t kind)
{
	return kind & SHIM_MUTEX_GLIBC; /* also true for glibc's destroyed -1 */
}

/* ------------------------------------------------------------------- cond */

/*
 * pthread_cond_t (48 bytes). PTHREAD_COND_INITIALIZER is all zero: a
 * private condvar on CLOCK_REALTIME.
 *
 * A condvar is always ursa's. Waiting directly (ursa_cond_wait on the
 * mutex's word) needs an ursa mutex of the condvar's privacy; any other
 * mutex (glibc's robust/PI/PP kinds, or another privacy) is bridged through
 * `guard`, an ursa mutex inside the condvar: the waiter takes guard, drops
 * the caller's mutex, and waits with guard as ursa's mutex; while any
 * bridged waiter is in flight (`bridged` != 0), signal and broadcast take
 * guard too, so a signal cannot fall between dropping the caller's mutex and
 * the wait (the classic two-lock condvar). flags sits where glibc keeps the
 * same two bits (__wrefs).
 */
struct shim_cond {
	ursa_cond_t c;      /* 0 */
	ursa_mutex_t guard; /* 8 */
	uint32_t bridged;   /* 12: bridged waiters between entry and last touch */
	uint32_t unused[5]; /* 16 */
	uint32_t flags;     /* 36: SHIM_COND_* */
};

#define SHIM_COND_SHARED 1u
#define SHIM_COND_MONOTONIC 2u

SHIM_OVERLAY(shim_cond, pthread_cond_t)

/* ----------------------------------------------------------------- rwlock */

/*
 * pthread_rwlock_t (56 bytes). kind (byte 48, glibc's __flags) selects the
 * algorithm, as glibc's does:
 *
 * - PTHREAD_RWLOCK_PREFER_READER_NP (0, the default) and
 *   PTHREAD_RWLOCK_PREFER_WRITER_NP (1): readers never wait for waiting
 *   writers, so a thread may take a read lock it already holds while a
 *   writer waits (POSIX requires recursive read locks; glibc treats
 *   PREFER_WRITER_NP like the default for that reason). ursa's rwlock
 *   prefers writers, so these use `state` (an atomic reader count + writer
 *   bit, taken without a call) with an ursa mutex and condvar for sleeping:
 *   lib/shim/rwlock.c explains.
 * - PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP (2): exactly ursa_rwlock_t.
 *
 * writer (byte 24, glibc's __cur_writer): tid of the write-lock holder, for
 * EDEADLK and for pthread_rwlock_unlock to know which lock it drops.
 */
struct shim_rwlock {
	uint32_t state;     /* 0: reader-preferring kinds */
	ursa_mutex_t mx;    /* 4: protects sleeping (reader-preferring kinds) */
	ursa_cond_t cv;     /* 8: sleepers (reader-preferring kinds) */
	ursa_rwlock_t wl;   /* 16: writer-preferring kind */
	int32_t writer;     /* 24 */
	uint32_t unused[5]; /* 28 */
	uint32_t kind;      /* 48 */
};

SHIM_OVERLAY(shim_rwlock, pthread_rwlock_t)
_Static_assert(__builtin_offsetof(pthread_rwlock_t, __data.__flags) ==
		       __builtin_offsetof(struct shim_rwlock, kind),
	       "rwlock kind must sit where glibc's initializers put it");

/* ------------------------------------------------------------ glibc's own */

/*
 * glibc's implementations, for the objects the shim hands to glibc.
 * Resolved lazily with dlsym(RTLD_NEXT), once per function, the first time
 * such an object is used: never for programs that use only ursa kinds, and
 * never allocating (dlsym allocates only to report an error). A race to
 * resolve stores the same pointer twice.
 */
/* X(which, glibc's function): the enum and core.c's names, from one list. */
#define SHIM_REALS(X)                                                                      \
	X(REAL_MUTEX_INIT, pthread_mutex_init)                                             \
	X(REAL_MUTEX_DESTROY, pthread_mutex_destroy)                                       \
	X(REAL_MUTEX_LOCK, pthread_mutex_lock)                                             \
	X(REAL_MUTEX_TRYLOCK, pthread_mutex_trylock)                                       \
	X(REAL_MUTEX_TIMEDLOCK, pthread_mutex_timedlock)                                   \
	X(REAL_MUTEX_CLOCKLOCK, pthread_mutex_clocklock)                                   \
	X(REAL_MUTEX_UNLOCK, pthread_mutex_unlock)                                         \
	X(REAL_MUTEX_CONSISTENT, pthread_mutex_consistent)                                 \
	X(REAL_SEM_DESTROY, sem_destroy)                                                   \
	X(REAL_SEM_POST, sem_post)                                                         \
	X(REAL_SEM_GETVALUE, sem_getvalue)                                                 \
	X(REAL_SEM_WAIT, sem_wait)                                                         \
	X(REAL_SEM_TRYWAIT, sem_trywait)                                                   \
	X(REAL_SEM_TIMEDWAIT, sem_timedwait)                                               \
	X(REAL_SEM_CLOCKWAIT, sem_clockwait)

#define SHIM_ENUM_(which, name) which,
enum shim_real { SHIM_REALS(SHIM_ENUM_) REAL_COUNT };

SHIM_HIDDEN void *shim_real(enum shim_real which);

/* ursa's words are 32-bit futex words: an object not 4-byte aligned would
 * work uncontended and fail (the futex call refuses the address) once
 * contended. Every init and the shim's main entry points answer EINVAL for
 * one instead, from the first call (one AND on the pointer). */
static inline bool shim_misaligned(const void *p)
{
	return (uintptr_t)p & 3;
}

/* Wait a little for *word to change, for a destroy waiting on waiters to
 * leave: the first calls (round 0-3) yield, later ones sleep on the word (a
 * futex wait, through ursa's kernel/ layer) for 10 us, doubling to 1 ms; a
 * change before the sleep ends it at once. Nobody wakes the word, so a
 * waiter that never leaves costs a wakeup a millisecond, not a CPU. */
SHIM_HIDDEN void shim_destroy_wait(uint32_t *word, unsigned *round);

/* The same little wait for a call that ursa refused because its object's
 * waiter count is full (4095 waiters on an ursa_rwlock_t, 65535 on an
 * ursa_cond_t): POSIX lists no such error, so the shim waits and tries
 * again. With a deadline (abs on clk) the sleep ends by it, and a call
 * made at or after it returns ETIMEDOUT; else 0. */
SHIM_HIDDEN int shim_wait_a_little(uint32_t *word, unsigned *round, clockid_t clk,
				   const struct timespec *abs);

/* Where a refused condvar wait (the shim's own, and the reader-preferring
 * rwlock's) starts its rounds: no yields, a 160 us sleep, then doubling. */
#define SHIM_FULL_ROUND 8u

/* ---------------------------------------------------------------- counters */

/*
 * Call counters, on when URSA_SHIM_STATS=1 is in the environment at load
 * time (secure_getenv: never in a setuid or setgid program); printed to
 * stderr at exit. Off, they cost one predictable branch.
 */
/* X(which, the name in the report), as SHIM_REALS. mutex_glibc counts
 * calls on mutexes handed to glibc; cond_bridged, waits bridged through
 * the guard. */
#define SHIM_STATS(X)                                                                      \
	X(ST_MUTEX_LOCK, mutex_lock)                                                       \
	X(ST_MUTEX_TRYLOCK, mutex_trylock)                                                 \
	X(ST_MUTEX_TIMEDLOCK, mutex_timedlock)                                             \
	X(ST_MUTEX_UNLOCK, mutex_unlock)                                                   \
	X(ST_MUTEX_GLIBC, mutex_glibc)                                                     \
	X(ST_COND_WAIT, cond_wait)                                                         \
	X(ST_COND_TIMEDWAIT, cond_timedwait)                                               \
	X(ST_COND_BRIDGED, cond_bridged)                                                   \
	X(ST_COND_SIGNAL, cond_signal)                                                     \
	X(ST_COND_BROADCAST, cond_broadcast)                                               \
	X(ST_RW_RDLOCK, rwlock_rdlock)                                                     \
	X(ST_RW_WRLOCK, rwlock_wrlock)                                                     \
	X(ST_RW_UNLOCK, rwlock_unlock)                                                     \
	X(ST_SEM_WAIT, sem_wait)                                                           \
	X(ST_SEM_TRYWAIT, sem_trywait)                                                     \
	X(ST_SEM_TIMEDWAIT, sem_timedwait)                                                 \
	X(ST_SEM_POST, sem_post)                                                           \
	X(ST_SEM_EINTR, sem_eintr)

enum shim_stat { SHIM_STATS(SHIM_ENUM_) ST_COUNT };

SHIM_HIDDEN extern bool shim_stats_on;
SHIM_HIDDEN extern unsigned long shim_stats[ST_COUNT];

static inline void shim_count(enum shim_stat s)
{
	if (unlikely(shim_stats_on))
		__atomic_fetch_add(&shim_stats[s], 1, __ATOMIC_RELAXED);
}

/* ------------------------------------------------------------- thread id */

/* This thread's kernel tid, cached in TLS with the fork epoch it was cached
 * in: *shim_fork_word, a word every fork child sees zeroed
 * (kernel/proc.h), so the first call in a child, made by fork(), _Fork()
 * or clone(), in a fork handler or after, looks the tid up again
 * (lib/shim/core.c). initial-exec: the shim is loaded at startup
 * (LD_PRELOAD or DT_NEEDED), so its TLS is static. */
SHIM_HIDDEN extern __thread int32_t shim_tid_cache __attribute__((tls_model("initial-exec")));
SHIM_HIDDEN extern __thread uint64_t shim_tid_epoch __attribute__((tls_model("initial-exec")));
SHIM_HIDDEN extern uint64_t *shim_fork_word;
SHIM_HIDDEN int32_t shim_tid_slow(void);

static inline int32_t shim_tid(void)
{
	int32_t t = shim_tid_cache;
	if (likely(t) &&
	    likely(shim_tid_epoch ==
		   __atomic_load_n(__atomic_load_n(&shim_fork_word, __ATOMIC_RELAXED), __ATOMIC_RELAXED)))
		return t;
	return shim_tid_slow();
}

/* --------------------------------------------------------------- helpers */

/* Normalise a POSIX timed-wait deadline for ursa: NULL or tv_nsec out of
 * range is EINVAL; a negative tv_sec is simply in the past (POSIX: time out,
 * ursa: EINVAL), so it becomes {0, 0}. Returns 0 or a positive errno. */
static inline int shim_deadline(const struct timespec *abs, struct timespec *out)
{
	if (!abs || abs->tv_nsec < 0 || abs->tv_nsec >= 1000000000L)
		return EINVAL;
	*out = *abs;
	if (out->tv_sec < 0)
		out->tv_sec = out->tv_nsec = 0;
	return 0;
}

/* An init's first step once its arguments are good: zero the caller's
 * object (glibc's fields too); returns ursa's init flags for pshared. */
static inline unsigned shim_reset(void *p, size_t size, int pshared)
{
	memset(p, 0, size);
	return pshared == PTHREAD_PROCESS_SHARED ? URSA_SHARED : 0;
}

static inline int shim_clock_ok(clockid_t clk)
{
	return clk == CLOCK_MONOTONIC || clk == CLOCK_REALTIME;
}

/* For the condvar (lib/shim/mutex.c): on an ursa-kind mutex, give up and
 * take back the ownership record around a wait: disown checks the caller
 * owns m (recursive/errorcheck: EPERM if not) and saves the recursion count;
 * the lock word itself stays with ursa_cond_wait. unlock_all/lock_all also
 * release and retake the word (for a bridged wait). All return 0 or a
 * positive errno. */
SHIM_HIDDEN int shim_mutex_disown(struct shim_mutex *m, int32_t kind, uint32_t *saved);
SHIM_HIDDEN void shim_mutex_own(struct shim_mutex *m, int32_t kind, uint32_t saved);
SHIM_HIDDEN int shim_mutex_unlock_all(struct shim_mutex *m, int32_t kind, uint32_t *saved);
SHIM_HIDDEN int shim_mutex_lock_all(struct shim_mutex *m, int32_t kind, uint32_t saved);

#endif
