/* SPDX-License-Identifier: MIT */
/*
 * lib/waitq.c — a wait queue with directed (chosen) and batched wakeups.
 *
 * One block, no pointers inside (shared memory at any address): a header
 * (struct ursa_waitq: its lock, an ursa_mutex_t process-shared when the
 * queue is, and the list of queued slots) and nslots slots. The list and
 * every key are touched only under the lock. A slot's state word (IDLE,
 * QUEUED, WOKEN, beside the #defines) is atomic and is the futex its
 * waiter sleeps on, so a wake goes to exactly the waiter it chose.
 *
 * Transitions:
 *   IDLE   -> QUEUED  prepare (the slot's owner), under the lock, linking it
 *   QUEUED -> WOKEN   a waker, under the lock, unlinking it (release): the
 *                     wake counts it
 *   QUEUED -> IDLE    abandon, cancel, timeout (the owner), under the lock,
 *                     unlinking it
 *   WOKEN  -> IDLE    the owner's step or abandon, reaping the wakeup (no
 *                     lock: nobody else changes a WOKEN slot)
 *
 * Invariant: a slot is in the list exactly while QUEUED, and the two
 * parties that can race for it (its owner giving up, a waker) decide under
 * the lock, so a wait returns 0 exactly when a wake counted it (never
 * -ETIMEDOUT then) and no waiter is woken early. The waiter sleeps only
 * while its state is QUEUED and the waker stores WOKEN before it wakes:
 * no lost wakeup (lib/step.h). The caller's condition and the queue are
 * ordered by the lock (prepare, re-check, wait: include/ursa/waitq.h).
 *
 * The waker's critical section is list surgery only: it collects up to
 * WQ_CHUNK chosen slots, drops the lock, then wakes them (kernel/wake.c:
 * a futex syscall each, or one ring submission for the batch). After its
 * last lock hold it uses only the state words' addresses (a late futex
 * wake is harmless). That does not make it safe to free the queue when a
 * wait returns: a waiter sees WOKEN, stored under the lock, and may return
 * while the waker still holds the lock and walks its list, or unlocks it.
 * So the queue must outlive every call on it, as include/ursa/waitq.h
 * says. A call wakes at most as many as were queued when it began.
 * A ring waiter reaps its FUTEX_WAIT's CQE before it gives its slot up
 * (wq_abandon_slot). Spin model: tests/models/waitq.pml.
 */
#include "lib/internal.h"

#include "kernel/uring.h"
#include "kernel/wake.h"

#include <string.h>

#define WQ_MAGIC 0x75725771u /* "urWq" */
#define WQ_NIL	 UINT32_MAX
/* Slots chosen per lock hold: 1 KiB of indexes on the waker's stack. */
#define WQ_CHUNK 256u

#define S_IDLE	 0u
#define S_QUEUED 1u
#define S_WOKEN	 2u

struct wq_slot {
	uint64_t key;	/* under the lock */
	uint32_t next;	/* under the lock; WQ_NIL at the tail */
	uint32_t prev;	/* under the lock; WQ_NIL at the head */
	uint32_t state; /* atomic; the slot's futex word */
	uint32_t spin;	/* the owner's spin hint (lib/internal.h) */
};

struct ursa_waitq {
	uint32_t magic; /* WQ_MAGIC once initialised (release) */
	uint32_t nslots;
	uint32_t flags; /* URSA_SHARED */
	ursa_mutex_t lock;
	uint32_t head; /* under the lock */
	uint32_t tail;
	uint32_t count;
	uint32_t pad;
	struct wq_slot slot[];
};

_Static_assert(sizeof(struct wq_slot) == 24, "slot layout");
_Static_assert(sizeof(struct ursa_waitq) == 32, "header layout");
_Static_assert(_Alignof(struct ursa_waitq) == 8, "8-byte aligned, as the header promises");

/* Counts are returned as int, so a queue holds at most INT_MAX slots (the
 * NIL index, UINT32_MAX, is then never a slot either). */
#define WQ_MAX_SLOTS ((uint32_t)INT_MAX)

