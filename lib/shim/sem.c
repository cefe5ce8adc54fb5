/* SPDX-License-Identifier: MIT */
/*
 * lib/shim/sem.c — unnamed POSIX semaphores (sem_init ...) on ursa_sem_t.
 *
 * sem_t (32 bytes): ursa_sem_t at byte 0, and at byte 16 a marker written by
 * sem_init. glibc's semaphores use bytes 0-15 only and sem_open zeroes the
 * rest, so a semaphore without the marker — a named one from glibc's
 * sem_open, the only other kind a correct program can hold — goes to glibc's
 * functions, every call, consistently. sem_open/sem_close/sem_unlink are not
 * interposed.
 *
 * EINTR: POSIX and PostgreSQL want sem_wait to fail with EINTR when a signal
 * handler interrupts it (a handler installed without SA_RESTART; with it the
 * kernel restarts the futex wait, exactly as under glibc). sem_timedwait and
 * sem_clockwait fail with EINTR after any handler, SA_RESTART or not, as
 * glibc's do: the kernel restarts futex(2)'s timed wait only when no handler
 * ran (futex2's timed wait it restarts, so they use futex(2)). ursa_sem_wait
 * retries on EINTR by contract, and the public API has no interruptible
 * wait, so the blocking loop here is ursa__block_flags (lib/time.c) with
 * URSA_BLOCK_EINTR — -EINTR from the futex wait ends it — on the semaphore's
 * step/abandon from lib/internal.h.
 *
 * Cancellation: sem_wait, sem_timedwait and sem_clockwait act on a pending
 * request on entry, and while asleep: the sleep runs with asynchronous
 * cancellation enabled, and a cancelled waiter abandons its wait (which
 * passes on a unit it may have been woken for) before the program's cleanup
 * handlers run (lib/cancel.h).
 */
#include "lib/internal.h"

#include "lib/cancel.h"
#include "lib/shim/shim.h"

#include <limits.h>
#include <string.h>

#define SEM_MARKER 0x7572736173656d31ull /* "ursasem1" */

struct shim_sem {
	ursa_sem_t s;       /* 0 */
	uint32_t unused[2]; /* 8: glibc's private, pad */
	uint64_t marker;    /* 16: SEM_MARKER on ursa's semaphores */
};

_Static_assert(sizeof(struct shim_sem) <= sizeof(sem_t), "sem overlay too big");
_Static_assert(URSA_SEM_VALUE_MAX == SEM_VALUE_MAX, "the same maximum count");

static inline struct shim_sem *shim_sem(sem_t *s)
{
	return (struct shim_sem *)(void *)s;
}

static inline bool is_ursa(struct shim_sem *s)
{
	return likely(__atomic_load_n(&s->marker, __ATOMIC_RELAXED) == SEM_MARKER);
}

typedef int (*sem_fn)(sem_t *);

static int glibc(enum shim_real which, sem_t *s)
{
	return ((sem_fn)shim_real(which))(s);
}

/* POSIX: -1 with errno for a positive error, 0 for none. */
static inline int posix_ret(int err)
{
	if (likely(!err))
		return 0;
	errno = err;
	return -1;
}

SHIM_API int sem_init(sem_t *ps, int pshared, unsigned value)
{
	struct shim_sem *s = shim_sem(ps);
	if (value > SEM_VALUE_MAX || shim_misaligned(ps))
		return posix_ret(EINVAL);
	memset(ps, 0, sizeof(*ps));
	ursa_sem_init(&s->s, value, pshared ? URSA_SHARED : 0);
	__atomic_store_n(&s->marker, SEM_MARKER, __ATOMIC_RELEASE);
	return 0;
}

SHIM_API int sem_destroy(sem_t *ps)
{
	struct shim_sem *s = shim_sem(ps);
	if (!is_ursa(s))
		return glibc(REAL_SEM_DESTROY, ps);
	return posix_ret(-ursa_sem_destroy(&s->s));
}

