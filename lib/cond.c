/* SPDX-License-Identifier: MIT */
/*
 * lib/cond.c — the 8-byte condition variable, used with ursa_mutex_t.
 * Spin model: tests/models/cond.pml.
 *
 *   wait:      holding m: snap = __seq, then REG + 1 (both seq_cst); unlock
 *              m; sleep while __seq == snap; once __seq != snap: leave
 *              (REG - 1, and SIG - 1 if SIG > 0); re-lock m. SIG <= REG.
 *   signal:    REG == SIG (nobody unsignalled waits): nothing, no system
 *              call. Else SIG + 1, __seq + 1, wake 1.
 *   broadcast: REG == SIG: nothing. Else SIG = REG, __seq + 1, wake all.
 *   give up:   (timeout, cancel) leave as above if __seq moved since snap
 *              (the wait reports a wakeup), else REG - 1 only; SIG is
 *              kept at most REG (a signal may be between its two steps).
 *
 * Invariant: REG - SIG >= the number of registered waiters whose snapshot
 * is the current __seq (the unsignalled), so a signal finds every waiter
 * that still needs one; SIG only says which wakes are already on their
 * way, and may be too low (a waiter that leaves after a signal meant for
 * another takes one off), which costs a spare wake, never a lost one. The
 * snapshot comes before the registration: a signaller whose SIG + 1 saw
 * this waiter registered then moves __seq after its snapshot (seq_cst
 * total order), so that waiter wakes. A waiter registers while it holds
 * m, so a signaller that acts after the waiter's unlock counts it (lib/step.h
 * says why the wake cannot be lost). The kernel wakes futex waiters —
 * threads and ring ops alike — in FIFO order among waiters of one
 * priority, but queues real-time ones (SCHED_FIFO/RR/DEADLINE) first: a
 * waiter that came after a signal's increment and before its wake may take
 * that wake. So each waiter sleeps with the bit of its snapshot's
 * generation (snapshot mod 32), and a waiter woken with no signal since its
 * snapshot passes the wake on to the other generations' waiters (cond_step;
 * -DANYORDER in the model, where a wake picks any sleeper). A waiter that
 * gives up after a signal may have consumed its wake: its abandon reports
 * the wait as woken (1), so the signal is delivered, not lost. Spurious
 * wakeups happen, as POSIX allows.
 *
 * Limits: __seq is 32 bits (a waiter delayed across exactly 2^32 signals
 * would sleep through them); a pass-on leaves out the waiters whose
 * generation is the passer's mod 32, so a waiter overtaken by real-time
 * waiters through 32 signals in a row and then robbed of its wake by one
 * of them can still be missed; 65535 waiters at once (-EAGAIN beyond); SIG
 * stops at 32767 (more signals then wake without being counted); no
 * requeue (ring waiters cannot be requeued), so a broadcast wakes every
 * sleeper to contend for m.
 */
#include "lib/internal.h"

/* __seq: the futex word, +1 per signal/broadcast that found an unsignalled
 * waiter. __waiters: */
#define C_SHARED  0x80000000u /* bit 31: SHARED (constant after init) */
#define C_SIG	  0x7fff0000u /* bits 16-30: signalled waiters not yet gone */
#define C_SIG_ONE 0x00010000u
#define C_REG	  0x0000ffffu /* bits 0-15: registered waiters, threads and
				 ring ops, from begin until they leave */

static inline uint32_t c_reg(uint32_t w)
{
	return w & C_REG;
}

static inline uint32_t c_sig(uint32_t w)
{
	return (w & C_SIG) >> 16;
}

_Static_assert(sizeof(ursa_cond_t) == 8, "ursa_cond_t must be 8 bytes");
_Static_assert(_Alignof(ursa_cond_t) == 4, "ursa_cond_t must be 4-byte aligned");

static inline bool c_shared(ursa_cond_t *c)
{
	return ld_relaxed(&c->__waiters) & C_SHARED;
}

int ursa_cond_init(ursa_cond_t *c, unsigned flags)
{
	if (!c || ((uintptr_t)c & (_Alignof(ursa_cond_t) - 1)) || (flags & ~URSA_SHARED))
		return -EINVAL;
	__atomic_store_n(&c->__seq, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&c->__waiters, (flags & URSA_SHARED) ? C_SHARED : 0, __ATOMIC_RELEASE);
	return 0;
}

int ursa_cond_destroy(ursa_cond_t *c)
{
	if (!c)
		return -EINVAL;
	/* Acquire pairs with the release of the last deregistration: once the
	 * count reads 0, no waiter touches *c any more. */
	return c_reg(ld_acquire(&c->__waiters)) ? -EBUSY : 0;
}

