/* SPDX-License-Identifier: MIT */
/*
 * ursa/rwlock.h — an 8-byte reader-writer lock, phase-fair at a write
 * unlock, writer-preferring otherwise.
 *
 * Many readers or one writer. Writers do not starve readers: a write unlock
 * that finds readers waiting lets them all in before the writers that wait
 * (a read phase; the last of those readers then wakes a writer). A writer
 * that is running may still take the lock before the woken readers do
 * (barging), and each later write unlock wakes them again. A stream of
 * readers cannot starve writers: a blocked writer lets new readers join the
 * readers that hold the lock for 2 ms (they run in parallel meanwhile),
 * then new readers wait until it has had the lock, but for those that find
 * the lock free between two holders; a writer waiting through io_uring
 * shuts new readers out at once. The blocked writer notices its 2 ms when
 * it wakes: at an unlock that wakes it, or at the latest when its bounded
 * sleep (10 ms) ends. So readers overtake a waiting writer for about 2 ms,
 * at most 10 ms, plus the longest read section under way, plus one read
 * phase of the readers that were waiting when a write section ended. A
 * writer that times out or is cancelled stops holding new readers back. An
 * unlock wakes one writer at a time: while a writer it woke has not run
 * yet, later unlocks leave the waiting writers to it (a ring writer runs
 * when its ring's owner handles its CQE; blocked writers do not wait for
 * that past their own bounded sleeps). Writers are not queued in order
 * among themselves: a writer that is running may take a free lock before
 * the writer an unlock woke. But a blocked writer that has waited 1 ms
 * (131 us per registered waiter when more than 7 wait), or a ring writer that
 * has lost two such races, asks for a hand-off: the next unlock that wakes
 * a writer hands it the lock, which no newcomer, reader or writer, can then
 * take, and the woken writer claims it (the longest asleep on the kernel's
 * FIFO futex queue, but a blocked writer re-queues after each of its
 * bounded sleeps of 10 ms). So a writer that has asked is overtaken only
 * between hand-offs, each of which costs a wake-up latency with the lock
 * unused; the ring writer, also until its event loop handles its
 * completion. The request is one flag for all the writers that ask: the
 * writer served (or one that gives up) withdraws it, and another that asked
 * asks again at its next step (its next wake or bounded sleep), so it may
 * be overtaken once more meanwhile.
 * Uncontended read and write lock/unlock are one atomic operation, with no
 * system call.
 * Waiters may be blocked threads or io_uring waiters
 * (ursa_rwlock_{rd,wr}lock_async). Read locks are not recursive once a
 * writer waits (as with any writer-preferring lock, a thread re-taking a
 * read lock then may deadlock).
 */
#ifndef URSA_RWLOCK_H
#define URSA_RWLOCK_H

#include <ursa/common.h>

URSA_EXTERN_C_BEGIN

typedef struct ursa_rwlock {
	uint32_t __state;  /* private: see lib/rwlock.c */
	uint32_t __notify; /* private */
} ursa_rwlock_t;

#define URSA_RWLOCK_INIT {0, 0}

/* Initialise *l unlocked. flags: 0 or URSA_SHARED. Returns 0 or -EINVAL. */
URSA_API int ursa_rwlock_init(ursa_rwlock_t *l, unsigned flags);

/* Take a read lock, blocking while a writer holds *l or has waited past
 * its 2 ms and noticed (above). Returns 0, -EAGAIN (32765 readers hold
 * it, or 4095 waiters already wait), -EINVAL. Blocks. */
URSA_API int ursa_rwlock_rdlock(ursa_rwlock_t *l);

/* Take a read lock if that needs no wait. Returns 0, -EBUSY, -EAGAIN, -EINVAL. */
URSA_API int ursa_rwlock_tryrdlock(ursa_rwlock_t *l);

/* Read lock with a deadline. Returns 0, -ETIMEDOUT, -EAGAIN, -EINVAL. Blocks. */
URSA_API int ursa_rwlock_timedrdlock(ursa_rwlock_t *l, clockid_t clk, const struct timespec *abs);

