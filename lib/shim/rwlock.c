/* SPDX-License-Identifier: MIT */
/*
 * lib/shim/rwlock.c — pthread_rwlock_* on ursa.
 *
 * Two algorithms, chosen by the kind, as glibc chooses (shim.h):
 *
 * Writer-preferring (PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP): the
 * ursa_rwlock_t itself (new readers wait while a writer waits; a write
 * unlock lets the readers already waiting in before the next writer:
 * ursa/rwlock.h).
 *
 * Reader-preferring (the default, and PREFER_WRITER_NP, which glibc treats
 * the same so that recursive read locks work): a reader never waits while
 * only readers hold the lock, whatever waits. The state word:
 *
 *   bit 31  WRITER   write-locked
 *   bit 30  WAITERS  someone may sleep on cv (set under mx)
 *   0-29    readers
 *
 * Uncontended read lock, write lock and unlock are one compare-and-swap on
 * the word. A thread that must wait takes mx, sets WAITERS with a CAS that
 * also re-checks the lock is still unavailable, and sleeps with
 * ursa_cond_wait(cv, mx). An unlock that finds WAITERS takes mx, makes its
 * release (clearing WAITERS when the lock becomes free) and broadcasts,
 * before dropping mx. Why no wakeup is lost: WAITERS is set only under mx
 * and the setter holds mx until ursa_cond_wait has registered it; an unlock
 * whose release CAS comes after that CAS sees WAITERS and broadcasts under
 * mx, which it can take only after the sleeper is registered; one whose
 * release comes before makes that CAS fail (the word changed), and the
 * would-be sleeper looks again. Woken threads all retry; those that still
 * cannot enter set WAITERS again. Free is always exactly 0. Releasing under
 * mx also means that once mx is free no unlock is still touching the object,
 * which pthread_rwlock_destroy relies on.
 *
 * The holder of the write lock is recorded (writer, glibc's __cur_writer),
 * for EDEADLK and so that pthread_rwlock_unlock knows which lock it drops.
 */
#include "lib/shim/shim.h"

#define RW_WRITER 0x80000000u
#define RW_WAITERS 0x40000000u
#define RW_READERS 0x3fffffffu

static inline bool writer_preferring(struct shim_rwlock *l)
{
	return __atomic_load_n(&l->kind, __ATOMIC_RELAXED) ==
	       PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP;
}

static inline int32_t writer_of(struct shim_rwlock *l)
{
	return __atomic_load_n(&l->writer, __ATOMIC_RELAXED);
}

static inline void set_writer(struct shim_rwlock *l, int32_t tid)
{
	__atomic_store_n(&l->writer, tid, __ATOMIC_RELAXED);
}

SHIM_API int pthread_rwlock_init(pthread_rwlock_t *pl, const pthread_rwlockattr_t *attr)
{
	struct shim_rwlock *l = shim_rwlock(pl);
	int kind = PTHREAD_RWLOCK_DEFAULT_NP, pshared = PTHREAD_PROCESS_PRIVATE;

	if (unlikely(shim_misaligned(pl)))
		return EINVAL;
	if (attr && (pthread_rwlockattr_getkind_np(attr, &kind) ||
		     pthread_rwlockattr_getpshared(attr, &pshared)))
		return EINVAL;
	if (kind < PTHREAD_RWLOCK_PREFER_READER_NP ||
	    kind > PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP)
		return EINVAL;
	unsigned fl = shim_reset(pl, sizeof(*pl), pshared);
	ursa_mutex_init(&l->mx, fl);
	ursa_cond_init(&l->cv, fl);
	ursa_rwlock_init(&l->wl, fl);
	__atomic_store_n(&l->kind, (uint32_t)kind, __ATOMIC_RELEASE);
	return 0;
}

SHIM_API int pthread_rwlock_destroy(pthread_rwlock_t *pl)
{
	struct shim_rwlock *l = shim_rwlock(pl);
	int r;
	if (writer_preferring(l))
		return -ursa_rwlock_destroy(&l->wl);
	if (__atomic_load_n(&l->state, __ATOMIC_ACQUIRE) != 0)
		return EBUSY;
	/* An unlock that woke sleepers may still hold mx for a moment. */
	unsigned round = 0;
	while ((r = ursa_mutex_destroy(&l->mx)) == -EBUSY)
		shim_destroy_wait(&l->mx.__word, &round);
	return -(r ? r : ursa_cond_destroy(&l->cv));
}

/* ----------------------------------------------------- reader-preferring */

static inline int rp_tryrd(struct shim_rwlock *l)
{
	uint32_t s = __atomic_load_n(&l->state, __ATOMIC_RELAXED);
	for (;;) {
		if (s & RW_WRITER)
			return EBUSY;
		if ((s & RW_READERS) == RW_READERS)
			return EAGAIN;
		if (__atomic_compare_exchange_n(&l->state, &s, s + 1, true, __ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED))
			return 0;
	}
}