static int cond_wake(ursa_cond_t *c, bool all)
{
	if (!c)
		return -EINVAL;
	/* seq_cst CAS and increment: with the waiter's seq_cst snapshot and
	 * registration these form one total order, which covers even callers
	 * that publish their predicate through an atomic rather than m. */
	uint32_t w = __atomic_load_n(&c->__waiters, __ATOMIC_SEQ_CST), n;
	do {
		uint32_t reg = c_reg(w), sig = c_sig(w);
		if (reg <= sig)
			return 0; /* nobody, or every waiter's wake is on its way */
		if (all)
			sig = reg;
		else
			sig++;
		if (sig > (C_SIG >> 16))
			sig = C_SIG >> 16; /* uncounted: a spare wake later */
		n = (w & ~C_SIG) | (sig << 16);
	} while (!__atomic_compare_exchange_n(&c->__waiters, &w, n, false, __ATOMIC_SEQ_CST,
					      __ATOMIC_SEQ_CST));
	__atomic_fetch_add(&c->__seq, 1, __ATOMIC_SEQ_CST);
	/* A wake cannot fail on a mapped word; there is nothing to undo. */
	ursa_k_futex_wake(&c->__seq, all ? INT_MAX : 1, w & C_SHARED);
	return 0;
}

int ursa_cond_signal(ursa_cond_t *c)
{
	return cond_wake(c, false);
}

int ursa_cond_broadcast(ursa_cond_t *c)
{
	return cond_wake(c, true);
}

/* ---- steps (shared with lib/async.c) -------------------------------- */

/* Leave: REG - 1, and SIG - 1 when the sequence moved since our snapshot
 * (we take one signal's place, ours or another's: SIG may end up low,
 * never high); SIG never above REG (an unsignalled waiter leaving between
 * a signal's count and its increment). Release: pairs with destroy's
 * acquire. */
static void cond_deregister(ursa_cond_t *c, struct ursa_waiter *w, bool signalled)
{
	if (!w->registered)
		return;
	w->registered = 0;
	uint32_t v = ld_relaxed(&c->__waiters), n;
	do {
		uint32_t reg = c_reg(v) - 1, sig = c_sig(v);
		if (signalled && sig)
			sig--;
		if (sig > reg)
			sig = reg;
		n = (v & C_SHARED) | (sig << 16) | reg;
	} while (!cas_rel(&c->__waiters, &v, n));
}

/* Register w and snapshot the sequence, holding m: validates (m locked,
 * c and m of one privacy: else -EPERM / -EINVAL). The caller then unlocks m
 * and runs the steps; after DONE or abandon it re-locks m. */
static int cond_begin(ursa_cond_t *c, ursa_mutex_t *m, struct ursa_waiter *w)
{
	uint32_t cw = ld_relaxed(&c->__waiters);
	/* The contract wants c and m of one privacy: a private one of the
	 * pair, placed in shared memory, would lose wakeups across processes
	 * (private and shared futex keys never match). Refuse the mix. */
	if (!(cw & C_SHARED) != !ursa__mutex_is_shared(m))
		return -EINVAL;
	/* We cannot tell who holds m (no owner is recorded), only that
	 * someone does. */
	if (!ursa__mutex_is_locked(m))
		return -EPERM;
	/* Snapshot first, then register (the invariant at the top). */
	w->aux = __atomic_load_n(&c->__seq, __ATOMIC_SEQ_CST);
	uint32_t v = __atomic_load_n(&c->__waiters, __ATOMIC_RELAXED);
	do {
		if (c_reg(v) == C_REG)
			return -EAGAIN;
	} while (!__atomic_compare_exchange_n(&c->__waiters, &v, v + 1, false, __ATOMIC_SEQ_CST,
					      __ATOMIC_RELAXED));
	w->registered = 1;
	return 0;
}

/* A waiter sleeps with the bit of its snapshot's generation (snapshot mod
 * 32), so that a wake can leave out the waiters that came after a signal. */
static inline uint32_t c_gen_bit(uint32_t snap)
{
	return 1u << (snap & 31);
}

/* Wake one waiter of a generation other than w's: pass on a wake that w
 * may have taken from an older waiter (cond_step). */
static void c_pass_on(ursa_cond_t *c, const struct ursa_waiter *w)
{
	ursa_k_futex_wake_bits(&c->__seq, 1, c_shared(c), ~c_gen_bit(w->aux));
}

static int cond_step(void *obj, struct ursa_waiter *w, struct ursa_wait *out)
{
	ursa_cond_t *c = obj;
	if (__atomic_load_n(&c->__seq, __ATOMIC_ACQUIRE) != w->aux || !w->registered) {
		cond_deregister(c, w, true);
		return URSA_STEP_DONE;
	}
	/* Woken, and no signal since our snapshot: the wake was a signal's
	 * meant for an older waiter, which the kernel gave us instead (it
	 * queues real-time waiters ahead of the others, so a waiter that came
	 * after the signal's increment and before its wake may be first).
	 * Pass it on to the waiters of older generations; the older waiter
	 * would otherwise sleep on, counted as signalled. */
	if (w->slept == URSA_SLEPT_WOKEN)
		c_pass_on(c, w);
	out->addr = &c->__seq;
	out->val = w->aux;
	out->bits = c_gen_bit(w->aux);
	out->shared = c_shared(c);
	out->bound_us = 0;
	return URSA_STEP_WAIT;
}

