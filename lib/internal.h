/* SPDX-License-Identifier: MIT */
/*
 * lib/internal.h — what the primitives share. Private to lib/.
 *
 * Every slow path is a step (lib/step.h); each primitive's table is
 * listed in lib/ops.h.
 */
#ifndef URSA_LIB_INTERNAL_H
#define URSA_LIB_INTERNAL_H

#define URSA_NO_INLINE 1 /* lib/ defines the exported functions themselves */

#include "config.h"

#include "kernel/arch.h"
#include "kernel/futex.h"
#include "lib/ops.h"
#include "lib/step.h"
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

/* Longest a bounded wait sleeps before stepping again (lib/mutex.c). */
#define URSA_HANDED_SLEEP_MS 10

/* Waiter flags in struct ursa_waiter.aux (the mutex; URSA_W_REQ and the
 * stamp also the semaphore, URSA_W_RING also the rwlock's writer). */
#define URSA_W_RING 0x1u /* an io_uring waiter (lib/async.c) */
#define URSA_W_REQ 0x2u  /* this waiter has set the hand-off request */
#define URSA_W_STAMPED 0x4u /* bits 8-31 hold when it first waited */
#define URSA_W_STAMP_SHIFT 8
#define URSA_W_UNIT_SHIFT 16 /* the stamp's unit: 2^16 ns */

/* Waiting time after which a waiter asks for a hand-off (the mutex, the
 * semaphore): the bound on how long newcomers may overtake it. With more
 * than 7 waiters registered it is URSA_FAIR_PER_WAITER_NS for each
 * (lib/mutex.c, "Hand-offs"), capped at URSA_FAIR_MAX_NS. */
#define URSA_FAIR_NS 1000000
#define URSA_FAIR_PER_WAITER_NS 131072
#define URSA_FAIR_MAX_NS 1000000000
/* Lost races before a ring waiter asks for a hand-off (the mutex, the
 * rwlock's writers): a ring waiter's wake reaches it late. */
#define URSA_HANDOFF_AFTER 2

/* Has this waiter waited ns (at most URSA_FAIR_MAX_NS) since the first
 * time it was asked? (That first call stamps it, in aux; taking or leaving
 * clears URSA_W_STAMPED.) */
static inline bool ursa__waited_ns(struct ursa_waiter *w, uint64_t ns)
{
	uint32_t now = (uint32_t)((ursa_k_now_ns() >> URSA_W_UNIT_SHIFT) & 0xffffffu);
	if (!(w->aux & URSA_W_STAMPED)) {
		w->aux = (w->aux & ((1u << URSA_W_STAMP_SHIFT) - 1)) | URSA_W_STAMPED |
			 (now << URSA_W_STAMP_SHIFT);
		return false;
	}
	uint32_t since = (now - (w->aux >> URSA_W_STAMP_SHIFT)) & 0xffffffu;
	if (ns > URSA_FAIR_MAX_NS)
		ns = URSA_FAIR_MAX_NS;
	return since >= (uint32_t)(ns >> URSA_W_UNIT_SHIFT);
}

/* Has this waiter, with nwaiters registered, waited long enough to ask
 * for a hand-off? */
static inline bool ursa__waited_fair(struct ursa_waiter *w, uint32_t nwaiters)
{
	uint64_t ns = (uint64_t)nwaiters * URSA_FAIR_PER_WAITER_NS;
	return ursa__waited_ns(w, ns > URSA_FAIR_NS ? ns : URSA_FAIR_NS);
}

/*
 * Adaptive spinning, for waits whose length the object cannot tell (a
 * semaphore's post, a wait queue's wake: microseconds for a lock-like
 * semaphore, milliseconds for a group commit's fdatasync). The object
 * keeps a 4-bit hint, est: how many rounds of ursa_k_spin paid off lately,
 * stored as URSA_SPIN_EST_MAX - est so that a zeroed object starts at the
 * most (a lock-like semaphore that never spun would find its waiters
 * always asleep, and spinning stops while anyone sleeps).
 * A wait spins up to est rounds (with est 0, one round in every 64th wait,
 * to notice when waits get short again); a spin that ends in the wake
 * raises est to one more than the rounds it took, one that ends in a
 * sleep halves it. A hint only: racing updates lose nothing but a round.
 * Measured (bench/README.md): a fixed 16-round spin made a group commit's
 * waits over fdatasync cost 3x the context switches; this keeps them at
 * par and still takes the short waits.
 */
#define URSA_SPIN_EST_MAX 15u