size_t ursa_waitq_size(uint32_t nslots)
{
	if (nslots == 0 || nslots > WQ_MAX_SLOTS)
		return 0;
	return sizeof(struct ursa_waitq) + (size_t)nslots * sizeof(struct wq_slot);
}

int ursa_waitq_init(ursa_waitq_t *q, uint32_t nslots, unsigned flags)
{
	size_t sz = ursa_waitq_size(nslots);
	if (!q || ((uintptr_t)q & (_Alignof(ursa_waitq_t) - 1)) || !sz || (flags & ~URSA_SHARED))
		return -EINVAL;
	memset(q, 0, sz); /* every slot IDLE */
	for (uint32_t i = 0; i < nslots; i++)
		q->slot[i].next = q->slot[i].prev = WQ_NIL;
	q->nslots = nslots;
	q->flags = flags;
	q->head = q->tail = WQ_NIL;
	ursa_mutex_init(&q->lock, flags);
	__atomic_store_n(&q->magic, WQ_MAGIC, __ATOMIC_RELEASE);
	return 0;
}

static inline struct wq_slot *wq_slot(ursa_waitq_t *q, uint32_t slot)
{
	if (unlikely(!q || ld_acquire(&q->magic) != WQ_MAGIC || slot >= q->nslots))
		return NULL;
	return &q->slot[slot];
}

static inline void wq_lock(ursa_waitq_t *q)
{
	ursa__mutex_lock_fast(&q->lock);
}

static inline void wq_unlock(ursa_waitq_t *q)
{
	ursa__mutex_unlock_fast(&q->lock);
}

/* Under the lock: unlink slot i. */
static void wq_unlink(ursa_waitq_t *q, uint32_t i)
{
	struct wq_slot *s = &q->slot[i];
	if (s->prev != WQ_NIL)
		q->slot[s->prev].next = s->next;
	else
		q->head = s->next;
	if (s->next != WQ_NIL)
		q->slot[s->next].prev = s->prev;
	else
		q->tail = s->prev;
	s->next = s->prev = WQ_NIL;
	q->count--;
}

/* Under the lock: a waker takes queued slot i (it is now counted). */
static void wq_take(ursa_waitq_t *q, uint32_t i)
{
	wq_unlink(q, i);
	/* Release: whatever the waker did before the wake (the condition it
	 * made true) is visible to the waiter that sees WOKEN (acquire). */
	__atomic_store_n(&q->slot[i].state, S_WOKEN, __ATOMIC_RELEASE);
}

int ursa_waitq_prepare(ursa_waitq_t *q, uint32_t slot, uint64_t key)
{
	struct wq_slot *s = wq_slot(q, slot);
	if (!s)
		return -EINVAL;
	wq_lock(q);
	/* Checked under the lock so that even two threads misusing one slot
	 * cannot link it twice. */
	if (ld_relaxed(&s->state) != S_IDLE) {
		wq_unlock(q);
		return -EBUSY;
	}
	s->key = key;
	s->next = WQ_NIL;
	s->prev = q->tail;
	if (q->tail != WQ_NIL)
		q->slot[q->tail].next = slot;
	else
		q->head = slot;
	q->tail = slot;
	q->count++;
	__atomic_store_n(&s->state, S_QUEUED, __ATOMIC_RELAXED);
	wq_unlock(q);
	return 0;
}

/* Has the waiter's slot (w->aux) been woken? DONE: a wake took it (the
 * slot is free again); WAIT: still queued, sleep on its state word; -EINVAL:
 * no such slot, or not prepared. */
static int wq_step(void *obj, struct ursa_waiter *w, struct ursa_wait *out)
{
	ursa_waitq_t *q = obj;
	struct wq_slot *s = wq_slot(q, w->aux);
	if (!s)
		return -EINVAL;
	uint32_t v = ld_acquire(&s->state);
	if (v == S_WOKEN) {
		/* Only this slot's owner leaves WOKEN: a plain store reaps. */
		__atomic_store_n(&s->state, S_IDLE, __ATOMIC_RELAXED);
		return URSA_STEP_DONE;
	}
	if (v != S_QUEUED)
		return -EINVAL;
	out->addr = &s->state;
	out->val = S_QUEUED;
	out->shared = q->flags & URSA_SHARED;
	return URSA_STEP_WAIT;
}