static inline int rp_trywr(struct shim_rwlock *l)
{
	uint32_t s = 0;
	return __atomic_compare_exchange_n(&l->state, &s, RW_WRITER, false, __ATOMIC_ACQUIRE,
					   __ATOMIC_RELAXED)
		       ? 0
		       : EBUSY;
}

static __attribute__((noinline)) int rp_lock_slow(struct shim_rwlock *l, bool write, clockid_t clk,
						  const struct timespec *abs)
{
	unsigned round = SHIM_FULL_ROUND;
	int r = 0;
	ursa_mutex_lock(&l->mx);
	for (;;) {
		uint32_t s = __atomic_load_n(&l->state, __ATOMIC_RELAXED), want;
		if (write ? !(s & ~RW_WAITERS) : !(s & RW_WRITER)) {
			if (!write && (s & RW_READERS) == RW_READERS) {
				r = EAGAIN;
				break;
			}
			/* A writer keeps WAITERS: others may still sleep. */
			want = write ? (s | RW_WRITER) : s + 1;
			if (__atomic_compare_exchange_n(&l->state, &s, want, false, __ATOMIC_ACQUIRE,
							__ATOMIC_RELAXED)) {
				r = 0;
				break;
			}
			continue;
		}
		if (r == ETIMEDOUT)
			break; /* looked once more after the deadline: give up */
		if (!(s & RW_WAITERS) &&
		    !__atomic_compare_exchange_n(&l->state, &s, s | RW_WAITERS, false,
						 __ATOMIC_RELAXED, __ATOMIC_RELAXED))
			continue;
		r = -(abs ? ursa_cond_timedwait(&l->cv, &l->mx, clk, abs)
			  : ursa_cond_wait(&l->cv, &l->mx));
		if (r == EAGAIN) {
			/* 65535 threads already sleep on cv: wait a little
			 * with mx dropped, then look again (r: 0, or
			 * ETIMEDOUT for one last look). */
			ursa_mutex_unlock(&l->mx);
			r = shim_wait_a_little(&l->cv.__waiters, &round, clk, abs);
			ursa_mutex_lock(&l->mx);
			continue;
		}
		if (r && r != ETIMEDOUT)
			break;
	}
	ursa_mutex_unlock(&l->mx);
	return r;
}

static int rp_unlock(struct shim_rwlock *l)
{
	uint32_t s = __atomic_load_n(&l->state, __ATOMIC_RELAXED), n;
	bool locked = false;
	for (;;) {
		if (s & RW_WRITER) {
			n = 0;
		} else if (s & RW_READERS) {
			n = s - 1;
			if (!(n & RW_READERS))
				n = 0;
		} else {
			if (locked)
				ursa_mutex_unlock(&l->mx);
			return EPERM;
		}
		if ((s & RW_WAITERS) && !locked) {
			/* Sleepers may need this release: make it under mx. */
			ursa_mutex_lock(&l->mx);
			locked = true;
			s = __atomic_load_n(&l->state, __ATOMIC_RELAXED);
			continue;
		}
		if (s & RW_WRITER)
			set_writer(l, 0);
		if (__atomic_compare_exchange_n(&l->state, &s, n, false, __ATOMIC_RELEASE,
						__ATOMIC_RELAXED))
			break;
	}
	if (locked) {
		if (!(n & RW_WAITERS))
			ursa_cond_broadcast(&l->cv);
		ursa_mutex_unlock(&l->mx);
	}
	return 0;
}

/* ------------------------------------------------------ writer-preferring */

/* ursa_rwlock_t refuses a waiter with -EAGAIN when 4095 already wait (its
 * count's width). POSIX lists no EAGAIN for a write lock, and for a read
 * lock only for too many read locks: so a refused waiter waits a little and
 * tries again. A try that says -EAGAIN is the read-lock limit: that one is
 * returned. */
static int wp_lock_slow(struct shim_rwlock *l, bool write, clockid_t clk,
			const struct timespec *abs)
{
	unsigned round = 0;
	for (;;) {
		int r;
		if (write)
			r = abs ? ursa_rwlock_timedwrlock(&l->wl, clk, abs)
				: ursa_rwlock_wrlock(&l->wl);
		else
			r = abs ? ursa_rwlock_timedrdlock(&l->wl, clk, abs)
				: ursa_rwlock_rdlock(&l->wl);
		if (r != -EAGAIN)
			return -r;
		r = write ? ursa_rwlock_trywrlock(&l->wl) : ursa_rwlock_tryrdlock(&l->wl);
		if (r != -EBUSY)
			return -r;
		r = shim_wait_a_little(&l->wl.__state, &round, clk, abs);
		if (r)
			return r;
	}
}

