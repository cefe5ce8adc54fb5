/* SPDX-License-Identifier: MIT */
/*
 * lib/shim/mutex.c — pthread_mutex_* on ursa_mutex_t.
 *
 * Normal and adaptive mutexes are the bare ursa mutex: lock and unlock are
 * its inline atomic operations, after one load of the kind. Recursive and
 * errorcheck mutexes add an owner tid and a count beside the word (glibc's
 * __owner and __count): only the owner writes them, and another thread
 * compares owner with its own tid, which it can equal only if it wrote it,
 * so relaxed accesses suffice; the word's acquire/release orders the rest.
 *
 * Robust, priority-inherit and priority-protect mutexes are glibc's from
 * pthread_mutex_init on (shim.h: the kind bits say so), so every call on
 * them goes to glibc's function.
 */
#include "lib/shim/shim.h"

#define TYPE_RECURSIVE PTHREAD_MUTEX_RECURSIVE_NP
#define TYPE_ERRORCHECK PTHREAD_MUTEX_ERRORCHECK_NP

typedef int (*mutex_fn)(pthread_mutex_t *);

static inline int32_t load_kind(struct shim_mutex *m)
{
	return __atomic_load_n(&m->kind, __ATOMIC_RELAXED);
}

/* Normal and adaptive: the lock word is everything. */
static inline bool kind_is_plain(int32_t kind)
{
	int32_t t = kind & ~SHIM_MUTEX_SHARED;
	return t == PTHREAD_MUTEX_NORMAL || t == PTHREAD_MUTEX_ADAPTIVE_NP;
}

static inline int32_t owner_of(struct shim_mutex *m)
{
	return __atomic_load_n(&m->owner, __ATOMIC_RELAXED);
}

static inline void set_owner(struct shim_mutex *m, int32_t tid, uint32_t count)
{
	m->count = count;
	__atomic_store_n(&m->owner, tid, __ATOMIC_RELAXED);
}

static int glibc_call(pthread_mutex_t *pm, enum shim_real which)
{
	shim_count(ST_MUTEX_GLIBC);
	return ((mutex_fn)shim_real(which))(pm);
}

static __attribute__((noinline)) int word_lock_slow(ursa_mutex_t *w)
{
	int r = ursa_mutex_lock(w);
	return -r;
}

static inline int word_lock(ursa_mutex_t *w)
{
	if (likely(ursa_mutex_trylock(w) == 0))
		return 0;
	return word_lock_slow(w);
}

/* ------------------------------------------------------------------ init */

SHIM_API int pthread_mutex_init(pthread_mutex_t *pm, const pthread_mutexattr_t *attr)
{
	struct shim_mutex *m = shim_mutex(pm);
	int type = PTHREAD_MUTEX_DEFAULT, pshared = PTHREAD_PROCESS_PRIVATE;
	int robust = PTHREAD_MUTEX_STALLED, proto = PTHREAD_PRIO_NONE;

	if (unlikely(shim_misaligned(pm)))
		return EINVAL;

	/* Attribute objects stay glibc's: the shim reads them with glibc's
	 * getters, so an attribute built for glibc is also one for the shim. */
	if (attr && (pthread_mutexattr_gettype(attr, &type) ||
		     pthread_mutexattr_getpshared(attr, &pshared) ||
		     pthread_mutexattr_getrobust(attr, &robust) ||
		     pthread_mutexattr_getprotocol(attr, &proto)))
		return EINVAL;
	if (robust != PTHREAD_MUTEX_STALLED || proto != PTHREAD_PRIO_NONE) {
		shim_count(ST_MUTEX_GLIBC);
		return ((int (*)(pthread_mutex_t *, const pthread_mutexattr_t *))shim_real(
			REAL_MUTEX_INIT))(pm, attr);
	}
	if (type < 0 || type > SHIM_MUTEX_TYPE)
		return EINVAL;
	unsigned fl = shim_reset(pm, sizeof(*pm), pshared);
	ursa_mutex_init(&m->word, fl);
	__atomic_store_n(&m->kind, type | (fl ? SHIM_MUTEX_SHARED : 0), __ATOMIC_RELEASE);
	return 0;
}

