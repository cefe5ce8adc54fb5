/* SPDX-License-Identifier: MIT */
/*
 * ursa/event.h — a 4-byte event, manual- or auto-reset.
 *
 * Manual-reset: set releases every current waiter (each wait that was in
 * progress when set ran returns 0, even if reset follows at once) and the
 * event stays set until reset. Auto-reset: set releases exactly one wait
 * (the event stays set until one waiter consumes it).
 *
 * Limits (manual-reset): a waiter tells "a set came" by an 18-bit count of
 * sets. If exactly a multiple of 2^18 set/reset pairs come between its
 * start and the moment it looks again after being woken, it takes them for
 * none and waits on. For a blocked thread that window is its wake-up
 * latency; for an ursa_event_wait_async op it lasts until the event loop
 * handles the op's completion (262,144 pairs took 0.2 s here).
 */
#ifndef URSA_EVENT_H
#define URSA_EVENT_H

#include <ursa/common.h>

URSA_EXTERN_C_BEGIN

typedef struct ursa_event {
	uint32_t __word; /* private: see lib/event.c */
} ursa_event_t;

#define URSA_EVENT_INIT {0}

/* ursa_event_init flag: set releases one waiter and is consumed by it. */
#define URSA_EVENT_AUTO_RESET 0x2u

/* Initialise *e unset. flags: URSA_SHARED | URSA_EVENT_AUTO_RESET.
 * Returns 0 or -EINVAL. */
URSA_API int ursa_event_init(ursa_event_t *e, unsigned flags);

/* Set *e. Manual: wakes all waiters. Auto: releases one waiter (or leaves
 * the event set for the next). Returns 0 or -EINVAL. Never blocks. */
URSA_API int ursa_event_set(ursa_event_t *e);

/* Unset *e. Returns 0 or -EINVAL. Never blocks. */
URSA_API int ursa_event_reset(ursa_event_t *e);

/* Wait until *e is set (auto-reset: and consume it). Returns 0 or -EINVAL.
 * Blocks. */
URSA_API int ursa_event_wait(ursa_event_t *e);

/* Returns 0 if *e is set (auto-reset: consumes it), else -EBUSY; -EINVAL. */
URSA_API int ursa_event_trywait(ursa_event_t *e);

/* ursa_event_wait with a deadline. Returns 0, -ETIMEDOUT, -EINVAL. Blocks. */
URSA_API int ursa_event_timedwait(ursa_event_t *e, clockid_t clk, const struct timespec *abs);

/* Check no one waits on *e. Returns 0, -EBUSY, -EINVAL. Never blocks.
 * (Manual-reset: to tell sleepers from a mark a timed-out waiter left,
 * it may wake the sleepers, who see the event still unset and wait on.) */
URSA_API int ursa_event_destroy(ursa_event_t *e);

/* The ring and the op: liburing's struct io_uring, ursa/async.h's struct
 * ursa_op (include <liburing.h> and <ursa/async.h> to start one). */
struct io_uring;
struct ursa_op;

/* ursa_event_wait inside the ring r: op (zeroed, or URSA_OP_INIT;
 * optionally given ursa_op_set_deadline) finishes through ursa_handle_cqe
 * with res 0 when it saw *e set (auto-reset: and consumed it), -ETIMEDOUT or
 * -ECANCELED. Returns 1 (finished at once: op->res set; nothing queued), 0
 * (in flight: SQEs queued, the caller submits), -EBUSY (SQ ring full;
 * nothing changed), -EOPNOTSUPP (no io_uring futex ops), -EINVAL (NULL
 * argument, op in flight) -- the starter contract of ursa/async.h. Never
 * blocks. */
URSA_API int ursa_event_wait_async(struct io_uring *r, ursa_event_t *e, struct ursa_op *op);

URSA_EXTERN_C_END

#endif
