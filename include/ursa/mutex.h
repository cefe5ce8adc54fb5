/* SPDX-License-Identifier: MIT */
/*
 * ursa/mutex.h — a 4-byte mutual exclusion lock.
 *
 * Uncontended lock and unlock are one atomic operation each, inline in the
 * caller, with no system call: the lock a bit-test-and-set, which takes a
 * free mutex also while waiters are registered on it, the unlock a
 * compare-and-swap. Contended lockers spin briefly, then sleep on
 * the futex word; they may be blocked threads or io_uring waiters
 * (ursa_mutex_lock_async), on the same mutex. The spin: where the process
 * may run on 8 or more CPUs, an untimed locker first watches the word for
 * up to some tens of microseconds, with growing pauses between looks, also
 * while others sleep; on any machine it then yields the CPU a few times
 * while nobody sleeps (for at most 300 us where the process may run on
 * one CPU only). An unlock wakes a waiter
 * only when one sleeps and no woken waiter is still on its way (while one
 * is, it now and then yields the CPU instead: see Fairness).
 * No owner is recorded: any thread may unlock (as with a semaphore).
 *
 * Fairness: running threads may overtake a waiter (barging), but only for a
 * bounded time. A waiter that has waited 1 ms (a ring waiter also after two
 * lost races) asks for a hand-off at its next step; the next unlock then
 * hands the mutex to the waiters, and newcomers cannot take it until a
 * waiter has. With more than 7 waiters that time is 131 us per waiter
 * (4.2 ms with 32), so that hand-offs, each costing a wake-up latency with
 * the mutex unused, stay rare however long the queue. Blocked threads
 * sleep in FIFO order, so a waiter is overtaken by running threads for at
 * most about that time per waiter queued before it, plus wake-up latency,
 * plus its spin before it queued (16 yields; on one CPU at most 300 us and
 * the yield under way then);
 * a ring waiter also until its event loop handles its completion. A woken
 * waiter often waits for a CPU held by the threads that keep re-taking the
 * mutex: a thread that has kept unlocking for 1 ms while a woken waiter
 * has not yet run yields its CPU (sched_yield), so that the waiter gets a
 * turn about when it would ask for a hand-off.
 * So a contended unlock may make a system call even when it wakes nobody.
 */
#ifndef URSA_MUTEX_H
#define URSA_MUTEX_H

#include <ursa/common.h>

URSA_EXTERN_C_BEGIN

typedef struct ursa_mutex {
	uint32_t __word; /* private: see lib/mutex.c */
} ursa_mutex_t;

#define URSA_MUTEX_INIT {0}

/* Initialise *m unlocked. flags: 0 or URSA_SHARED.
 * Returns 0, or -EINVAL (NULL m, unknown flags). Never blocks. */
URSA_API int ursa_mutex_init(ursa_mutex_t *m, unsigned flags);

/* Lock *m, blocking until it is available.
 * Returns 0, or -EINVAL (NULL m). Blocks. Not interrupted by signals. */
URSA_API int ursa_mutex_lock(ursa_mutex_t *m);

/* Lock *m if it is free now. Returns 0, -EBUSY (held), -EINVAL. Never blocks.
 * A trylock does not wait, so no hand-off serves it: a loop that retries it
 * may be overtaken without bound by threads that re-take the mutex; block
 * (ursa_mutex_lock, timedlock) to be served. */
URSA_API int ursa_mutex_trylock(ursa_mutex_t *m);

/* Lock *m, blocking at most until abs on clk (NULL: forever).
 * Returns 0, -ETIMEDOUT (not locked), -EINVAL (NULL m, bad clock, malformed
 * abs). Blocks. Not interrupted by signals. */
URSA_API int ursa_mutex_timedlock(ursa_mutex_t *m, clockid_t clk, const struct timespec *abs);

/* Unlock *m, waking one waiter if any may sleep. Any thread may unlock.
 * Returns 0, -EPERM (m was not locked), -EINVAL. May yield the CPU once
 * (Fairness, above). Never blocks on a holder or a waiter: an unlock that
 * wakes waits only while 7 other such unlocks of *m are between their
 * release and their last look at once, for one of them to finish
 * (microseconds; about a second if processes killed there left them:
 * ursa_mutex_destroy, below). */
URSA_API int ursa_mutex_unlock(ursa_mutex_t *m);

/* Check that *m is free and unwaited, for reuse or freeing.
 * Returns 0, -EBUSY (locked or waited on), -EINVAL. As
 * POSIX asks of pthread_mutex_destroy, a mutex may be destroyed and its
 * memory freed as soon as it is unlocked, even while the unlock that freed
 * it is still running on another thread: an unlock that woke a waiter looks
 * at the word once more after its wake, and destroy waits (yielding the
 * CPU, then in 1 ms sleeps) until every such unlock has finished with *m,
 * microseconds (tests/fault/unlock_destroy.c); -EBUSY if one has not after
 * a second (a process killed inside its unlock of a URSA_SHARED mutex). */
URSA_API int ursa_mutex_destroy(ursa_mutex_t *m);

/* The ring and the op: liburing's struct io_uring, ursa/async.h's struct
 * ursa_op (include <liburing.h> and <ursa/async.h> to start one). */