/* The lock was not free at once: wait for it, by either algorithm. */
static __attribute__((noinline)) int lock_slow(struct shim_rwlock *l, bool write, clockid_t clk,
						 const struct timespec *abs)
{
	int r;
	if (!writer_preferring(l))
		r = rp_lock_slow(l, write, clk, abs);
	else
		r = wp_lock_slow(l, write, clk, abs);
	return r;
}

/* ----------------------------------------------------------- entry points */

static int rdlock(pthread_rwlock_t *pl, clockid_t clk, const struct timespec *abs)
{
	struct shim_rwlock *l = shim_rwlock(pl);
	int r;
	if (unlikely(shim_misaligned(pl)))
		return EINVAL;
	shim_count(ST_RW_RDLOCK);
	if (writer_preferring(l)) {
		r = -ursa_rwlock_tryrdlock(&l->wl);
		if (likely(r != EBUSY))
			return r;
	} else {
		r = rp_tryrd(l);
		if (likely(r != EBUSY))
			return r;
	}
	if (writer_of(l) == shim_tid())
		return EDEADLK;
	return lock_slow(l, false, clk, abs);
}

static int wrlock(pthread_rwlock_t *pl, clockid_t clk, const struct timespec *abs)
{
	struct shim_rwlock *l = shim_rwlock(pl);
	int32_t self = shim_tid();
	int r;
	if (unlikely(shim_misaligned(pl)))
		return EINVAL;
	shim_count(ST_RW_WRLOCK);
	r = writer_preferring(l) ? -ursa_rwlock_trywrlock(&l->wl) : rp_trywr(l);
	if (likely(!r)) {
		set_writer(l, self);
		return 0;
	}
	if (r != EBUSY)
		return r;
	if (writer_of(l) == self)
		return EDEADLK;
	r = lock_slow(l, true, clk, abs);
	if (!r)
		set_writer(l, self);
	return r;
}

SHIM_API int pthread_rwlock_rdlock(pthread_rwlock_t *pl)
{
	return rdlock(pl, CLOCK_REALTIME, NULL);
}

SHIM_API int pthread_rwlock_wrlock(pthread_rwlock_t *pl)
{
	return wrlock(pl, CLOCK_REALTIME, NULL);
}

SHIM_API int pthread_rwlock_tryrdlock(pthread_rwlock_t *pl)
{
	struct shim_rwlock *l = shim_rwlock(pl);
	if (unlikely(shim_misaligned(pl)))
		return EINVAL;
	shim_count(ST_RW_RDLOCK);
	if (writer_preferring(l))
		return -ursa_rwlock_tryrdlock(&l->wl);
	return rp_tryrd(l);
}

SHIM_API int pthread_rwlock_trywrlock(pthread_rwlock_t *pl)
{
	struct shim_rwlock *l = shim_rwlock(pl);
	int r;
	if (unlikely(shim_misaligned(pl)))
		return EINVAL;
	shim_count(ST_RW_WRLOCK);
	r = writer_preferring(l) ? -ursa_rwlock_trywrlock(&l->wl) : rp_trywr(l);
	if (!r)
		set_writer(l, shim_tid());
	return r;
}

/* glibc checks the clock and the deadline before trying; so does the shim
 * (POSIX allows either). */
static int timed(pthread_rwlock_t *pl, bool write, clockid_t clk, const struct timespec *abs)
{
	struct timespec ts;
	int r;
	if (!shim_clock_ok(clk))
		return EINVAL;
	r = shim_deadline(abs, &ts);
	if (r)
		return r;
	return write ? wrlock(pl, clk, &ts) : rdlock(pl, clk, &ts);
}

SHIM_API int pthread_rwlock_timedrdlock(pthread_rwlock_t *pl, const struct timespec *abs)
{
	return timed(pl, false, CLOCK_REALTIME, abs);
}

SHIM_API int pthread_rwlock_timedwrlock(pthread_rwlock_t *pl, const struct timespec *abs)
{
	return timed(pl, true, CLOCK_REALTIME, abs);
}

SHIM_API int pthread_rwlock_clockrdlock(pthread_rwlock_t *pl, clockid_t clk,
					const struct timespec *abs)
{
	return timed(pl, false, clk, abs);
}

SHIM_API int pthread_rwlock_clockwrlock(pthread_rwlock_t *pl, clockid_t clk,
					const struct timespec *abs)
{
	return timed(pl, true, clk, abs);
}

SHIM_API int pthread_rwlock_unlock(pthread_rwlock_t *pl)
{
	struct shim_rwlock *l = shim_rwlock(pl);
	if (unlikely(shim_misaligned(pl)))
		return EINVAL;
	shim_count(ST_RW_UNLOCK);
	if (!writer_preferring(l))
		return rp_unlock(l);
	if (writer_of(l)) {
		set_writer(l, 0);
		return -ursa_rwlock_wrunlock(&l->wl);
	}
	return -ursa_rwlock_rdunlock(&l->wl);
}