static inline unsigned ursa__spin_est(uint32_t stored)
{
	return URSA_SPIN_EST_MAX - (stored & URSA_SPIN_EST_MAX);
}

static inline uint32_t ursa__spin_est_stored(unsigned est)
{
	return URSA_SPIN_EST_MAX - est;
}

static inline int ursa__spin_budget(unsigned est)
{
	static __thread unsigned probe;
	return est ? (int)est : (++probe & 63) == 0;
}

/* est after a wait that spun `rounds` rounds of a budget, and then had
 * what it waited for (won) or slept. */
static inline unsigned ursa__spin_learn(unsigned est, int rounds, bool won)
{
	if (!won)
		return est / 2;
	unsigned want = (unsigned)rounds + 1u;
	if (want > URSA_SPIN_EST_MAX)
		want = URSA_SPIN_EST_MAX;
	return want > est ? want : est;
}

/* The semaphore's spin before sleeping (lib/sem.c), for the shim's
 * sem_wait too: 0 if it took a unit, -EBUSY (sleep now). */
URSA_PRIVATE_FN int ursa__sem_spin(ursa_sem_t *s, bool timed);

/* Turns (lib/mutex.c): how long a thread may keep releasing a mutex, or
 * posting a semaphore, to a woken waiter that has not run yet (a
 * semaphore: or to the same semaphore's waiters, post after post) before
 * it yields its CPU, and at which of those releases it looks at the clock.
 * ursa__let_woken_run: we released with a woken waiter on its way;
 * ursa__turn_stop: we released with none (or handed off). Both inline but
 * for the clock: a contended unlock or post reaches them. The thread's
 * state is initial-exec TLS (as lib/cancel.h's): no __tls_get_addr. */
#define URSA_TURN_NS 1000000
#define URSA_TURN_LOOK_EVERY 64
/* The semaphore's turn: shorter, because a semaphore's poster keeps
 * posting and waiting again, and the share of the threads it keeps out
 * follows how often the turn passes (lib/sem.c, "Turns"). */
#define URSA_SEM_TURN_NS 25000
struct ursa__turn_state {
	unsigned woken_releases;
	uint64_t since; /* when this run of such releases was first timed; 0: not timing */
	const void *posted; /* the semaphore this thread last posted with waiters
			       registered (lib/sem.c, "Turns") */
};
extern __thread struct ursa__turn_state ursa__turn
	__attribute__((tls_model("initial-exec"), visibility("hidden")));
URSA_PRIVATE_FN void ursa__turn_look(uint64_t turn_ns);

static inline void ursa__let_woken_run_ns(uint64_t turn_ns)
{
	if (++ursa__turn.woken_releases % URSA_TURN_LOOK_EVERY == 0)
		ursa__turn_look(turn_ns);
}

static inline void ursa__let_woken_run(void)
{
	ursa__let_woken_run_ns(URSA_TURN_NS);
}

static inline void ursa__turn_stop(void)
{
	ursa__turn.since = 0;
}

/* destroy's wait for an unlock's or a post's pin to go (lib/mutex.c,
 * lib/sem.c), and a waker's for a free pin: the i-th wait (from 0): 64
 * yields, then 1 ms sleeps; false after about a second (the pin's holder
 * vanished: a process killed while it held it). */
URSA_PRIVATE_FN bool ursa__pin_wait(unsigned i);

/* Take a pin in *word, before a release after which the caller will still
 * look at the object (lib/sem.c, lib/rwlock.c, lib/latch.c: "Pins"): the
 * pins are the bits of mask, one is its lowest; returns one. While all are
 * taken (that many wakers between their release and their last look at
 * once) it waits for one to go, as destroy would wait for them
 * (ursa__pin_wait): a waker that went on without one could be looking at
 * the object after a destroy that no pin held back. Pins that stay a
 * second are taken for dead (processes killed holding them, a URSA_SHARED
 * object; destroy says -EBUSY then): it returns 0, no pin, and the caller
 * goes on as every waker did before the pins. Relaxed: the release that
 * follows orders it before whatever a taker of what is released does, its
 * destroy included. */
static inline uint32_t ursa__pin(uint32_t *word, uint32_t mask, uint32_t one)
{
	uint32_t v = ld_relaxed(word);
	for (unsigned i = 0;;) {
		if ((v & mask) != mask) {
			if (cas_relaxed(word, &v, v + one))
				return one;
		} else {
			if (!ursa__pin_wait(i++))
				return 0;
			v = ld_relaxed(word);
		}
	}
}