SHIM_API int pthread_mutex_destroy(pthread_mutex_t *pm)
{
	struct shim_mutex *m = shim_mutex(pm);
	int32_t kind = load_kind(m);
	if (unlikely(kind_is_glibc(kind)))
		return glibc_call(pm, REAL_MUTEX_DESTROY);
	return -ursa_mutex_destroy(&m->word);
}

SHIM_API int pthread_mutex_consistent(pthread_mutex_t *pm)
{
	/* Only robust mutexes can be inconsistent, and those are glibc's. */
	if (kind_is_glibc(load_kind(shim_mutex(pm))))
		return glibc_call(pm, REAL_MUTEX_CONSISTENT);
	return EINVAL;
}

/* ------------------------------------------------------------------ lock */

/* Recursive or errorcheck, when the caller may already own it: the answer
 * without touching the word, or -1 to go on and take the word. */
static int owned_by_self(struct shim_mutex *m, int32_t kind, int32_t self, int errorcheck_ret)
{
	if (owner_of(m) != self)
		return -1;
	if ((kind & SHIM_MUTEX_TYPE) == TYPE_RECURSIVE) {
		if (m->count == UINT32_MAX)
			return EAGAIN;
		m->count++;
		return 0;
	}
	return errorcheck_ret;
}

/* Lock (try: trylock) a recursive, errorcheck or glibc mutex. */
static inline __attribute__((always_inline)) int lock_owned(pthread_mutex_t *pm, int32_t kind,
							    bool try)
{
	struct shim_mutex *m = shim_mutex(pm);
	if (unlikely(kind_is_glibc(kind)))
		return glibc_call(pm, try ? REAL_MUTEX_TRYLOCK : REAL_MUTEX_LOCK);
	int32_t self = shim_tid();
	int r = owned_by_self(m, kind, self, try ? EBUSY : EDEADLK);
	if (r >= 0)
		return r;
	r = try ? -ursa_mutex_trylock(&m->word) : word_lock(&m->word);
	if (!r)
		set_owner(m, self, 1);
	return r;
}

/* Out of line: keeps pthread_mutex_lock's fast path short. */
static __attribute__((noinline)) int lock_kind(pthread_mutex_t *pm, int32_t kind)
{
	return lock_owned(pm, kind, false);
}

/* Unlock a recursive, errorcheck or glibc mutex. */
static inline __attribute__((always_inline)) int unlock_owned(pthread_mutex_t *pm, int32_t kind)
{
	struct shim_mutex *m = shim_mutex(pm);
	if (kind_is_glibc(kind))
		return glibc_call(pm, REAL_MUTEX_UNLOCK);
	if (owner_of(m) != shim_tid())
		return EPERM;
	if ((kind & SHIM_MUTEX_TYPE) == TYPE_RECURSIVE && --m->count)
		return 0;
	set_owner(m, 0, 0);
	return -ursa_mutex_unlock(&m->word);
}

enum mutex_op { OP_LOCK, OP_TRYLOCK, OP_UNLOCK };

/* What lock, trylock and unlock share: refuse a misaligned object, load the
 * kind, count the call; a normal or adaptive mutex is the bare word, inline.
 * Inlined into each with op a constant, so each compiles to its own path. */
static inline __attribute__((always_inline)) int mutex_op(pthread_mutex_t *pm, enum mutex_op op)
{
	struct shim_mutex *m = shim_mutex(pm);
	if (unlikely(shim_misaligned(pm)))
		return EINVAL;
	int32_t kind = load_kind(m);
	shim_count(op == OP_LOCK      ? ST_MUTEX_LOCK
		   : op == OP_TRYLOCK ? ST_MUTEX_TRYLOCK
				      : ST_MUTEX_UNLOCK);
	if (likely(kind_is_plain(kind))) {
		if (op == OP_LOCK)
			return word_lock(&m->word);
		return -(op == OP_TRYLOCK ? ursa_mutex_trylock(&m->word)
					  : ursa_mutex_unlock(&m->word));
	}
	if (op == OP_LOCK)
		return lock_kind(pm, kind);
	return op == OP_TRYLOCK ? lock_owned(pm, kind, true) : unlock_owned(pm, kind);
}

