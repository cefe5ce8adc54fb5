/* SPDX-License-Identifier: MIT */
/* kernel/arch.h — the one CPU-specific hint ursa uses while spinning. */
#ifndef URSA_KERNEL_ARCH_H
#define URSA_KERNEL_ARCH_H

static inline void ursa_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#else
	__asm__ __volatile__("" ::: "memory");
#endif
}

#endif