/* The waiter of slot gives up: 0 dequeued here (no wake will count it), 1 a
 * wake had already dequeued it (the wait succeeded), -EINVAL not prepared.
 * The slot is free again afterwards. A ring waiter abandons only once its
 * FUTEX_WAIT's CQE is in (lib/async.c): a stale wait still queued on the
 * word could take the wake meant for the slot's next waiter. */
static int wq_abandon_slot(ursa_waitq_t *q, uint32_t slot)
{
	struct wq_slot *s = wq_slot(q, slot);
	if (!s)
		return -EINVAL;
	uint32_t v = ld_acquire(&s->state);
	if (v == S_QUEUED) {
		wq_lock(q);
		v = ld_relaxed(&s->state); /* a waker may have taken it meanwhile */
		if (v == S_QUEUED) {
			wq_unlink(q, slot);
			__atomic_store_n(&s->state, S_IDLE, __ATOMIC_RELAXED);
			wq_unlock(q);
			return 0;
		}
		wq_unlock(q); /* acquires the waker's WOKEN store too */
	}
	if (v == S_WOKEN) {
		__atomic_store_n(&s->state, S_IDLE, __ATOMIC_RELAXED);
		return 1;
	}
	return -EINVAL;
}

int ursa_waitq_cancel(ursa_waitq_t *q, uint32_t slot)
{
	return wq_abandon_slot(q, slot);
}

static int wq_abandon(void *obj, struct ursa_waiter *w)
{
	return wq_abandon_slot(obj, w->aux) == 1;
}

/* The wait queue's step table (lib/step.h): a waiter's "object" is its own
 * wakeup; w->aux is its slot. */
static bool wq_is_shared(const void *obj)
{
	return ((const ursa_waitq_t *)obj)->flags & URSA_SHARED;
}

const struct ursa_step_ops ursa__waitq_ops = {
	.name = "waitq",
	.step = wq_step,
	.abandon = wq_abandon,
	.shared = wq_is_shared,
};

int ursa_waitq_wait_async(struct io_uring *r, ursa_waitq_t *q, uint32_t slot, struct ursa_op *op)
{
	return ursa__op_start(r, op, &ursa__waitq_ops, q, NULL, slot);
}

int ursa_waitq_wait(ursa_waitq_t *q, uint32_t slot, clockid_t clk, const struct timespec *abs)
{
	if (!wq_slot(q, slot))
		return -EINVAL;
	int r = ursa__check_deadline(clk, abs);
	if (r)
		return r;
	/* The wake may be close (a flusher just behind): spin first, as long
	 * as spinning paid off lately for this slot; not past the deadline (a
	 * poll: one look, ursa__block's; its spin would only end in the
	 * timeout, and teach the slot that spinning does not pay). */
	struct wq_slot *s = &q->slot[slot];
	unsigned est = ursa__spin_est(s->spin);
	int budget = ursa__spin_budget(est), i = 0;
	if (budget && abs && ld_acquire(&s->state) == S_QUEUED && ursa__deadline_passed(clk, abs))
		budget = 0; /* (the clock is read only where a spin would follow) */
	while (ld_acquire(&s->state) == S_QUEUED && i < budget && ursa_k_spin(i, abs != NULL))
		i++;
	if (i)
		s->spin = ursa__spin_est_stored(
		    ursa__spin_learn(est, i, ld_relaxed(&s->state) != S_QUEUED));
	struct ursa_waiter w = {.aux = slot};
	return ursa__block(q, &ursa__waitq_ops, &w, clk, abs);
}

/* ---- wakers ---------------------------------------------------------- */

enum wq_mode { WAKE_N, WAKE_UPTO, WAKE_SLOT };

/*
 * Choose up to `room` slots under the lock, per mode, and take them
 * (QUEUED -> WOKEN, unlinked). Returns how many; sets *more when it stopped
 * for lack of room and others may still qualify.
 */
