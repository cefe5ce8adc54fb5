/* SPDX-License-Identifier: MIT */
/*
 * ursa/common.h — conventions shared by every ursa header.
 *
 * - Every function returns 0 (or a count or index) on success and -errno on
 *   failure. errno is never set for, nor read by, the caller.
 * - try* functions return -EBUSY where they would have to wait.
 * - Timed waits take (clockid_t clock, const struct timespec *abstime):
 *   clock is CLOCK_MONOTONIC or CLOCK_REALTIME (else -EINVAL), abstime is an
 *   absolute deadline on that clock, NULL waits forever, a deadline already
 *   past gives -ETIMEDOUT after one try without sleeping, and a tv_nsec
 *   outside [0, 1e9) or negative tv_sec is -EINVAL.
 * - Objects are caller-allocated, 4-byte aligned; all-zero is a valid,
 *   unlocked, process-private instance (URSA_*_INIT).
 * - NULL object pointers and unknown flag bits are -EINVAL.
 * - No call allocates, takes a lock of its own, or makes a system call on
 *   an uncontended path.
 */
#ifndef URSA_COMMON_H
#define URSA_COMMON_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h> /* clockid_t, in every mode (time.h hides it in strict ISO C) */
#include <time.h>

#ifdef __cplusplus
#define URSA_EXTERN_C_BEGIN extern "C" {
#define URSA_EXTERN_C_END }
#else
#define URSA_EXTERN_C_BEGIN
#define URSA_EXTERN_C_END
#endif

#define URSA_API __attribute__((visibility("default")))

/* Timed waits take a pointer to it; strict ISO C99 <time.h> does not define
 * it (C11 and POSIX modes do), and a declaration is all a prototype needs. */
struct timespec;

/* *_init flag: the object is process-shared (MAP_SHARED memory, across
 * fork() or unrelated processes; shared futex keys). Stored in the object. */
#define URSA_SHARED 0x1u

/* The version of these headers; NUMBER is MAJOR * 10000 + MINOR * 100 +
 * PATCH (0.1.0 is 100). The one place the version is written: configure
 * takes its own from these lines. */
#define URSA_VERSION_MAJOR 0
#define URSA_VERSION_MINOR 1
#define URSA_VERSION_PATCH 0
#define URSA_VERSION_STRING "0.1.0"
#define URSA_VERSION_NUMBER \
	(URSA_VERSION_MAJOR * 10000 + URSA_VERSION_MINOR * 100 + URSA_VERSION_PATCH)

URSA_EXTERN_C_BEGIN
/* The version of the library loaded at run time, encoded as
 * URSA_VERSION_NUMBER is (MAJOR * 10000 + MINOR * 100 + PATCH), so a program
 * can compare the library it runs with to the headers it was built with.
 * Never fails; never blocks. */
URSA_API int ursa_version(void);
URSA_EXTERN_C_END

#endif
