/* SPDX-License-Identifier: MIT */
/*
 * lib/waitq_internal.h — the wait queue's step and abandon, for the
 * blocking wait in lib/waitq.c and ursa_waitq_wait_async in lib/async.c.
 * Private to lib/. The protocol they implement is described at the top of
 * lib/waitq.c.
 *
 * A wait-queue waiter is one slot; it registers itself with
 * ursa_waitq_prepare() before either function is called, and the waker
 * dequeues it (the "object" a waiter obtains is its own wakeup). The per
 * waiter struct ursa_waiter carries nothing the queue needs: all the state
 * is in the slot's state word, which is also the futex the waiter sleeps on.
 */
#ifndef URSA_LIB_WAITQ_INTERNAL_H
#define URSA_LIB_WAITQ_INTERNAL_H

#include "lib/internal.h"

/*
 * ursa__waitq_step: has slot been woken?
 *   URSA_STEP_DONE  a wake took the slot: the wakeup is consumed and the
 *                   slot is free for the next prepare (the wait returns 0).
 *   URSA_STEP_WAIT  still queued: sleep on *out — (slot's state word,
 *                   QUEUED), with the queue's privacy — then step again.
 *                   Spurious returns from that sleep are harmless.
 *   -EINVAL         NULL or uninitialised q, slot out of range, or slot not
 *                   prepared (or already reaped by a wait or cancel).
 * Never sleeps, takes no lock, makes no system call. w may be anything
 * (it is not used), but pass the waiter's struct as the step model says.
 */
URSA_PRIVATE_FN int ursa__waitq_step(ursa_waitq_t *q, uint32_t slot, struct ursa_waiter *w,
				     struct ursa_wait *out);

/*
 * ursa__waitq_abandon: the waiter of slot gives up (deadline, cancel,
 * error). Exactly one of the waiter and the wakers takes the slot:
 *   0        still queued: dequeued here; no wake will count it (the wait
 *            reports -ETIMEDOUT / -ECANCELED);
 *   1        a wake had already dequeued it: the wait succeeded after all
 *            (the wakeup is consumed; the wait reports 0);
 *   -EINVAL  as for step (slot not prepared).
 * Either way the slot is free again afterwards. Takes the queue's list lock
 * briefly when the slot is still queued; never sleeps otherwise, makes no
 * system call other than the list lock's own wake. ursa_waitq_cancel() is
 * exactly this function.
 *
 * For async waiters: abandon must run only once the ring's FUTEX_WAIT on
 * the slot has completed (its CQE reaped). A wake wakes one kernel waiter
 * per slot; a stale wait still queued on the word could take the wake
 * meant for the slot's next waiter.
 */
URSA_PRIVATE_FN int ursa__waitq_abandon(ursa_waitq_t *q, uint32_t slot);

#endif
