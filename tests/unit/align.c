/* SPDX-License-Identifier: MIT */
/* tests/unit/align.c — a misaligned object is refused at init (-EINVAL),
 * not later, when the first contended wait's futex call would refuse its
 * address. */
#include "tests/helpers.h"

#include <errno.h>
#include <stdalign.h>
#include <stdlib.h>

TestSuite(align, .timeout = 30);

/* A buffer aligned for anything; objects go at offsets 1..align-1. */
static alignas(64) unsigned char buf[4096];

#define EACH_MISALIGNED(T, p)                                                                      \
	for (size_t off_ = 1; off_ < _Alignof(T) || off_ < 4; off_++)                              \
		for (T *p = (T *)(void *)(buf + 64 + off_); p; p = NULL)

Test(align, mutex)
{
	EACH_MISALIGNED(ursa_mutex_t, m)
	cr_assert_eq(ursa_mutex_init(m, 0), -EINVAL, "offset %zu", off_);
	cr_assert_eq(ursa_mutex_init((ursa_mutex_t *)(void *)(buf + 64), 0), 0);
}

Test(align, rwlock)
{
	EACH_MISALIGNED(ursa_rwlock_t, l)
	cr_assert_eq(ursa_rwlock_init(l, 0), -EINVAL, "offset %zu", off_);
	cr_assert_eq(ursa_rwlock_init((ursa_rwlock_t *)(void *)(buf + 64), 0), 0);
}

Test(align, cond)
{
	EACH_MISALIGNED(ursa_cond_t, c)
	cr_assert_eq(ursa_cond_init(c, URSA_SHARED), -EINVAL, "offset %zu", off_);
	cr_assert_eq(ursa_cond_init((ursa_cond_t *)(void *)(buf + 64), 0), 0);
}

Test(align, sem)
{
	EACH_MISALIGNED(ursa_sem_t, s)
	cr_assert_eq(ursa_sem_init(s, 1, 0), -EINVAL, "offset %zu", off_);
	cr_assert_eq(ursa_sem_init((ursa_sem_t *)(void *)(buf + 64), 1, 0), 0);
}

Test(align, event)
{
	for (unsigned fl = 0; fl < 2; fl++) {
		EACH_MISALIGNED(ursa_event_t, e)
		cr_assert_eq(ursa_event_init(e, fl ? URSA_EVENT_AUTO_RESET : 0), -EINVAL,
			     "offset %zu", off_);
	}
	cr_assert_eq(ursa_event_init((ursa_event_t *)(void *)(buf + 64), 0), 0);
}

/* The wait queue is 8-byte aligned (its keys are 64-bit). */
Test(align, waitq)
{
	size_t sz = ursa_waitq_size(4);
	cr_assert(sz && sz + 72 < sizeof(buf));
	for (size_t off = 1; off < 8; off++)
		cr_assert_eq(ursa_waitq_init((ursa_waitq_t *)(void *)(buf + 64 + off), 4, 0),
			     -EINVAL, "offset %zu", off);
	cr_assert_eq(ursa_waitq_init((ursa_waitq_t *)(void *)(buf + 64), 4, 0), 0);
}