/* Drop a pin (0: none taken) as the caller's last access to the object
 * (release: everything before it happens before the destroy that sees it
 * gone). */
static inline void ursa__unpin(uint32_t *word, uint32_t pin)
{
	if (pin)
		__atomic_fetch_sub(word, pin, __ATOMIC_RELEASE);
}

/* destroy of a one-word pinned object: -EBUSY if *word has a bit of busy
 * (held, waited on); else waits while it has a bit of pins (ursa__pin_wait:
 * -EBUSY after about a second), then 0. */
URSA_PRIVATE_FN int ursa__destroy_wait(uint32_t *word, uint32_t busy, uint32_t pins);
/* The mutex word's SHARED flag and "locked" test, for lib/ files that
 * pair another object with a mutex (the condvar). */
URSA_PRIVATE_FN bool ursa__mutex_is_shared(const ursa_mutex_t *m);
URSA_PRIVATE_FN bool ursa__mutex_is_locked(const ursa_mutex_t *m);
/* Lock m for a condvar waiter that was woken (lib/cond.c): as
 * ursa_mutex_lock, but its spin looks after every yield. */
URSA_PRIVATE_FN int ursa__mutex_relock(ursa_mutex_t *m);

/* Ring waits (lib/async.c). A starter is prepare + launch:
 *   prepare: validate (r, op not in flight, the kernel has the io_uring
 *     futex ops, SQ room for the wait and its deadline) and set the op up
 *     to wait on obj with ops (obj2: the composite's second object; aux:
 *     the waiter's aux — a wait-queue slot). Changes nothing visible.
 *     *w, if not NULL, is the op's waiter state (the condvar registers
 *     into it before launch).
 *   launch: run the op's first step: 1 finished at once (op->res set),
 *     0 in flight, -errno (nothing started, nothing registered).
 * ursa__op_start is both. */
struct io_uring;
struct ursa_op;
URSA_PRIVATE_FN int ursa__op_prepare(struct io_uring *r, struct ursa_op *op,
				     const struct ursa_step_ops *ops, void *obj, void *obj2,
				     uint32_t aux, struct ursa_waiter **w);
URSA_PRIVATE_FN int ursa__op_launch(struct io_uring *r, struct ursa_op *op);
URSA_PRIVATE_FN int ursa__op_start(struct io_uring *r, struct ursa_op *op,
				   const struct ursa_step_ops *ops, void *obj, void *obj2,
				   uint32_t aux);
/* Finish a prepared op at once with res, nothing queued (wait-any's first
 * try, before it allocates): returns 1, as a starter does. */
URSA_PRIVATE_FN int ursa__op_finish_now(struct ursa_op *op, int res);

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
#define URSA_AUX_FILL 4u /* a NOP filling an SQPOLL ring's SQ (posts no CQE) */
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
/* The deadline of a sleep of at most us microseconds that must also end by
 * abs (NULL: none, *clk unused) on *clk: abs if that comes first, else
 * *bound, set to now + us on CLOCK_MONOTONIC (then *clk becomes that: a
 * step of the wall clock does not stretch the bound). */
URSA_PRIVATE_FN const struct timespec *ursa__bounded_deadline(clockid_t *clk, unsigned us,
							      const struct timespec *abs,
							      struct timespec *bound);

/* The blocking loop over a step (lib/time.c): step; on WAIT sleep on the
 * futex word (or words: wait-any) — EINTR and spurious wakes just step
 * again; on deadline, one last step, then abandon and return -ETIMEDOUT (or
 * 0 if abandon says the object was already ours). A deadline already past
 * is one step, no sleep. flags: URSA_BLOCK_EINTR ends the wait with -EINTR
 * when a signal handler interrupts the sleep (after one last step; POSIX
 * sem_wait semantics, for the pthread shim): with a deadline whatever the
 * handler's SA_RESTART, without one only a handler without it (as glibc's
 * sem_timedwait and sem_wait; kernel/futex.h, ursa_k_futex_wait_eintr). */
#define URSA_BLOCK_EINTR 0x1u
URSA_PRIVATE_FN int ursa__block_flags(void *obj, const struct ursa_step_ops *ops,
				      struct ursa_waiter *w, clockid_t clk,
				      const struct timespec *abs, unsigned flags);
static inline int ursa__block(void *obj, const struct ursa_step_ops *ops, struct ursa_waiter *w,
			      clockid_t clk, const struct timespec *abs)
{
	return ursa__block_flags(obj, ops, w, clk, abs, 0);
}

#endif