SHIM_API int sem_post(sem_t *ps)
{
	struct shim_sem *s = shim_sem(ps);
	shim_count(ST_SEM_POST);
	if (!is_ursa(s))
		return glibc(REAL_SEM_POST, ps);
	return posix_ret(-ursa_sem_post(&s->s));
}

SHIM_API int sem_getvalue(sem_t *restrict ps, int *restrict value)
{
	struct shim_sem *s = shim_sem(ps);
	if (!is_ursa(s))
		return ((int (*)(sem_t *, int *))shim_real(REAL_SEM_GETVALUE))(ps, value);
	int v = ursa_sem_value(&s->s);
	if (v < 0)
		return posix_ret(-v);
	*value = v;
	return 0;
}

SHIM_API int sem_trywait(sem_t *ps)
{
	struct shim_sem *s = shim_sem(ps);
	shim_count(ST_SEM_TRYWAIT);
	if (!is_ursa(s))
		return glibc(REAL_SEM_TRYWAIT, ps);
	int r = ursa_sem_trywait(&s->s);
	return posix_ret(r == -EBUSY ? EAGAIN : -r);
}

static __attribute__((noinline)) int sem_block(struct shim_sem *s, clockid_t clk,
					       const struct timespec *abs)
{
	/* A post often follows shortly: spin first, as ursa_sem_wait does. */
	if (ursa__sem_spin(&s->s, abs != NULL) == 0)
		return 0;
	struct ursa_waiter w = {0};
	ursa__cancel_point.obj = &s->s;
	int r = -ursa__block_flags(&s->s, &ursa__sem_ops, &w, clk, abs, URSA_BLOCK_EINTR);
	ursa__cancel_point.obj = NULL;
	ursa__cancel_point.given = 0;
	if (r == EINTR)
		shim_count(ST_SEM_EINTR);
	return r;
}

/* The cancellation point on entry, pthread_testcancel(), comes first in
 * each exported wait, in a frame without locals (lib/shim/cond.c says why). */

SHIM_API int sem_wait(sem_t *ps)
{
	pthread_testcancel();
	struct shim_sem *s = shim_sem(ps);
	shim_count(ST_SEM_WAIT);
	if (!is_ursa(s))
		return glibc(REAL_SEM_WAIT, ps);
	if (likely(ursa_sem_trywait(&s->s) == 0))
		return 0;
	return posix_ret(sem_block(s, CLOCK_REALTIME, NULL));
}

static int timedwait(sem_t *ps, clockid_t clk, const struct timespec *abs)
{
	struct shim_sem *s = shim_sem(ps);
	struct timespec ts;
	int r;
	shim_count(ST_SEM_TIMEDWAIT);
	/* POSIX: never time out, nor check abs, when a unit is there now. */
	if (ursa_sem_trywait(&s->s) == 0)
		return 0;
	r = shim_deadline(abs, &ts);
	return posix_ret(r ? r : sem_block(s, clk, &ts));
}

SHIM_API int sem_timedwait(sem_t *restrict ps, const struct timespec *restrict abs)
{
	pthread_testcancel();
	if (!is_ursa(shim_sem(ps)))
		return ((int (*)(sem_t *, const struct timespec *))shim_real(REAL_SEM_TIMEDWAIT))(
			ps, abs);
	return timedwait(ps, CLOCK_REALTIME, abs);
}

SHIM_API int sem_clockwait(sem_t *restrict ps, clockid_t clk, const struct timespec *restrict abs)
{
	pthread_testcancel();
	if (!is_ursa(shim_sem(ps)))
		return ((int (*)(sem_t *, clockid_t, const struct timespec *))shim_real(
			REAL_SEM_CLOCKWAIT))(ps, clk, abs);
	if (!shim_clock_ok(clk))
		return posix_ret(EINVAL);
	return timedwait(ps, clk, abs);
}