struct io_uring;
struct ursa_op;

/* Lock *m inside the ring r: op (zeroed, or URSA_OP_INIT; optionally given
 * ursa_op_set_deadline) finishes through ursa_handle_cqe with res 0 when
 * *m is held, -ETIMEDOUT (deadline passed, not locked) or -ECANCELED
 * (ursa_op_cancel, not locked). Returns 1 (taken at once: op->res is 0, or
 * -ETIMEDOUT for a deadline already past; nothing queued), 0 (in flight:
 * SQEs queued, the caller submits), -EBUSY (SQ ring full; nothing changed),
 * -EOPNOTSUPP (no io_uring futex ops), -EINVAL (NULL argument, op in
 * flight) -- the starter contract of ursa/async.h. Never blocks. A ring
 * locker that keeps losing to running threads is handed the lock. */
URSA_API int ursa_mutex_lock_async(struct io_uring *r, ursa_mutex_t *m, struct ursa_op *op);

/*
 * Inline fast paths. The exported functions above exist for function
 * pointers, dlsym() and other languages; calls written ursa_mutex_lock(m)
 * expand to the inline atomic operation and only the contended case calls
 * out of line. Define URSA_NO_INLINE before including to disable.
 *
 * Word layout (lib/mutex.c explains): bit 31 shared flag, bit 0 locked,
 * bits 1-4 sleepers / woken waiter / handed off / hand-off request, bits
 * 5-30 registered waiters. Bit 0 is set whenever the mutex is held, also
 * while it is handed off to the waiters (since URSA_0.2), so a lock is one
 * atomic bit-test-and-set of bit 0, whatever the other bits say: it takes
 * the mutex if bit 0 was clear. Free and unwaited is exactly 0 or the
 * shared flag; locked and unwaited exactly 1 or shared|1, which the unlock
 * compares with.
 */
#define URSA__MUTEX_SHARED 0x80000000u

/* Where the inline paths give up: lock_held and trylock_held (URSA_0.2)
 * after the bit-test-and-set found bit 0 set (or m is NULL); unlock_slow
 * when the word is not exactly locked and unwaited. lock_slow and
 * trylock_slow serve programs built before URSA_0.2, whose inline lock
 * was a compare-and-swap from 0. */
URSA_API int ursa__mutex_lock_held(ursa_mutex_t *m);
URSA_API int ursa__mutex_trylock_held(ursa_mutex_t *m);
URSA_API int ursa__mutex_lock_slow(ursa_mutex_t *m);
URSA_API int ursa__mutex_trylock_slow(ursa_mutex_t *m);
URSA_API int ursa__mutex_unlock_slow(ursa_mutex_t *m);

static inline bool ursa__mutex_cas(ursa_mutex_t *m, uint32_t from, uint32_t to, int order)
{
	uint32_t e = from;
	if (__atomic_compare_exchange_n(&m->__word, &e, to, false, order, __ATOMIC_RELAXED))
		return true;
	/* Process-shared mutexes carry their flag in the word. */
	from |= URSA__MUTEX_SHARED;
	return e == from && __atomic_compare_exchange_n(&m->__word, &e, to | URSA__MUTEX_SHARED,
						       false, order, __ATOMIC_RELAXED);
}

/* Set bit 0; true if it was set already (held). On x86 one `lock bts`:
 * GCC emits it for this fetch-or, Clang (as of 14) a compare-and-swap loop
 * after a load, so Clang gets the instruction itself (not under
 * ThreadSanitizer, which must see the atomic). */
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define URSA__TSAN 1
#endif
#endif
static inline bool ursa__mutex_test_and_set(ursa_mutex_t *m)
{
#if defined(__clang__) && (defined(__x86_64__) || defined(__i386__)) && !defined(URSA__TSAN)
	bool held;
	__asm__ __volatile__("lock btsl $0, %1" : "=@ccc"(held), "+m"(m->__word) : : "memory");
	return held;
#else
	return __atomic_fetch_or(&m->__word, 1u, __ATOMIC_ACQUIRE) & 1u;
#endif
}
#undef URSA__TSAN

static inline int ursa__mutex_lock_fast(ursa_mutex_t *m)
{
	if (__builtin_expect(m != NULL && !ursa__mutex_test_and_set(m), 1))
		return 0;
	return ursa__mutex_lock_held(m);
}

static inline int ursa__mutex_trylock_fast(ursa_mutex_t *m)
{
	if (__builtin_expect(m != NULL && !ursa__mutex_test_and_set(m), 1))
		return 0;
	return ursa__mutex_trylock_held(m);
}

static inline int ursa__mutex_unlock_fast(ursa_mutex_t *m)
{
	if (__builtin_expect(m != NULL && ursa__mutex_cas(m, 1, 0, __ATOMIC_RELEASE), 1))
		return 0;
	return ursa__mutex_unlock_slow(m);
}

#ifndef URSA_NO_INLINE
#define ursa_mutex_lock(m) ursa__mutex_lock_fast(m)
#define ursa_mutex_trylock(m) ursa__mutex_trylock_fast(m)
#define ursa_mutex_unlock(m) ursa__mutex_unlock_fast(m)
#endif

URSA_EXTERN_C_END

#endif