/* Drop one read lock. Returns 0, -EPERM (no reader holds *l), -EINVAL.
 * Never blocks on a holder or a waiter (but an unlock that wakes may wait
 * for a pin: ursa_rwlock_destroy, below). */
URSA_API int ursa_rwlock_rdunlock(ursa_rwlock_t *l);

/* Take the write lock, blocking until no reader or writer holds *l.
 * Returns 0, -EAGAIN (4095 waiters already wait), -EINVAL. Blocks. */
URSA_API int ursa_rwlock_wrlock(ursa_rwlock_t *l);

/* Take the write lock if *l is free now. Returns 0, -EBUSY, -EINVAL. */
URSA_API int ursa_rwlock_trywrlock(ursa_rwlock_t *l);

/* Write lock with a deadline. Returns 0, -ETIMEDOUT, -EAGAIN, -EINVAL. Blocks. */
URSA_API int ursa_rwlock_timedwrlock(ursa_rwlock_t *l, clockid_t clk, const struct timespec *abs);

/* Drop the write lock. Returns 0, -EPERM (not write-locked), -EINVAL.
 * Never blocks on a holder or a waiter (but an unlock that wakes may wait
 * for a pin: ursa_rwlock_destroy, below). */
URSA_API int ursa_rwlock_wrunlock(ursa_rwlock_t *l);

/* Check *l is unlocked and unwaited, for reuse or freeing. Returns 0,
 * -EBUSY (held, or waited on by a blocked thread or a ring op, including
 * one whose SQE is not yet submitted or whose CQE is not yet handled),
 * -EINVAL. As for a mutex, the lock may be destroyed and its memory freed
 * as soon as nobody holds or waits on it, even while the unlock that
 * freed it is still waking on another thread: such an unlock holds a pin,
 * and destroy waits (yielding the CPU, then in 1 ms sleeps) until every
 * pinned unlock has finished with *l, microseconds
 * (tests/fault/waker_destroy.c); -EBUSY if one has not after a second (a
 * process killed inside its unlock of a URSA_SHARED lock). There are
 * seven pins (lib/rwlock.c, "Pins"): an eighth unlock at once waits,
 * holding the lock, until one of the seven has finished; only if all
 * seven stay a second (dead) does it go on without one. */
URSA_API int ursa_rwlock_destroy(ursa_rwlock_t *l);

/* The ring and the op: liburing's struct io_uring, ursa/async.h's struct
 * ursa_op (include <liburing.h> and <ursa/async.h> to start one). */
struct io_uring;
struct ursa_op;

/* Take a read / the write lock inside the ring r: op (zeroed, or
 * URSA_OP_INIT; optionally given ursa_op_set_deadline) finishes through
 * ursa_handle_cqe with res 0 when the lock is held in that mode,
 * -ETIMEDOUT, -ECANCELED (not held), or -EAGAIN (rdlock: the reader count
 * would overflow). Returns 1 (finished at once: op->res set; nothing
 * queued), 0 (in flight: SQEs queued, the caller submits), -EAGAIN (at the
 * start: the reader count would overflow, or 4095 waiters wait already;
 * nothing queued or changed), -EBUSY (SQ ring
 * full; nothing changed), -EOPNOTSUPP (no io_uring futex ops), -EINVAL
 * (NULL argument, op in flight) -- the starter contract of ursa/async.h.
 * Never blocks. */
URSA_API int ursa_rwlock_rdlock_async(struct io_uring *r, ursa_rwlock_t *l, struct ursa_op *op);
URSA_API int ursa_rwlock_wrlock_async(struct io_uring *r, ursa_rwlock_t *l, struct ursa_op *op);

