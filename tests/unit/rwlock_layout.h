/* SPDX-License-Identifier: MIT */
/* tests/unit/rwlock_layout.h — the white-box layout of ursa_rwlock_t's word
 * for the tests that set a state directly (tests/unit/rwlock.c, and
 * tests/unit/shim_rwlock.c for the shim's writer-preferring kind). */
#ifndef URSA_TESTS_RWLOCK_LAYOUT_H
#define URSA_TESTS_RWLOCK_LAYOUT_H

/*
 * White-box constants, from lib/rwlock.c's layout: the reader count is the
 * low 15 bits of __state (all ones: write-locked; all ones but the lowest:
 * HANDED, held for the woken writer), the registered waiters bits 15-26,
 * WRITER_REQ bit 27, WRITER_WOKEN bit 28, WRITER_FIRST bit 29, the waiting
 * bits 30 and 31; __notify's writer wake counter moves in steps of 16
 * (bit 0 the shared flag, bits 1-3 the unlocks' pins). Used only where a black-box test cannot get
 * in reasonable time (32765 read locks, 4095 waiters), to see that a waiter announced itself before
 * we go on, or to set up a state exactly.
 */
#define T_RW_COUNT           ((1u << 15) - 1)
#define T_RW_HANDED          ((1u << 15) - 2)
#define T_RW_MAX_READERS     ((1u << 15) - 3)
#define T_RW_WAITER          (1u << 15)
#define T_RW_WAITERS         (((1u << 12) - 1) << 15)
#define T_RW_WRITER_REQ      (1u << 27)
#define T_RW_WRITER_WOKEN    (1u << 28)
#define T_RW_WRITER_FIRST    (1u << 29)
#define T_RW_READERS_WAITING (1u << 30)
#define T_RW_WRITERS_WAITING (1u << 31)
#define T_RW_NOTIFY_STEP     16u

#endif
