/* SPDX-License-Identifier: MIT */
/* ursa/probe.h — what the running kernel offers. */
#ifndef URSA_PROBE_H
#define URSA_PROBE_H

#include <ursa/common.h>

URSA_EXTERN_C_BEGIN

struct ursa_features {
	bool futex2;       /* futex_wait/futex_wake syscalls (6.7+) */
	bool futex_waitv;  /* futex_waitv syscall (5.16+) */
	/* (A call a seccomp filter refuses, with ENOSYS or EPERM, is absent;
	 * a filter installed later, once a call has met it.) */
	bool uring;        /* io_uring usable (not disabled) */
	bool uring_futex;  /* IORING_OP_FUTEX_WAIT/WAKE (6.7+) */
	bool uring_futexv; /* IORING_OP_FUTEX_WAITV (6.7+) */
	bool uring_waitid; /* IORING_OP_WAITID (6.7+) */
};

/* Fill *f. The kernel's lasting answer is cached and later calls return
 * it (but futex2 and futex_waitv turn false once a call of ursa's has met
 * a seccomp filter installed since); an io_uring set-up refused for a
 * passing reason (no file descriptor or memory to spare) reads as "uring
 * false" for that call only, and the next call asks again. Returns 0 or
 * -EINVAL (NULL f). Never blocks. */
URSA_API int ursa_probe(struct ursa_features *f);

URSA_EXTERN_C_END

#endif
