/* SPDX-License-Identifier: MIT */
/* lib/time.c — deadline checks and the generic blocking loop. */
#include "lib/internal.h"

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

int ursa__block(void *obj, ursa_step_fn step, ursa_abandon_fn abandon, struct ursa_waiter *w,
		clockid_t clk, const struct timespec *abs)
{
	struct ursa_wait wt;
	for (;;) {
		int r = step(obj, w, &wt);
		if (r != URSA_STEP_WAIT)
			return r;
		/* A deadline already past: one try, no sleep. */
		if (abs && ursa__deadline_passed(clk, abs))
			return abandon(obj, w) == 1 ? 0 : -ETIMEDOUT;
		r = ursa_k_futex_wait(wt.addr, wt.val, wt.shared, clk, abs);
		w->slept = 1;
		if (r == -ETIMEDOUT) {
			/* The word may have changed just as we timed out: one
			 * last step, so a hand-off or a post is not stranded. */
			r = step(obj, w, &wt);
			if (r != URSA_STEP_WAIT)
				return r;
			return abandon(obj, w) == 1 ? 0 : -ETIMEDOUT;
		}
		if (r < 0 && r != -EAGAIN && r != -EINTR)
			return abandon(obj, w) == 1 ? 0 : r; /* -EFAULT: a caller bug */
	}
}
