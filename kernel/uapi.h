/* SPDX-License-Identifier: MIT */
/*
 * kernel/uapi.h — kernel ABI constants that distro headers may lack.
 *
 * Debian 12 ships linux-libc-dev 6.1 and liburing 2.3: no io_uring futex or
 * waitid opcodes, no FUTEX2_* flags, no futex2 syscall numbers beyond
 * futex_waitv. Each definition is guarded so newer headers win.
 * Values are from include/uapi/linux/{io_uring,futex}.h (Linux 6.7+).
 */
#ifndef URSA_KERNEL_UAPI_H
#define URSA_KERNEL_UAPI_H

#include <linux/futex.h>
#include <linux/io_uring.h>
#include <stdint.h>
#include <sys/syscall.h>

/* io_uring opcodes (enum in the uapi header, so test the value via configure). */
#ifndef HAVE_IORING_OP_FUTEX_WAIT
#define IORING_OP_WAITID 50
#define IORING_OP_FUTEX_WAIT 51
#define IORING_OP_FUTEX_WAKE 52
#define IORING_OP_FUTEX_WAITV 53
#endif

/* futex2 flags (FUTEX2_SIZE_U32 is mandatory for the io_uring futex ops). */
#ifndef FUTEX2_SIZE_U8
#define FUTEX2_SIZE_U8 0x00
#define FUTEX2_SIZE_U16 0x01
#define FUTEX2_SIZE_U32 0x02
#define FUTEX2_SIZE_U64 0x03
#define FUTEX2_NUMA 0x04
#endif
#ifndef FUTEX2_PRIVATE
#define FUTEX2_PRIVATE FUTEX_PRIVATE_FLAG /* 128 */
#endif
#ifndef FUTEX_WAITV_MAX
#define FUTEX_WAITV_MAX 128
#endif
#ifndef FUTEX_BITSET_MATCH_ANY
#define FUTEX_BITSET_MATCH_ANY 0xffffffff
#endif

/* futex2 syscall numbers (x86_64 and the generic table agree from 449 on). */
#ifndef SYS_futex_waitv
#define SYS_futex_waitv 449
#endif
#ifndef SYS_futex_wake
#define SYS_futex_wake 454
#endif
#ifndef SYS_futex_wait
#define SYS_futex_wait 455
#endif
#ifndef SYS_futex_requeue
#define SYS_futex_requeue 456
#endif

/* struct futex_waitv arrived in 5.16 headers; Debian 12's 6.1 has it, but
 * keep the layout pinned for older build hosts. */
#ifndef FUTEX_32
#define FUTEX_32 FUTEX2_SIZE_U32
#endif

#endif