static uint32_t wq_choose(ursa_waitq_t *q, enum wq_mode mode, uint64_t arg, uint32_t room,
			  uint32_t *idx, bool *more)
{
	uint32_t n = 0, i;
	*more = false;
	switch (mode) {
	case WAKE_N:
		while (n < room && (i = q->head) != WQ_NIL) {
			wq_take(q, i);
			idx[n++] = i;
		}
		*more = q->head != WQ_NIL;
		break;
	case WAKE_UPTO:
		for (i = q->head; i != WQ_NIL;) {
			uint32_t next = q->slot[i].next;
			if (q->slot[i].key <= arg) {
				if (n == room) {
					*more = true;
					break;
				}
				wq_take(q, i);
				idx[n++] = i;
			}
			i = next;
		}
		break;
	case WAKE_SLOT:
		i = (uint32_t)arg;
		if (ld_relaxed(&q->slot[i].state) == S_QUEUED) {
			wq_take(q, i);
			idx[n++] = i;
		}
		break;
	}
	return n;
}

static int wq_wake(ursa_waitq_t *q, enum wq_mode mode, uint64_t arg, uint32_t limit,
		   struct io_uring *ring)
{
	if (ring) {
		/* A kernel without IORING_OP_FUTEX_WAKE, or an IOPOLL ring,
		 * would fail the SQEs: wake by syscall instead, so the wakes
		 * still happen. */
		struct ursa_features f;
		if (ursa_probe(&f) != 0 || !f.uring_futex || !ursa_k_ring_takes_waits(ring))
			ring = NULL;
	}
	bool shared = q->flags & URSA_SHARED;
	struct ursa_k_wake_batch b;
	uint32_t idx[WQ_CHUNK];
	uint32_t total = 0, budget = UINT32_MAX;
	bool more;

	/* Error CQEs of the wake SQEs carry ursa's auxiliary tag, no op. */
	ursa_k_wake_init(&b, ring, shared, ursa__aux_tag(URSA_AUX_WAKE));
	do {
		wq_lock(q);
		if (budget == UINT32_MAX) /* first round: */
			/* never wake more than were queued when the call began */
			budget = q->count < limit ? q->count : limit;
		uint32_t room = budget - total < WQ_CHUNK ? budget - total : WQ_CHUNK;
		uint32_t n = 0;
		more = false;
		if (room)
			n = wq_choose(q, mode, arg, room, idx, &more);
		wq_unlock(q);
		total += n;
		more = more && total < budget;
		/* A lone wake: one futex syscall is one kernel entry too, and
		 * cheaper than an io_uring_enter carrying one SQE (see below). */
		if (total == 1 && !more)
			b.ring = NULL;
		/* Only the state words' addresses are used from here on (pure
		 * arithmetic on q): a woken waiter may already have returned
		 * (the queue itself outlives this call: ursa/waitq.h). */
		for (uint32_t j = 0; j < n; j++)
			ursa_k_wake_add(&b, &q->slot[idx[j]].state);
	} while (more);
	ursa_k_wake_flush(&b);
	return (int)total;
}

int ursa_waitq_wake(ursa_waitq_t *q, uint32_t n, struct io_uring *ring)
{
	if (!q || ld_acquire(&q->magic) != WQ_MAGIC)
		return -EINVAL;
	if (n == 0)
		return 0;
	return wq_wake(q, WAKE_N, 0, n, ring);
}

int ursa_waitq_wake_upto(ursa_waitq_t *q, uint64_t key, struct io_uring *ring)
{
	if (!q || ld_acquire(&q->magic) != WQ_MAGIC)
		return -EINVAL;
	return wq_wake(q, WAKE_UPTO, key, UINT32_MAX, ring);
}

int ursa_waitq_wake_slot(ursa_waitq_t *q, uint32_t slot, struct io_uring *ring)
{
	if (!wq_slot(q, slot))
		return -EINVAL;
	return wq_wake(q, WAKE_SLOT, slot, 1, ring);
}
