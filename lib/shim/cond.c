/* SPDX-License-Identifier: MIT */
/*
 * lib/shim/cond.c — pthread_cond_* on ursa_cond_t.
 *
 * Every condvar is ursa's (there is nothing for glibc to do better). With an
 * ursa-kind mutex of the same privacy the wait is ursa_cond_wait on the
 * mutex's own word, after the recursion/ownership record is set aside.
 *
 * Any other mutex — one handed to glibc (robust, priority-inherit,
 * priority-protect), or one whose privacy differs from the condvar's, which
 * POSIX allows and ursa_cond_wait refuses — is *bridged* through the
 * condvar's guard, an ursa mutex of the condvar's privacy:
 *
 *   waiter:  bridged++; lock guard; unlock caller's mutex (glibc's function
 *            for a glibc mutex); ursa_cond_wait(c, guard); unlock guard;
 *            bridged--; relock caller's mutex (EOWNERDEAD passes through).
 *   waker:   if bridged != 0: lock guard; signal/broadcast; unlock guard.
 *
 * Why no wakeup is lost: a waker that changed the predicate under the
 * caller's mutex after the waiter dropped it sees bridged != 0 (the waiter's
 * increment happens before its unlock of that mutex, which happens before the
 * waker's lock of it) and so must take guard, which the waiter holds from
 * before dropping the mutex until ursa_cond_wait has registered it. The
 * waiter leaves `bridged` before relocking the caller's mutex, so a thread
 * holding that mutex may destroy the condvar: pthread_cond_destroy waits for
 * bridged == 0 and for ursa's waiters to leave, as glibc's does.
 *
 * Cancellation (deferred, as glibc's): pthread_cond_wait acts on a pending
 * request on entry, holding the mutex, and while asleep: ursa's blocking
 * loop enables asynchronous cancellation around the futex call alone and
 * abandons the wait if cancelled there, passing on a signal the waiter may
 * have consumed before it leaves (lib/cancel.h). Our cleanup handler then
 * re-takes the caller's mutex, so the program's handlers run holding it, as
 * POSIX wants.
 */
#include "lib/shim/shim.h"

#include "lib/cancel.h"

typedef int (*mutex_fn)(pthread_mutex_t *);

SHIM_API int pthread_cond_init(pthread_cond_t *pc, const pthread_condattr_t *attr)
{
	struct shim_cond *c = shim_cond(pc);
	int pshared = PTHREAD_PROCESS_PRIVATE;
	clockid_t clk = CLOCK_REALTIME;

	if (unlikely(shim_misaligned(pc)))
		return EINVAL;
	if (attr && (pthread_condattr_getpshared(attr, &pshared) ||
		     pthread_condattr_getclock(attr, &clk)))
		return EINVAL;
	if (!shim_clock_ok(clk))
		return EINVAL;
	unsigned fl = shim_reset(pc, sizeof(*pc), pshared);
	ursa_cond_init(&c->c, fl);
	ursa_mutex_init(&c->guard, fl);
	__atomic_store_n(&c->flags,
			 (fl ? SHIM_COND_SHARED : 0) |
				 (clk == CLOCK_MONOTONIC ? SHIM_COND_MONOTONIC : 0),
			 __ATOMIC_RELEASE);
	return 0;
}

SHIM_API int pthread_cond_destroy(pthread_cond_t *pc)
{
	struct shim_cond *c = shim_cond(pc);
	unsigned round = 0;
	int r;
	/* Woken waiters may still be on their way out (POSIX lets the program
	 * destroy a condvar right after a broadcast): wait for them, as glibc
	 * does. They leave without needing anything from us; we sleep on the
	 * count that changes as they go (bridged, or ursa's waiter count). */
	for (;;) {
		if (__atomic_load_n(&c->bridged, __ATOMIC_ACQUIRE)) {
			shim_destroy_wait(&c->bridged, &round);
			continue;
		}
		r = ursa_cond_destroy(&c->c);
		if (r != -EBUSY)
			break;
		shim_destroy_wait(&c->c.__waiters, &round);
	}
	return -r;
}

