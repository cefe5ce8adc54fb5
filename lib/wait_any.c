/* SPDX-License-Identifier: MIT */
/*
 * lib/wait_any.c — wait for the first of up to 128 mutexes, semaphores and
 * events, and take exactly that one.
 *
 * The objects keep their own protocols (lib/mutex.c, lib/sem.c,
 * lib/event.c); wait-any is one waiter of each at once:
 *
 *   loop {
 *     try:      take the first object, in index order, that is free now
 *               (mutex: FREE, or HANDED once we are registered; sem: count > 0;
 *               event: SET, or a set came since our snapshot). Done.
 *     prepare:  run each object's step, which announces us the way any
 *               waiter of that object announces itself — mutex CONTENDED
 *               and COUNT +1,
 *               semaphore waiter count +1, event WAITERS mark / generation
 *               snapshot / auto-reset count +1 — and says which word and
 *               value to sleep on. A step may take its object. Done.
 *     sleep:    futex_waitv on all n (word, value) pairs.
 *   }
 *
 * Why no wakeup is lost for us: each entry of the waitv is the exact
 * (word, value) the object's own step would sleep on, after the same
 * announcement, and the kernel compares every word under its bucket lock
 * before sleeping. Each object's essay shows that a waiter so announced is
 * woken (or finds the word changed) when the object becomes available;
 * waitv returns on the first such wake or change, and we retry all.
 *
 * Why no wakeup is lost for others — pass-on. The objects wake ONE waiter
 * per release (mutex unlock, semaphore post, auto-reset set). Our waitv
 * entry for object j is a queued waiter of j like any other, so j's wake
 * may be consumed by us. If we then take some other object i, j's wake was
 * spent on a waiter that did not take j, and j's other sleepers may sleep
 * on although j is available. Worse, before Linux 7.1 a WAITV waiter
 * already woken on one entry could still be counted as woken by wakes on
 * its other entries, so one return of ours may have consumed wakes of
 * several objects — and waitv tells us only one index. And a wake consumed
 * in an earlier round is not visible at all. So whenever we leave — having
 * taken i, or giving up — every other object j is looked at:
 *
 *   mutex j: ursa__mutex_abandon deregisters us (COUNT - 1; if that leaves
 *     a hand-off nobody is registered to claim, it takes it back). Then,
 *     only if we have slept (before that we consumed nothing),
 *     ursa__mutex_pass_on (lib/mutex.c):
 *     HANDED     an unlocker handed it to the registered waiters and woke
 *                one — maybe us. Claim it (HANDED -> CONTENDED) and unlock
 *                it: the unlock wakes the next sleeper, and a waiter that
 *                was the true recipient steps, finds it taken or free, and
 *                goes on as after any lost race.
 *     FREE       its unlock's wake may have been ours: wake 1.
 *     CONTENDED  its unlock will wake a sleeper: nothing to do.
 *     LOCKED     cannot hide a sleeper: lockers store CONTENDED while any
 *                waiter is registered, and every sleeper is.
 *   semaphore j, auto-reset event j: their abandon deregisters us and, if
 *     the object is available (count > 0 / SET) with waiters left, wakes 1
 *     (lib/sem.c and lib/event.c, "pass-on").
 *   manual-reset event j: set wakes everyone; nothing to pass on.
 *
 * Every pass-on wake is at worst spurious: the woken waiter steps again.
 * Each object's own word says whether it is available, so the checks need
 * no memory of which wakes we consumed — that is why they are sound even
 * though waitv reports only one index.
 *
 * Exactly one object is taken: try and prepare stop at the first take, and
 * release every other object without taking it (a HANDED mutex claimed in
 * pass-on is unlocked again before we return).
 */
#include "lib/wait_any_internal.h"

#include <string.h>

int ursa__wait_any_check(const ursa_waitable_t *v, unsigned n)
{
	if (!v || n == 0 || n > URSA_WAIT_ANY_MAX)
		return -EINVAL;
	for (unsigned i = 0; i < n; i++) {
		if (!v[i].obj)
			return -EINVAL;
		if (v[i].kind != URSA_WAIT_MUTEX && v[i].kind != URSA_WAIT_SEM &&
		    v[i].kind != URSA_WAIT_EVENT)
			return -EINVAL;
	}
	return 0;
}

static void release(const ursa_waitable_t *it, struct ursa_waiter *w)
{
	switch (it->kind) {
	case URSA_WAIT_MUTEX:
		ursa__mutex_abandon(it->obj, w);
		if (w->slept)
			ursa__mutex_pass_on(it->obj);
		break;
	case URSA_WAIT_SEM:
		ursa__sem_abandon(it->obj, w);
		break;
	default:
		ursa__event_abandon(it->obj, w);
		break;
	}
}

/* v[taken] is ours: release all the others. */
static int finish(const ursa_waitable_t *v, unsigned n, struct ursa_waiter *ws, unsigned taken)
{
	for (unsigned j = 0; j < n; j++) {
		if (j != taken)
			release(&v[j], &ws[j]);
	}
	return (int)taken;
}

