/* SPDX-License-Identifier: MIT */
/*
 * lib/internal.h — what the primitives share. Private to lib/.
 *
 * Every primitive's slow path is written as a *step*: try to take the
 * object; if that is not possible now, say which futex word to wait on and
 * the value it must still hold ("sleep while *addr == val"). The blocking
 * API loops step -> futex wait; the async API (lib/async.c) arms an
 * IORING_OP_FUTEX_WAIT with the same (addr, val) and calls the step again
 * when the CQE arrives. One protocol, two ways to wait, the same futex key:
 * a wake from either side wakes both kinds of waiter.
 */
#ifndef URSA_LIB_INTERNAL_H
#define URSA_LIB_INTERNAL_H

#define URSA_NO_INLINE 1 /* lib/ defines the exported functions themselves */

#include "config.h"

#include "kernel/arch.h"
#include "kernel/futex.h"
#include "ursa.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#define URSA_PRIVATE_FN __attribute__((visibility("hidden")))
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

/* Relaxed/acquire/release shorthands on 32-bit words. */
#define ld_relaxed(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define ld_acquire(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define cas_acq(p, e, d) \
	__atomic_compare_exchange_n((p), (e), (d), false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)
#define cas_rel(p, e, d) \
	__atomic_compare_exchange_n((p), (e), (d), false, __ATOMIC_RELEASE, __ATOMIC_RELAXED)
#define cas_acqrel(p, e, d) \
	__atomic_compare_exchange_n((p), (e), (d), false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)
#define cas_relaxed(p, e, d) \
	__atomic_compare_exchange_n((p), (e), (d), false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)
#define cas_seqcst(p, e, d) \
	__atomic_compare_exchange_n((p), (e), (d), false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)

/* Spin iterations before sleeping: about a microsecond or two of PAUSE.
 * Long enough to cover a short critical section on another core, short
 * enough to be noise against a futex sleep/wake round trip (~5-10 us). */
#define URSA_SPIN 100

/* A futex wait to arm: sleep while *addr == val. */
struct ursa_wait {
	uint32_t *addr;
	uint32_t val;
	bool shared;
	bool bounded; /* blocking waiters: sleep at most URSA_HANDED_SLEEP_MS */
};

/* Longest a bounded wait sleeps before stepping again (lib/mutex.c). */
#define URSA_HANDED_SLEEP_MS 10

/* Per-waiter state carried across retries: on the stack for a blocked
 * thread, inside struct ursa_op for a ring waiter. Zero-initialised. */
struct ursa_waiter {
	uint32_t slept;      /* has slept at least once (may claim a hand-off) */
	uint32_t losses;     /* woken, then lost the race to another locker */
	uint32_t aux;        /* per primitive: a sequence/generation snapshot;
				mutex: URSA_W_* flags */
	uint32_t registered; /* counted in the object's waiter count */
};

/* Mutex waiter flags in struct ursa_waiter.aux. */
#define URSA_W_RING 0x1u /* an io_uring waiter (lib/async.c) */
#define URSA_W_REQ 0x2u  /* this waiter has set the hand-off request */

/* Step results. */
#define URSA_STEP_DONE 0 /* taken */
#define URSA_STEP_WAIT 1 /* not now: wait on *out, then step again */

/*
 * Primitive steps, used by the blocking API and by lib/async.c.
 *
 * step(obj, w, out): returns URSA_STEP_DONE (taken; any registration the
 *   waiter made is undone), URSA_STEP_WAIT (not now: *out says what to sleep
 *   on; the caller sleeps — futex syscall or ring FUTEX_WAIT — sets
 *   w->slept = 1 after any return from that sleep, and calls step again), or
 *   -errno (nothing taken, registration undone). Never sleeps, never spins
 *   long: a ring waiter runs it inside the event loop.
 * abandon(obj, w): the waiter gives up after a WAIT (deadline, cancel,
 *   error). Undoes its registration and passes on anything it may have been
 *   handed. Returns 0 (gave up: nothing held) or 1 (the object had already
 *   been given to this waiter — e.g. a wait-queue slot a waker dequeued —
 *   so the wait succeeded and the caller reports 0, holding it).
 * Every step and abandon is an atomic protocol on the object's words alone:
 * no locks, no allocation, no syscall other than wakes.
 */
URSA_PRIVATE_FN int ursa__mutex_step(ursa_mutex_t *m, struct ursa_waiter *w,
				     struct ursa_wait *out);
URSA_PRIVATE_FN int ursa__mutex_abandon(ursa_mutex_t *m, struct ursa_waiter *w);
/* Lock without spinning first: for a condvar waiter re-taking its mutex,
 * whose signaller usually still holds it — and, woken onto the signaller's
 * CPU, would only keep it from running by spinning. */
URSA_PRIVATE_FN int ursa__mutex_lock_nospin(ursa_mutex_t *m);
/* For wait-any: take the mutex as waiter w would (FREE; HANDED once w has
 * slept), deregistering w. 0 or -EBUSY; never waits. */