/*
 * Inline fast paths, as ursa/mutex.h's. The exported functions above exist
 * for function pointers, dlsym() and other languages; calls written
 * ursa_rwlock_rdlock(l) and so on expand to one atomic operation on the
 * lock when nobody waits, and only the other cases call out of line.
 * Define URSA_NO_INLINE before including to disable.
 *
 * What they compile into programs (lib/rwlock.c explains the rest):
 * __state bits 0-14 are the count, the higher bits waiters and requests.
 * A __state that is only a count below URSA__RW_MAX_READERS (0 free, else
 * that many readers) has no writer and nobody waiting: a reader takes it
 * by adding 1, and releases a count of 1..URSA__RW_MAX_READERS with
 * nothing more to do by subtracting 1 (both a compare-and-swap from the
 * value it loaded, so that a bit set meanwhile sends it out of line).
 * Exactly URSA__RW_WRITE_LOCKED is write-held with nobody waiting; the
 * writer takes it from 0 and releases it to 0.
 */
#define URSA__RW_WRITE_LOCKED 0x7fffu
#define URSA__RW_MAX_READERS  0x7ffdu

/* Where the inline write paths give up: they start where ursa_rwlock_wrlock
 * and ursa_rwlock_wrunlock would after their first try. (The inline read
 * paths call ursa_rwlock_rdlock and ursa_rwlock_rdunlock.) */
URSA_API int ursa__rwlock_wrlock_slow(ursa_rwlock_t *l);
URSA_API int ursa__rwlock_wrunlock_slow(ursa_rwlock_t *l);

/* A NULL lock is -EINVAL here, not in a call: a compiler that follows
 * the NULL branch into the caller's code would otherwise warn about
 * stores through the NULL pointer after a call it cannot see fail. */
static inline int ursa__rwlock_rdlock_fast(ursa_rwlock_t *l)
{
	if (__builtin_expect(l == NULL, 0))
		return -EINVAL;
	uint32_t s = __atomic_load_n(&l->__state, __ATOMIC_RELAXED);
	if (__builtin_expect(s < URSA__RW_MAX_READERS, 1) &&
	    __atomic_compare_exchange_n(&l->__state, &s, s + 1, false, __ATOMIC_ACQUIRE,
					__ATOMIC_RELAXED))
		return 0;
	return (ursa_rwlock_rdlock)(l);
}

static inline int ursa__rwlock_rdunlock_fast(ursa_rwlock_t *l)
{
	if (__builtin_expect(l == NULL, 0))
		return -EINVAL;
	uint32_t s = __atomic_load_n(&l->__state, __ATOMIC_RELAXED);
	/* Read-held and nobody waits: subtract 1 with a compare-and-swap,
	 * so that a waiting bit set since the load sends us out of line,
	 * where the last reader pins the lock before it releases it. */
	while (__builtin_expect(s - 1 < URSA__RW_MAX_READERS, 1))
		if (__atomic_compare_exchange_n(&l->__state, &s, s - 1, false, __ATOMIC_RELEASE,
						__ATOMIC_RELAXED))
			return 0;
	return (ursa_rwlock_rdunlock)(l);
}

static inline int ursa__rwlock_wrlock_fast(ursa_rwlock_t *l)
{
	if (__builtin_expect(l == NULL, 0))
		return -EINVAL;
	uint32_t e = 0;
	if (__builtin_expect(__atomic_compare_exchange_n(&l->__state, &e, URSA__RW_WRITE_LOCKED,
							 false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED),
			     1))
		return 0;
	return ursa__rwlock_wrlock_slow(l);
}

static inline int ursa__rwlock_wrunlock_fast(ursa_rwlock_t *l)
{
	if (__builtin_expect(l == NULL, 0))
		return -EINVAL;
	uint32_t e = URSA__RW_WRITE_LOCKED;
	if (__builtin_expect(__atomic_compare_exchange_n(&l->__state, &e, 0, false,
							 __ATOMIC_RELEASE, __ATOMIC_RELAXED),
			     1))
		return 0;
	return ursa__rwlock_wrunlock_slow(l);
}

#ifndef URSA_NO_INLINE
#define ursa_rwlock_rdlock(l)	ursa__rwlock_rdlock_fast(l)
#define ursa_rwlock_rdunlock(l) ursa__rwlock_rdunlock_fast(l)
#define ursa_rwlock_wrlock(l)	ursa__rwlock_wrlock_fast(l)
#define ursa_rwlock_wrunlock(l) ursa__rwlock_wrunlock_fast(l)
#endif

URSA_EXTERN_C_END

#endif
