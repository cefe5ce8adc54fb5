/* SPDX-License-Identifier: MIT */
/*
 * lib/cancel.h — POSIX cancellation points for the pthread shim (lib/shim/).
 * Private to lib/.
 *
 * pthread_cond_wait and sem_wait are cancellation points: a thread asleep
 * in one must act on pthread_cancel at once, as with glibc. glibc does it
 * by enabling asynchronous cancellation around the futex system call only;
 * ursa does the same, from inside its blocking loop (ursa__block_flags,
 * lib/time.c), because that is where the sleep is:
 *
 *   the shim sets ursa__cancel_point.obj to the object it waits on (the
 *   ursa_cond_t, the ursa_sem_t) before calling ursa's wait, and clears it
 *   after. Each sleep of the blocking loop *on that object* (not the
 *   condvar's re-lock of its mutex, which is no cancellation point) then
 *   runs with PTHREAD_CANCEL_ASYNCHRONOUS, inside a cleanup handler that
 *   gives the wait up (the waiter's registration is undone, so the object
 *   stays consistent) through the object's `cancelled` step (lib/step.h),
 *   or its abandon where it has none (then .given says whether abandon
 *   found the object handed to this waiter), and clears .obj. A condvar's
 *   `cancelled` passes on a signal that came since the waiter registered
 *   (signal once more: at worst a spurious wakeup), so the cancelled waiter
 *   consumes none meant for the others, and does so before it leaves, so
 *   that a destroy waiting for the waiters cannot return while the pass-on
 *   still touches the condvar. A semaphore's abandon passes a unit on by
 *   itself (lib/sem.c, "pass-on").
 *
 *   The shim pushes its own cleanup handler outside ursa's wait: it runs
 *   next and re-takes the mutex (a condvar) so that the program's handlers
 *   run holding it, as POSIX wants.
 *
 * The asynchronous window covers only the futex call and the instructions
 * around it that touch nothing shared: an unwind from anywhere in it leaves
 * the waiter exactly registered, which abandon undoes.
 */
#ifndef URSA_LIB_CANCEL_H
#define URSA_LIB_CANCEL_H

struct ursa_cancel_point {
	void *obj; /* the object whose sleeps are cancellation points */
	int given; /* set by the cleanup: abandon said the object was ours */
};

extern __thread struct ursa_cancel_point ursa__cancel_point
	__attribute__((tls_model("initial-exec"), visibility("hidden")));

#endif