URSA_PRIVATE_FN int ursa__mutex_take(ursa_mutex_t *m, struct ursa_waiter *w);
/* For wait-any, after taking another object: a wake meant for this mutex's
 * sleepers may have been consumed; pass it on (wake one if FREE; claim and
 * unlock if HANDED). */
URSA_PRIVATE_FN void ursa__mutex_pass_on(ursa_mutex_t *m);

URSA_PRIVATE_FN int ursa__rwlock_rd_step(ursa_rwlock_t *l, struct ursa_waiter *w,
					 struct ursa_wait *out);
URSA_PRIVATE_FN int ursa__rwlock_rd_abandon(ursa_rwlock_t *l, struct ursa_waiter *w);
URSA_PRIVATE_FN int ursa__rwlock_wr_step(ursa_rwlock_t *l, struct ursa_waiter *w,
					 struct ursa_wait *out);
URSA_PRIVATE_FN int ursa__rwlock_wr_abandon(ursa_rwlock_t *l, struct ursa_waiter *w);

URSA_PRIVATE_FN int ursa__sem_step(ursa_sem_t *s, struct ursa_waiter *w, struct ursa_wait *out);
URSA_PRIVATE_FN int ursa__sem_abandon(ursa_sem_t *s, struct ursa_waiter *w);

URSA_PRIVATE_FN int ursa__event_step(ursa_event_t *e, struct ursa_waiter *w,
				     struct ursa_wait *out);
URSA_PRIVATE_FN int ursa__event_abandon(ursa_event_t *e, struct ursa_waiter *w);

/* Condition variable, in two parts. begin: called holding m; validates
 * (m locked, c and m of the same privacy: else -EPERM / -EINVAL), registers
 * the waiter and snapshots the sequence into w->aux. The caller then
 * unlocks m itself and runs step/abandon like any other wait; step returns
 * DONE once a signal or broadcast came after begin (spurious DONE allowed,
 * as with pthreads). After DONE or abandon the caller re-locks m. */
URSA_PRIVATE_FN int ursa__cond_begin(ursa_cond_t *c, ursa_mutex_t *m, struct ursa_waiter *w);
URSA_PRIVATE_FN int ursa__cond_step(ursa_cond_t *c, struct ursa_waiter *w, struct ursa_wait *out);
URSA_PRIVATE_FN int ursa__cond_abandon(ursa_cond_t *c, struct ursa_waiter *w);

/*
 * io_uring user_data tags (top byte). Application values have a zero top
 * byte (user-space pointers are below 2^56, small integers), so they never
 * match. Only the wait's own CQE carries a pointer (to its struct ursa_op);
 * auxiliary requests (linked timeouts, cancels, batched wakes) carry a kind
 * and no pointer, so their late CQEs can never make ursa touch a finished op.
 */
#define URSA_TAG_OP 0xA5u  /* bits 0-55: struct ursa_op * */
#define URSA_TAG_AUX 0xA4u /* bits 48-55: one of URSA_AUX_*; no pointer */
#define URSA_AUX_TIMEOUT 1u
#define URSA_AUX_CANCEL 2u
#define URSA_AUX_WAKE 3u
#define URSA_PTR_MASK 0x00ffffffffffffffull

static inline uint64_t ursa__aux_tag(unsigned kind)
{
	return ((uint64_t)URSA_TAG_AUX << 56) | ((uint64_t)kind << 48);
}

/* Validate (clk, abs): -EINVAL for a clock other than MONOTONIC/REALTIME
 * or a malformed timespec; 0 otherwise (abs may be NULL). */
URSA_PRIVATE_FN int ursa__check_deadline(clockid_t clk, const struct timespec *abs);
/* true when abs (non-NULL) is already past on clk. */
URSA_PRIVATE_FN bool ursa__deadline_passed(clockid_t clk, const struct timespec *abs);

/* Generic blocking loop over a step function: step; on WAIT sleep on the
 * futex (EINTR and spurious wakes just step again); on deadline, one last
 * step, then abandon and return -ETIMEDOUT (or 0 if abandon says the object
 * was already ours). A deadline already past is one step, no sleep. */
typedef int (*ursa_step_fn)(void *obj, struct ursa_waiter *w, struct ursa_wait *out);
typedef int (*ursa_abandon_fn)(void *obj, struct ursa_waiter *w);
URSA_PRIVATE_FN int ursa__block(void *obj, ursa_step_fn step, ursa_abandon_fn abandon,
				struct ursa_waiter *w, clockid_t clk, const struct timespec *abs);
/* ursa__block with flags: URSA_BLOCK_EINTR ends the wait with -EINTR when a
 * signal handler interrupts the sleep (after one last step; POSIX
 * sem_wait semantics, for the pthread shim). */
#define URSA_BLOCK_EINTR 0x1u
URSA_PRIVATE_FN int ursa__block_flags(void *obj, ursa_step_fn step, ursa_abandon_fn abandon,
				      struct ursa_waiter *w, clockid_t clk,
				      const struct timespec *abs, unsigned flags);

#endif
