/* SPDX-License-Identifier: MIT */
/* lib/version.c — ursa_version(): the version of the library itself. */
#include <ursa/common.h>

int ursa_version(void)
{
	return URSA_VERSION_NUMBER;
}
