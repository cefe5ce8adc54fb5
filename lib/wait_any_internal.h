/* SPDX-License-Identifier: MIT */
/*
 * lib/wait_any_internal.h — wait-any in steps, for the blocking call
 * (lib/wait_any.c) and for the ring (lib/async.c, IORING_OP_FUTEX_WAITV).
 * Private to lib/.
 *
 * State: the caller holds one struct ursa_waiter per object, ws[0..n-1],
 * zeroed before the first call and kept until the wait is over (on the
 * stack for the blocking call; in memory the op owns for a ring wait).
 * ws[i] is object i's waiter state exactly as its primitive's step uses it
 * (registered, slept, the event generation snapshot...).
 *
 * The loop every caller runs (lib/wait_any.c is the blocking reference):
 *
 *   r = ursa__wait_any_check(v, n);            once, before anything else
 *   for (;;) {
 *           r = ursa__wait_any_try(v, n, ws);   >= 0: took v[r]; finished
 *           (deadline past?  ursa__wait_any_abandon(), -ETIMEDOUT)
 *           r = ursa__wait_any_prepare(v, n, ws, fv);   >= 0: took v[r]
 *           sleep on fv[0..n-1]: futex_waitv(2) or IORING_OP_FUTEX_WAITV
 *           ursa__wait_any_woke(ws, n);         after ANY return or CQE
 *           (timed out / cancelled / error: one more ursa__wait_any_try,
 *            then ursa__wait_any_abandon())
 *   }
 *
 * A return >= 0 from try or prepare means: v[r] was taken (mutex locked,
 * semaphore decremented, event seen set and, if auto-reset, consumed) and
 * every other object has already been released — registrations undone and
 * wakes passed on (lib/wait_any.c explains why). Nothing more to do; ws is
 * spent. -EAGAIN means nothing was taken. No call here sleeps or spins;
 * the only syscalls are futex wakes. fv must stay valid while a ring
 * WAITV that uses it is in flight.
 */
#ifndef URSA_LIB_WAIT_ANY_INTERNAL_H
#define URSA_LIB_WAIT_ANY_INTERNAL_H

#include "lib/internal.h"

#include <linux/futex.h>

/* 0, or -EINVAL: v NULL, n == 0 or n > URSA_WAIT_ANY_MAX, an obj NULL,
 * an unknown kind. */
URSA_PRIVATE_FN int ursa__wait_any_check(const ursa_waitable_t *v, unsigned n);

/* Take the first object, in index order, that can be taken now (a mutex
 * as ursa__mutex_take does: FREE, or HANDED once this waiter is
 * registered). Returns the index (the others released) or -EAGAIN.
 * Touches no object it does not take. */
URSA_PRIVATE_FN int ursa__wait_any_try(const ursa_waitable_t *v, unsigned n,
				       struct ursa_waiter *ws);

/* Run every object's step: announce this waiter (mutex: CONTENDED and
 * registered; sem: registered; event: snapshot or registration) and fill
 * out[i] with the (word, value, privacy) to sleep on. A step may take its
 * object after all (it became free meanwhile): then the index is returned
 * and the others released. Returns the index, or -EAGAIN with out[0..n-1]
 * filled (val, uaddr, flags = ursa_k_futex2_flags(shared), __reserved = 0).
 * A mutex step's struct ursa_wait.bounded (sleep at most
 * URSA_HANDED_SLEEP_MS) is honoured by the blocking ursa_wait_any only,
 * as ursa__block honours it and a ring mutex wait does not. */
URSA_PRIVATE_FN int ursa__wait_any_prepare(const ursa_waitable_t *v, unsigned n,
					   struct ursa_waiter *ws, struct futex_waitv *out);

/* Record that the wait on out[] returned (woken, -EAGAIN, timeout, a CQE
 * of any result): from now on this waiter may have consumed a wake meant
 * for another sleeper of any of the n objects, and takes mutexes as a
 * waiter that slept does. */
URSA_PRIVATE_FN void ursa__wait_any_woke(struct ursa_waiter *ws, unsigned n);

/* Give up without taking anything (deadline, cancel, error): undo every
 * registration and pass on any wake this waiter may have consumed. */
URSA_PRIVATE_FN void ursa__wait_any_abandon(const ursa_waitable_t *v, unsigned n,
					    struct ursa_waiter *ws);

/* Take one unit / a set event if possible now, without registering; if w
 * is registered and it takes, it deregisters. 0 or -EBUSY. A manual-reset
 * event is "taken" when SET, or when w holds a generation snapshot and a
 * set has come since. Defined in lib/sem.c and lib/event.c. */
URSA_PRIVATE_FN int ursa__sem_take(ursa_sem_t *s, struct ursa_waiter *w);
URSA_PRIVATE_FN int ursa__event_take(ursa_event_t *e, struct ursa_waiter *w);

#endif