SHIM_API int pthread_mutex_lock(pthread_mutex_t *pm)
{
	return mutex_op(pm, OP_LOCK);
}

SHIM_API int pthread_mutex_trylock(pthread_mutex_t *pm)
{
	return mutex_op(pm, OP_TRYLOCK);
}

static int timedlock(pthread_mutex_t *pm, clockid_t clk, const struct timespec *abs, bool clocked)
{
	struct shim_mutex *m = shim_mutex(pm);
	int32_t kind = load_kind(m), self = 0;
	struct timespec ts;
	int r;

	shim_count(ST_MUTEX_TIMEDLOCK);
	if (kind_is_glibc(kind)) {
		shim_count(ST_MUTEX_GLIBC);
		if (clocked)
			return ((int (*)(pthread_mutex_t *, clockid_t, const struct timespec *))
					shim_real(REAL_MUTEX_CLOCKLOCK))(pm, clk, abs);
		return ((int (*)(pthread_mutex_t *, const struct timespec *))shim_real(
			REAL_MUTEX_TIMEDLOCK))(pm, abs);
	}
	if (!shim_clock_ok(clk))
		return EINVAL;
	if (!kind_is_plain(kind)) {
		self = shim_tid();
		r = owned_by_self(m, kind, self, EDEADLK);
		if (r >= 0)
			return r;
	}
	/* POSIX: never time out, nor check abs, when the lock is free now. */
	r = -ursa_mutex_trylock(&m->word);
	if (r == EBUSY) {
		r = shim_deadline(abs, &ts);
		if (r)
			return r;
		r = -ursa_mutex_timedlock(&m->word, clk, &ts);
	}
	if (!r && self)
		set_owner(m, self, 1);
	return r;
}

SHIM_API int pthread_mutex_timedlock(pthread_mutex_t *pm, const struct timespec *abs)
{
	if (unlikely(shim_misaligned(pm)))
		return EINVAL;
	return timedlock(pm, CLOCK_REALTIME, abs, false);
}

SHIM_API int pthread_mutex_clocklock(pthread_mutex_t *pm, clockid_t clk, const struct timespec *abs)
{
	if (unlikely(shim_misaligned(pm)))
		return EINVAL;
	return timedlock(pm, clk, abs, true);
}

/* ---------------------------------------------------------------- unlock */

SHIM_API int pthread_mutex_unlock(pthread_mutex_t *pm)
{
	return mutex_op(pm, OP_UNLOCK);
}

/* ------------------------------------------------------- for the condvar */

int shim_mutex_disown(struct shim_mutex *m, int32_t kind, uint32_t *saved)
{
	*saved = 0;
	if (kind_is_plain(kind))
		return 0;
	if (owner_of(m) != shim_tid())
		return EPERM;
	*saved = m->count;
	set_owner(m, 0, 0);
	return 0;
}

void shim_mutex_own(struct shim_mutex *m, int32_t kind, uint32_t saved)
{
	if (!kind_is_plain(kind))
		set_owner(m, shim_tid(), saved);
}

int shim_mutex_unlock_all(struct shim_mutex *m, int32_t kind, uint32_t *saved)
{
	int r = shim_mutex_disown(m, kind, saved);
	if (r)
		return r;
	r = -ursa_mutex_unlock(&m->word);
	if (r)
		shim_mutex_own(m, kind, *saved);
	return r;
}

int shim_mutex_lock_all(struct shim_mutex *m, int32_t kind, uint32_t saved)
{
	int r = word_lock(&m->word);
	if (!r)
		shim_mutex_own(m, kind, saved);
	return r;
}