static int wake_bridged(struct shim_cond *c, bool all)
{
	ursa_mutex_lock(&c->guard);
	int r = all ? ursa_cond_broadcast(&c->c) : ursa_cond_signal(&c->c);
	ursa_mutex_unlock(&c->guard);
	return -r;
}

/* Signal (all: broadcast); inlined into each, so each keeps its own fast path. */
static inline __attribute__((always_inline)) int cond_wake(pthread_cond_t *pc, bool all)
{
	struct shim_cond *c = shim_cond(pc);
	if (unlikely(shim_misaligned(pc)))
		return EINVAL;
	shim_count(all ? ST_COND_BROADCAST : ST_COND_SIGNAL);
	if (unlikely(__atomic_load_n(&c->bridged, __ATOMIC_SEQ_CST)))
		return wake_bridged(c, all);
	return -(all ? ursa_cond_broadcast(&c->c) : ursa_cond_signal(&c->c));
}

SHIM_API int pthread_cond_signal(pthread_cond_t *pc)
{
	return cond_wake(pc, false);
}

SHIM_API int pthread_cond_broadcast(pthread_cond_t *pc)
{
	return cond_wake(pc, true);
}

/* The wait proper: a cancellation point while it sleeps (lib/cancel.h). */
static int ursa_wait(ursa_cond_t *c, ursa_mutex_t *m, clockid_t clk, const struct timespec *abs)
{
	ursa__cancel_point.obj = c;
	int r = abs ? ursa_cond_timedwait(c, m, clk, abs) : ursa_cond_wait(c, m);
	ursa__cancel_point.obj = NULL;
	return -r;
}

/* ursa refused the wait with m still held: 65535 threads already wait on c
 * (ursa_cond_t's width). POSIX lists no such error, so let m go for a
 * little while, as a wait would, and report a spurious wakeup (0), or
 * ETIMEDOUT past the deadline: callers look at their predicate again. */
static int wait_full(ursa_cond_t *c, ursa_mutex_t *m, clockid_t clk, const struct timespec *abs)
{
	unsigned round = SHIM_FULL_ROUND;
	ursa_mutex_unlock(m);
	int r = shim_wait_a_little(&c->__waiters, &round, clk, abs);
	ursa_mutex_lock(m);
	return r;
}

/* What a cancelled waiter's cleanup needs to put things back. */
struct cancel_undo {
	struct shim_cond *c;
	pthread_mutex_t *pm;
	int32_t kind;
	uint32_t saved;
	bool bridged;
};

/* Cancelled asleep; ursa's cleanup has passed on a signal that may have
 * woken us and deregistered the waiter, in that order (lib/cond.c,
 * cond_cancelled: the condvar may be destroyed once we left it). Leave the
 * bridge, and re-take the caller's mutex (the program's handlers expect to
 * hold it). */
static void cond_cancelled(void *arg)
{
	struct cancel_undo *u = arg;
	struct shim_mutex *m = shim_mutex(u->pm);
	ursa__cancel_point.given = 0;
	if (u->bridged) {
		__atomic_fetch_sub(&u->c->bridged, 1, __ATOMIC_RELEASE);
		if (kind_is_glibc(u->kind))
			((mutex_fn)shim_real(REAL_MUTEX_LOCK))(u->pm);
		else
			shim_mutex_lock_all(m, u->kind, u->saved);
	} else {
		/* ursa_cond_wait's own re-lock did not run. */
		ursa_mutex_lock(&m->word);
		shim_mutex_own(m, u->kind, u->saved);
	}
}