static int cond_abandon(void *obj, struct ursa_waiter *w)
{
	ursa_cond_t *c = obj;
	if (!w->registered)
		return 0;
	/* A signal came since begin: this waiter may be the one its wake
	 * chose (a ring wait whose cancel lost to the wake). Report the wait
	 * as woken rather than let the signal vanish; it is at worst a
	 * spurious wakeup, which callers handle. */
	bool signalled = __atomic_load_n(&c->__seq, __ATOMIC_ACQUIRE) != w->aux;
	cond_deregister(c, w, signalled);
	return signalled ? 1 : 0;
}

/* Cancelled in its sleep (the pthread shim, lib/cancel.h): the waiter will
 * report no wakeup, so a signal that came since it registered (and may have
 * woken it) is passed on: signalled again while it is still registered,
 * then it leaves as a signalled waiter would. The same count as leaving
 * first and signalling after (SIG + 1 - 1, REG - 1), but the leave is its
 * last touch of *c: a destroy that waits for the waiters to leave (the
 * shim's, as POSIX lets a program destroy the condvar once none waits)
 * cannot return while the pass-on still uses *c. */
static void cond_cancelled(void *obj, struct ursa_waiter *w)
{
	ursa_cond_t *c = obj;
	if (!w->registered)
		return;
	if (__atomic_load_n(&c->__seq, __ATOMIC_ACQUIRE) != w->aux)
		cond_wake(c, false);
	else
		c_pass_on(c, w);
	cond_deregister(c, w, __atomic_load_n(&c->__seq, __ATOMIC_ACQUIRE) != w->aux);
}

/* The condvar's step table (lib/step.h): a composite — its wait, then its
 * mutex, which a ring op re-takes whatever the wait's result. */
static bool cond_is_shared(const void *obj)
{
	return c_shared((ursa_cond_t *)obj);
}

const struct ursa_step_ops ursa__cond_ops = {
	.name = "cond",
	.step = cond_step,
	.abandon = cond_abandon,
	.cancelled = cond_cancelled,
	.shared = cond_is_shared,
	.then = &ursa__mutex_ops,
};

/* ---- blocking API --------------------------------------------------- */

static int cond_wait(ursa_cond_t *c, ursa_mutex_t *m, clockid_t clk, const struct timespec *abs)
{
	struct ursa_waiter w = {0};
	int r = cond_begin(c, m, &w);
	if (r)
		return r;
	r = ursa__mutex_unlock_fast(m);
	if (r) {
		/* Someone else unlocked m between our check and now (a caller
		 * bug): like begin's -EPERM, nothing waited and m is not held. */
		cond_abandon(c, &w);
		return r;
	}
	r = ursa__block(c, &ursa__cond_ops, &w, clk, abs);
	/* Every return after the wait holds m again, timeouts included. A
	 * lock of a valid mutex cannot fail. The signaller often still holds
	 * m, on the CPU we were woken onto: the lock's spin yields to it, and
	 * looks after each yield, not after every 8th as a locker's does
	 * (kernel/arch.h): the signaller lets go within one, and looking
	 * later cost a third of a producer/consumer's rate at 8-32 threads
	 * (bench/README.md, "Looking less often"). */
	ursa__mutex_relock(m);
	return r;
}

int ursa_cond_wait(ursa_cond_t *c, ursa_mutex_t *m)
{
	if (!c || !m)
		return -EINVAL;
	return cond_wait(c, m, CLOCK_MONOTONIC, NULL);
}

int ursa_cond_timedwait(ursa_cond_t *c, ursa_mutex_t *m, clockid_t clk, const struct timespec *abs)
{
	if (!c || !m)
		return -EINVAL;
	int r = ursa__check_deadline(clk, abs);
	if (r)
		return r;
	return cond_wait(c, m, clk, abs);
}

int ursa_cond_wait_async(struct io_uring *r, ursa_cond_t *c, ursa_mutex_t *m, struct ursa_op *op)
{
	struct ursa_waiter *w;
	if (!c || !m)
		return -EINVAL;
	/* (ursa__op_prepare also makes sure of the private futex hash, while
	 * m is still held, so a failure changes nothing.) */
	int rc = ursa__op_prepare(r, op, &ursa__cond_ops, c, m, 0, &w);
	if (rc)
		return rc;
	rc = cond_begin(c, m, w);
	if (rc)
		return rc; /* m still held, nothing registered */
	rc = ursa__mutex_unlock_fast(m);
	if (rc) {
		/* m was not held after all (a caller bug): nothing waits. */
		cond_abandon(c, w);
		return rc;
	}
	return ursa__op_launch(r, op);
}
