/* SPDX-License-Identifier: MIT */
/*
 * lib/step.h — the step: ursa's one seam between a primitive and the
 * waiting. Private to lib/.
 *
 * Every wait is a step: try to take the object; if that is not possible
 * now, say what to sleep on — "sleep while *addr == val" — and step again
 * after any return from that sleep. A blocked thread sleeps in a futex
 * system call (ursa__block, lib/time.c); a ring waiter queues an
 * IORING_OP_FUTEX_WAIT with the same (addr, val) and the same key privacy
 * and steps again when its CQE comes (lib/async.c). Wait-any runs the steps
 * of up to 128 objects and sleeps on all of their words at once.
 *
 * Why no wakeup is lost, for every primitive: a waiter sleeps only on a
 * value it saw (or stored) after announcing itself in the object's words,
 * and the kernel compares *addr with val under the futex hash-bucket lock
 * before it queues the sleeper. A waker changes the word first and wakes
 * after, so either the sleep finds the new value (-EAGAIN; the waiter steps
 * again) or the sleeper is queued before the wake looks for it. Syscall
 * waiters and io_uring waiters sit in the same hash bucket, so a wake from
 * either side finds both. Each primitive's file says what its announcement
 * is and which wakes it guarantees; its spin model checks it.
 *
 * A primitive describes itself with one const struct ursa_step_ops, defined
 * in its own .c file and listed once in lib/ops.h.
 */
#ifndef URSA_LIB_STEP_H
#define URSA_LIB_STEP_H

#include <stdbool.h>
#include <stdint.h>

/* What a step asks for when it cannot take the object now. */
enum ursa_arm {
	URSA_ARM_FUTEX = 0, /* sleep while *addr == val */
	URSA_ARM_WAITV,	    /* sleep on the struct futex_waitv array addr[0..val-1] */
	URSA_ARM_WAITID,    /* (ring only) IORING_OP_WAITID: addr siginfo_t *,
			       val options, a idtype, b id */
};

struct ursa_wait {
	void *addr;
	uint32_t val;
	uint32_t a, b;
	uint32_t bound_us; /* blocking waiters: sleep at most this long, then
			      step again (0: no bound; a ring wait ignores it) */
	uint32_t bits;	   /* URSA_ARM_FUTEX: the sleeper's futex bitset (0: any;
			      kernel/futex.h ursa_k_futex_wake_bits) */
	uint8_t kind;	 /* enum ursa_arm */
	bool shared;	 /* futex key privacy (every waiter and waker agree) */
	int res;	 /* with URSA_STEP_DONE: the wait's result (wait-any: the
			    index taken); 0 otherwise */
};

/* Per-waiter state carried across retries: on the stack for a blocked
 * thread, inside struct ursa_op for a ring waiter. Zero-initialised, or a
 * copy of the primitive's ring template for a ring waiter. */
struct ursa_waiter {
	uint32_t slept;	     /* has slept at least once (may claim a hand-off);
				URSA_SLEPT_WOKEN: its last sleep (on one
				futex word) ended in a wake */
	uint32_t losses;     /* woken, then lost the race to another locker */
	uint32_t aux;	     /* per primitive: a sequence/generation snapshot;
				mutex: URSA_W_* flags; wait queue: the slot */
	uint32_t registered; /* counted in the object's words */
};

#define URSA_SLEPT_WOKEN 2

/* Step results. */
#define URSA_STEP_DONE 0 /* taken */
#define URSA_STEP_WAIT 1 /* not now: wait on *out, then step again */

/* ursa_step_ops.flags */
#define URSA_OPS_CQE_RESULT 0x1u /* ring: the wait's CQE result is the op's
				    result (waitid); no step after it */

struct ursa_step_ops {
	const char *name;
	/* Take the object, or say what to sleep on. Returns URSA_STEP_DONE
	 * (taken; any registration undone; out->res the result),
	 * URSA_STEP_WAIT (*out filled; the caller sleeps, sets w->slept = 1
	 * after any return from the sleep, URSA_SLEPT_WOKEN after a futex
	 * wake of its one word, and steps again), or -errno
	 * (nothing taken, nothing registered: bad input). Never sleeps, never
	 * spins long — a ring waiter runs it inside the event loop — and
	 * makes no system call but wakes. */
	int (*step)(void *obj, struct ursa_waiter *w, struct ursa_wait *out);
	/* Give up after a WAIT (deadline, cancel, error): undo the
	 * registration, pass on whatever this waiter may have been handed.
	 * Returns 0 (nothing held) or 1 (the object had already been given to
	 * this waiter — a wait-queue slot a waker dequeued, a condvar signal
	 * this waiter's wake consumed: the wait succeeded, report 0). */
	int (*abandon)(void *obj, struct ursa_waiter *w);
	/* Wait-any only (NULL where the object cannot be in a wait-any):
	 * take it now as waiter w would, without announcing anything;
	 * deregisters w if it takes. 0 or -EBUSY. */
	int (*take)(void *obj, struct ursa_waiter *w);
	/* Wait-any only: leave without taking this object, after having
	 * announced (and maybe slept): abandon, then pass on any wake this
	 * waiter may have consumed. NULL: abandon is enough. */
	void (*release)(void *obj, struct ursa_waiter *w);
	/* Blocked thread cancelled in its sleep (pthread_cancel through the
	 * shim, lib/cancel.h): give up as abandon does, and pass on whatever
	 * this waiter was given, since it will not report it, before the
	 * last touch of obj. NULL: abandon (its result becomes .given). */
	void (*cancelled)(void *obj, struct ursa_waiter *w);
	/* A composite wait (the condvar: its wait, then its mutex): once
	 * this wait is over, whatever its result, the op takes its second
	 * object with these ops, ignoring cancel and deadline. */
	const struct ursa_step_ops *then;
	/* Ring only: after the op finishes (wait-any frees its state). */
	void (*fini)(void *obj);
	/* Ring only: whether every futex word a wait on obj sleeps on is
	 * process-shared (URSA_SHARED; constant after init). Such waits need
	 * no private futex hash (kernel/futex.c). NULL: take them as private. */
	bool (*shared)(const void *obj);
	/* How a ring waiter's state starts (the mutex: it counts as having
	 * slept and is a ring waiter, lib/mutex.c). */
	struct ursa_waiter ring;
	unsigned flags;
};

#endif