static __attribute__((noinline)) int wait_bridged(struct shim_cond *c, pthread_mutex_t *pm,
						   int32_t kind, clockid_t clk,
						   const struct timespec *abs)
{
	struct shim_mutex *m = shim_mutex(pm);
	bool glibc = kind_is_glibc(kind);
	uint32_t saved = 0;
	int r, r2;

	shim_count(ST_COND_BRIDGED);
	__atomic_fetch_add(&c->bridged, 1, __ATOMIC_SEQ_CST);
	ursa_mutex_lock(&c->guard);
	r = glibc ? ((mutex_fn)shim_real(REAL_MUTEX_UNLOCK))(pm)
		  : shim_mutex_unlock_all(m, kind, &saved);
	if (r) {
		ursa_mutex_unlock(&c->guard);
		__atomic_fetch_sub(&c->bridged, 1, __ATOMIC_RELEASE);
		return r;
	}
	struct cancel_undo u = {c, pm, kind, saved, true};
	pthread_cleanup_push(cond_cancelled, &u);
	r = ursa_wait(&c->c, &c->guard, clk, abs);
	pthread_cleanup_pop(0);
	if (r == EAGAIN)
		r = wait_full(&c->c, &c->guard, clk, abs); /* pm is let go already */
	ursa_mutex_unlock(&c->guard);
	__atomic_fetch_sub(&c->bridged, 1, __ATOMIC_RELEASE);
	/* c may be destroyed from here on. */
	r2 = glibc ? ((mutex_fn)shim_real(REAL_MUTEX_LOCK))(pm) : shim_mutex_lock_all(m, kind, saved);
	return r2 ? r2 : r;
}

static int cond_wait(pthread_cond_t *pc, pthread_mutex_t *pm, clockid_t clk,
		     const struct timespec *abs)
{
	struct shim_cond *c = shim_cond(pc);
	struct shim_mutex *m = shim_mutex(pm);
	int32_t kind = __atomic_load_n(&m->kind, __ATOMIC_RELAXED);
	bool c_shared = __atomic_load_n(&c->flags, __ATOMIC_RELAXED) & SHIM_COND_SHARED;
	bool m_shared = kind & SHIM_MUTEX_SHARED;
	uint32_t saved;
	int r;

	if (unlikely(kind_is_glibc(kind) || c_shared != m_shared)) {
		r = wait_bridged(c, pm, kind, clk, abs);
	} else {
		r = shim_mutex_disown(m, kind, &saved);
		if (!r) {
			struct cancel_undo u = {c, pm, kind, saved, false};
			pthread_cleanup_push(cond_cancelled, &u);
			r = ursa_wait(&c->c, &m->word, clk, abs);
			pthread_cleanup_pop(0);
			if (r == EAGAIN)
				r = wait_full(&c->c, &m->word, clk, abs);
			shim_mutex_own(m, kind, saved);
		}
	}
	return r;
}

/* The waits' cancellation point on entry, pthread_testcancel(), comes first
 * in the exported functions' own frames: an unwind from there passes no
 * frame of the shim's with locals (which under ASan would stay poisoned:
 * its runtime does not see the forced unwind of a cancellation). A
 * cancellation while asleep unwinds through ursa's and the shim's frames. */
SHIM_API int pthread_cond_wait(pthread_cond_t *pc, pthread_mutex_t *pm)
{
	pthread_testcancel();
	if (unlikely(shim_misaligned(pc) || shim_misaligned(pm)))
		return EINVAL;
	shim_count(ST_COND_WAIT);
	return cond_wait(pc, pm, CLOCK_REALTIME, NULL);
}

static int cond_timedwait(pthread_cond_t *pc, pthread_mutex_t *pm, clockid_t clk,
			  const struct timespec *abs)
{
	struct timespec ts;
	int r;
	shim_count(ST_COND_TIMEDWAIT);
	if (!shim_clock_ok(clk))
		return EINVAL;
	r = shim_deadline(abs, &ts);
	if (r)
		return r;
	return cond_wait(pc, pm, clk, &ts);
}

SHIM_API int pthread_cond_timedwait(pthread_cond_t *pc, pthread_mutex_t *pm,
				    const struct timespec *abs)
{
	pthread_testcancel();
	if (unlikely(shim_misaligned(pc) || shim_misaligned(pm)))
		return EINVAL;
	uint32_t fl = __atomic_load_n(&shim_cond(pc)->flags, __ATOMIC_RELAXED);
	return cond_timedwait(pc, pm, (fl & SHIM_COND_MONOTONIC) ? CLOCK_MONOTONIC : CLOCK_REALTIME,
			      abs);
}

SHIM_API int pthread_cond_clockwait(pthread_cond_t *pc, pthread_mutex_t *pm, clockid_t clk,
				    const struct timespec *abs)
{
	pthread_testcancel();
	if (unlikely(shim_misaligned(pc) || shim_misaligned(pm)))
		return EINVAL;
	return cond_timedwait(pc, pm, clk, abs);
}
