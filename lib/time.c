/* SPDX-License-Identifier: MIT */
/* lib/time.c — deadline checks and the generic blocking loop. */
#include "lib/internal.h"

#include "lib/cancel.h"

#include <pthread.h>

int ursa__check_deadline(clockid_t clk, const struct timespec *abs)
{
	if (clk != CLOCK_MONOTONIC && clk != CLOCK_REALTIME)
		return -EINVAL;
	if (abs && (abs->tv_nsec < 0 || abs->tv_nsec >= 1000000000L || abs->tv_sec < 0))
		return -EINVAL;
	return 0;
}

bool ursa__deadline_passed(clockid_t clk, const struct timespec *abs)
{
	struct timespec now;
	if (!abs)
		return false;
	clock_gettime(clk, &now);
	return now.tv_sec > abs->tv_sec || (now.tv_sec == abs->tv_sec && now.tv_nsec >= abs->tv_nsec);
}

/* *t = now on clk + us microseconds. Kept in seconds and nanoseconds,
 * never turned into one nanosecond count: a caller's deadline may be near
 * the largest time_t ("forever"), and tv_sec * 1e9 would overflow. */
static void bound_from_now(clockid_t clk, unsigned us, struct timespec *t)
{
	clock_gettime(clk, t);
	t->tv_sec += us / 1000000u;
	t->tv_nsec += (long)(us % 1000000u) * 1000L;
	if (t->tv_nsec >= 1000000000L) {
		t->tv_nsec -= 1000000000L;
		t->tv_sec++;
	}
}

static bool ts_before(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

const struct timespec *ursa__bounded_deadline(clockid_t *clk, unsigned us,
					      const struct timespec *abs, struct timespec *bound)
{
	/* The bound is a time, not a wall-clock reading: kept on
	 * CLOCK_MONOTONIC, so that a step of the wall clock does not stretch
	 * it (a blocked writer's 10 ms, lib/rwlock.c). The caller's deadline
	 * if that comes first. */
	clockid_t c = abs ? *clk : CLOCK_MONOTONIC;
	bound_from_now(c, us, bound);
	if (abs && !ts_before(bound, abs))
		return abs;
	if (c != CLOCK_MONOTONIC)
		bound_from_now(CLOCK_MONOTONIC, us, bound);
	*clk = CLOCK_MONOTONIC;
	return bound;
}

/* Sleep as the step asked: one futex word, or every word of a wait-any.
 * URSA_BLOCK_EINTR with the caller's deadline (eintr): a signal handler
 * ends the sleep whatever its SA_RESTART, as glibc's timed waits. */
static int sleep_on(const struct ursa_wait *wt, clockid_t clk, const struct timespec *dl,
		    bool eintr)
{
	if (wt->kind == URSA_ARM_WAITV)
		return ursa_k_futex_waitv(wt->addr, wt->val, clk, dl);
	if (eintr)
		return ursa_k_futex_wait_eintr(wt->addr, wt->val, wt->shared, clk, dl, wt->bits);
	return ursa_k_futex_wait_bits(wt->addr, wt->val, wt->shared, clk, dl, wt->bits);
}

__thread struct ursa_cancel_point ursa__cancel_point;

struct cancel_ctx {
	void *obj;
	const struct ursa_step_ops *ops;
	struct ursa_waiter *w;
};

/* Cancelled in the sleep (lib/cancel.h): give the wait up. */
static void cancel_cleanup(void *arg)
{
	struct cancel_ctx *x = arg;
	if (x->ops->cancelled) {
		x->ops->cancelled(x->obj, x->w);
		ursa__cancel_point.given = 0;
	} else {
		ursa__cancel_point.given = x->ops->abandon(x->obj, x->w) == 1;
	}
	ursa__cancel_point.obj = NULL;
}

/* The sleep as a cancellation point: asynchronous cancellation enabled for
 * the futex call alone, inside a cleanup handler that abandons the wait. */
static __attribute__((noinline)) int sleep_cancellable(void *obj, const struct ursa_step_ops *ops,
							struct ursa_waiter *w,
							const struct ursa_wait *wt, clockid_t clk,
							const struct timespec *dl, bool eintr)
{
	struct cancel_ctx x = {obj, ops, w};
	int old, r;
	pthread_cleanup_push(cancel_cleanup, &x);
	pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, &old);
	r = sleep_on(wt, clk, dl, eintr);
	pthread_setcanceltype(old, NULL);
	pthread_cleanup_pop(0);
	return r;
}

int ursa__block_flags(void *obj, const struct ursa_step_ops *ops, struct ursa_waiter *w,
		      clockid_t clk, const struct timespec *abs, unsigned flags)
{
	struct ursa_wait wt = {0};
	bool eintr = abs && (flags & URSA_BLOCK_EINTR);
	for (;;) {
		int r = ops->step(obj, w, &wt);
		if (r != URSA_STEP_WAIT)
			return r == URSA_STEP_DONE ? wt.res : r;
		/* A deadline already past: one try, no sleep. */
		if (abs && ursa__deadline_passed(clk, abs))
			return ops->abandon(obj, w) == 1 ? 0 : -ETIMEDOUT;
		/* A bounded wait sleeps at most wt.bound_us (or until the
		 * caller's deadline, if that comes first). */
		struct timespec bound;
		clockid_t dclk = clk;
		const struct timespec *dl =
		    wt.bound_us ? ursa__bounded_deadline(&dclk, wt.bound_us, abs, &bound) : abs;
		if (unlikely(ursa__cancel_point.obj == obj))
			r = sleep_cancellable(obj, ops, w, &wt, dclk, dl, eintr);
		else
			r = sleep_on(&wt, dclk, dl, eintr);
		w->slept = r == 0 && wt.kind == URSA_ARM_FUTEX ? URSA_SLEPT_WOKEN : 1;
		if (r == -ETIMEDOUT && dl != abs)
			continue; /* the bound, not the caller's deadline */
		if (r == -ETIMEDOUT || (r == -EINTR && (flags & URSA_BLOCK_EINTR))) {
			/* The word may have changed just as we timed out or were
			 * interrupted: one last step, so a hand-off or a post is
			 * not stranded. */
			int why = r;
			r = ops->step(obj, w, &wt);
			if (r != URSA_STEP_WAIT)
				return r == URSA_STEP_DONE ? wt.res : r;
			return ops->abandon(obj, w) == 1 ? 0 : why;
		}
		if (r < 0 && r != -EAGAIN && r != -EINTR)
			return ops->abandon(obj, w) == 1 ? 0 : r; /* -EFAULT: a caller bug */
	}
}
