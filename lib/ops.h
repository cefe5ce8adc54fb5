/* SPDX-License-Identifier: MIT */
/*
 * lib/ops.h — the step table of every waitable (lib/step.h), one line
 * each. Each table is defined in its primitive's own .c file. Private to
 * lib/.
 */
#ifndef URSA_LIB_OPS_H
#define URSA_LIB_OPS_H

#include "lib/step.h"

#define URSA_PRIVATE_DATA __attribute__((visibility("hidden")))

URSA_PRIVATE_DATA extern const struct ursa_step_ops ursa__mutex_ops;
URSA_PRIVATE_DATA extern const struct ursa_step_ops ursa__rwlock_rd_ops;
URSA_PRIVATE_DATA extern const struct ursa_step_ops ursa__rwlock_wr_ops;
URSA_PRIVATE_DATA extern const struct ursa_step_ops ursa__cond_ops;
URSA_PRIVATE_DATA extern const struct ursa_step_ops ursa__sem_ops;
URSA_PRIVATE_DATA extern const struct ursa_step_ops ursa__event_ops;
URSA_PRIVATE_DATA extern const struct ursa_step_ops ursa__waitq_ops;
URSA_PRIVATE_DATA extern const struct ursa_step_ops ursa__wait_any_ops;

#endif
