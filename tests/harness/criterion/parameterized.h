/* SPDX-License-Identifier: MIT */
/* tests/harness/criterion/parameterized.h — see criterion.h: ParameterizedTest is there. */
#include <criterion/criterion.h>
