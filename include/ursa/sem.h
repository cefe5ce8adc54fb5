/* SPDX-License-Identifier: MIT */
/*
 * ursa/sem.h — an 8-byte counting semaphore.
 *
 * Post makes no system call when no one waits; wait takes a unit without a
 * system call when one is available, and before it sleeps spins while
 * nobody sleeps on the semaphore, as long as spinning paid off lately
 * (ursa(7)). Waiters may be blocked threads or io_uring waiters
 * (ursa_sem_wait_async).
 *
 * Wakes: one woken waiter at a time. A post wakes a sleeper only when no
 * woken waiter is still on its way; that one, once it runs, takes a unit
 * or passes the wake on. Units are not reserved for sleepers: a thread
 * that posts and waits again may take the unit before a woken waiter runs.
 *
 * Fairness: a waiter that has slept and has waited 1 ms asks for a
 * hand-off (with more than 7 waiters, 131 us per waiter: 4.2 ms with 32,
 * so that hand-offs, each costing a wake-up latency, stay rare however
 * long the queue); the next post that finds no unit free gives its unit to
 * the woken waiter (the longest asleep: the kernel's futex queue is first
 * in, first out), and trywait, spinning waiters and waiters that have not
 * yet slept cannot take it. So once a waiter has waited that long it is overtaken
 * for at most about one hand-off per waiter queued before it, each about
 * one wake-up latency (measured: 32 threads on 2 CPUs, 1 us sections, the
 * worst thread's p99 wait 1-11 ms); a ring waiter also until its event
 * loop handles its completion. No waiter starves, but a semaphore of
 * count 1 used as a lock is not FIFO: it trades some fairness for
 * throughput (figures: bench/README.md). A thread that has kept posting
 * for 25 us while a woken waiter had not yet run yields its CPU, and so
 * does one that has kept posting the same semaphore for 25 us while
 * waiters sleep on it (taking the unit back in between: the waiters it
 * wakes find it gone). Posting different semaphores one after another (a
 * semaphore per waiter), each post waking its waiter, does not.
 */
#ifndef URSA_SEM_H
#define URSA_SEM_H

#include <ursa/common.h>

URSA_EXTERN_C_BEGIN

typedef struct ursa_sem {
	uint32_t __value;   /* private: see lib/sem.c */
	uint32_t __waiters; /* private */
} ursa_sem_t;

#define URSA_SEM_INIT {0, 0}

/* Largest count a semaphore holds. */
#define URSA_SEM_VALUE_MAX 0x7fffffffu

/* Initialise *s with count value. flags: 0 or URSA_SHARED.
 * Returns 0, -EINVAL (NULL, flags, value > URSA_SEM_VALUE_MAX). */
URSA_API int ursa_sem_init(ursa_sem_t *s, unsigned value, unsigned flags);

/* Add one to the count, waking a waiter if any. Returns 0, -EOVERFLOW (count
 * already URSA_SEM_VALUE_MAX, counting a unit being handed to a waiter, which
 * the waiter may give back; unchanged), -EINVAL. Never blocks on a waiter:
 * a post that wakes waits only while 7 other such posts are between their
 * increment and their last look at once, for one of them to finish
 * (microseconds; about a second if processes killed there left them:
 * ursa_sem_destroy, below). Async-signal-safe, as POSIX's sem_post: it
 * may be called from a signal handler, also one that interrupted this
 * thread inside ursa_sem_wait or ursa_sem_post on the same semaphore
 * (tests/fault/signals.c). */
URSA_API int ursa_sem_post(ursa_sem_t *s);

/* Wait until the count is positive and take one. Returns 0 or -EINVAL.
 * Blocks. Not interrupted by signals. */
URSA_API int ursa_sem_wait(ursa_sem_t *s);

/* Take one if the count is positive. Returns 0, -EBUSY, -EINVAL. */
URSA_API int ursa_sem_trywait(ursa_sem_t *s);

/* ursa_sem_wait with a deadline. Returns 0, -ETIMEDOUT, -EINVAL. Blocks. */
URSA_API int ursa_sem_timedwait(ursa_sem_t *s, clockid_t clk, const struct timespec *abs);

/* The current count (>= 0; a snapshot; a unit being handed to a waiter is
 * that waiter's already and not counted), or -EINVAL. */
URSA_API int ursa_sem_value(ursa_sem_t *s);

/* Check no one waits on *s (and no unit is being handed to a waiter).
 * Returns 0, -EBUSY, -EINVAL. Once it returned 0 the memory may be freed,
 * even while the ursa_sem_post that served the last wait is still running
 * (POSIX's sem_destroy rule; a completion semaphore on the waiter's
 * stack): a post that found waiters holds a pin until its last access,
 * and destroy waits for it (microseconds: a futex wake). There are seven
 * pins: an eighth such post at once waits until one of the seven has
 * finished (only if all seven stay a second, left by killed processes,
 * does it go on without one, and then the semaphore must not be freed
 * before it returned). Freeing without destroy is
 * safe only after posts that found nobody waiting (those do not touch the
 * semaphore after their increment). A pin held for a second (a process
 * killed inside a post to a URSA_SHARED semaphore): -EBUSY. */
URSA_API int ursa_sem_destroy(ursa_sem_t *s);

/* The ring and the op: liburing's struct io_uring, ursa/async.h's struct
 * ursa_op (include <liburing.h> and <ursa/async.h> to start one). */
struct io_uring;
struct ursa_op;

/* ursa_sem_wait inside the ring r: op (zeroed, or URSA_OP_INIT; optionally
 * given ursa_op_set_deadline) finishes through ursa_handle_cqe with res 0
 * when it took one unit, -ETIMEDOUT or -ECANCELED (took none). Returns 1
 * (finished at once: op->res set; nothing queued), 0 (in flight: SQEs
 * queued, the caller submits), -EBUSY (SQ ring full; nothing changed),
 * -EOPNOTSUPP (no io_uring futex ops), -EINVAL (NULL argument, op in
 * flight) -- the starter contract of ursa/async.h. Never blocks. */
URSA_API int ursa_sem_wait_async(struct io_uring *r, ursa_sem_t *s, struct ursa_op *op);

URSA_EXTERN_C_END

#endif