int ursa__wait_any_try(const ursa_waitable_t *v, unsigned n, struct ursa_waiter *ws)
{
	for (unsigned i = 0; i < n; i++) {
		bool took;
		switch (v[i].kind) {
		case URSA_WAIT_MUTEX:
			took = ursa__mutex_take(v[i].obj, &ws[i]) == 0;
			break;
		case URSA_WAIT_SEM:
			took = ursa__sem_take(v[i].obj, &ws[i]) == 0;
			break;
		default:
			took = ursa__event_take(v[i].obj, &ws[i]) == 0;
			break;
		}
		if (took)
			return finish(v, n, ws, i);
	}
	return -EAGAIN;
}

static int prepare(const ursa_waitable_t *v, unsigned n, struct ursa_waiter *ws,
		   struct futex_waitv *out, bool *bounded)
{
	*bounded = false;
	for (unsigned i = 0; i < n; i++) {
		struct ursa_wait wt = {0};
		int r;
		switch (v[i].kind) {
		case URSA_WAIT_MUTEX:
			r = ursa__mutex_step(v[i].obj, &ws[i], &wt);
			break;
		case URSA_WAIT_SEM:
			r = ursa__sem_step(v[i].obj, &ws[i], &wt);
			break;
		default:
			r = ursa__event_step(v[i].obj, &ws[i], &wt);
			break;
		}
		if (r == URSA_STEP_DONE)
			return finish(v, n, ws, i);
		out[i].val = wt.val;
		out[i].uaddr = (uint64_t)(uintptr_t)wt.addr;
		out[i].flags = ursa_k_futex2_flags(wt.shared);
		out[i].__reserved = 0;
		*bounded |= wt.bounded;
	}
	return -EAGAIN;
}

int ursa__wait_any_prepare(const ursa_waitable_t *v, unsigned n, struct ursa_waiter *ws,
			   struct futex_waitv *out)
{
	bool bounded;
	return prepare(v, n, ws, out, &bounded);
}

void ursa__wait_any_woke(struct ursa_waiter *ws, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		ws[i].slept = 1;
}

void ursa__wait_any_abandon(const ursa_waitable_t *v, unsigned n, struct ursa_waiter *ws)
{
	for (unsigned j = 0; j < n; j++)
		release(&v[j], &ws[j]);
}

/* *cap = now + URSA_HANDED_SLEEP_MS on clk; true if that comes before abs
 * (or abs is NULL). */
static bool cap_sleep(clockid_t clk, const struct timespec *abs, struct timespec *cap)
{
	clock_gettime(clk, cap);
	cap->tv_nsec += (long)URSA_HANDED_SLEEP_MS * 1000000L;
	while (cap->tv_nsec >= 1000000000L) {
		cap->tv_nsec -= 1000000000L;
		cap->tv_sec++;
	}
	return !abs || cap->tv_sec < abs->tv_sec ||
	       (cap->tv_sec == abs->tv_sec && cap->tv_nsec < abs->tv_nsec);
}

int ursa_wait_any(const ursa_waitable_t *v, unsigned n, clockid_t clk, const struct timespec *abs)
{
	int r = ursa__wait_any_check(v, n);
	if (r)
		return r;
	r = ursa__check_deadline(clk, abs);
	if (r)
		return r;
	/* Same answer whether or not an object happens to be free. */
	if (!ursa_k_have_futex_waitv())
		return -ENOSYS;

	struct ursa_waiter ws[URSA_WAIT_ANY_MAX];
	struct futex_waitv fv[URSA_WAIT_ANY_MAX];
	memset(ws, 0, n * sizeof(ws[0]));
	for (;;) {
		r = ursa__wait_any_try(v, n, ws);
		if (r >= 0)
			return r;
		/* A deadline already past: that was the one try; announce
		 * nothing, sleep not. */
		if (abs && ursa__deadline_passed(clk, abs)) {
			ursa__wait_any_abandon(v, n, ws);
			return -ETIMEDOUT;
		}
		bool bounded;
		r = prepare(v, n, ws, fv, &bounded);
		if (r >= 0)
			return r;
		/* A mutex newcomer sleeping on HANDED sleeps a bounded time
		 * (lib/mutex.c, "Limits"), here as in ursa__block. */
		struct timespec cap;
		const struct timespec *dl = abs;
		if (bounded && cap_sleep(clk, abs, &cap))
			dl = &cap;
		r = ursa_k_futex_waitv(fv, n, clk, dl);
		ursa__wait_any_woke(ws, n);
		if (r >= 0 || r == -EAGAIN || r == -EINTR || (r == -ETIMEDOUT && dl != abs))
			continue;
		/* Timed out or failed: the words may have changed just as we
		 * gave up; one last try, so nothing handed to us is stranded. */
		int t = ursa__wait_any_try(v, n, ws);
		if (t >= 0)
			return t;
		ursa__wait_any_abandon(v, n, ws);
		return r;
	}
}
