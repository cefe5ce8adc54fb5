/* SPDX-License-Identifier: MIT */
/*
 * tests/real/filtered.c — run a command in a sandbox that refuses the
 * futex2 system calls (futex_waitv 449, futex_wake, futex_wait and
 * futex_requeue 454-456; the same numbers on every architecture), as
 * podman's default seccomp profile did with EPERM until Podman 6:
 *
 *   filtered [--uring] EPERM|ENOSYS COMMAND [ARG...]
 *
 * With --uring the io_uring calls (io_uring_setup, io_uring_enter,
 * io_uring_register: 425-427, also the same everywhere) are refused too,
 * as Docker's default profile has refused them since Docker 25 (make
 * check-filtered runs make check both ways).
 *
 * The filter (raw BPF, no libseccomp) is inherited by every process the
 * command starts, PostgreSQL's server and its backends included. glibc's
 * own locks use futex(2), which stays allowed, so only ursa meets the
 * refusal (make shim-real-filtered; tests/fault/seccomp.c is the library's
 * own test of it).
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#if defined(__x86_64__)
#define NATIVE_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define NATIVE_ARCH AUDIT_ARCH_AARCH64
#endif

int main(int argc, char **argv)
{
	int uring = argc > 1 && strcmp(argv[1], "--uring") == 0;
	argv += uring;
	argc -= uring;
	if (argc < 3 || (strcmp(argv[1], "EPERM") && strcmp(argv[1], "ENOSYS"))) {
		fprintf(stderr, "usage: filtered [--uring] EPERM|ENOSYS COMMAND [ARG...]\n");
		return 2;
	}
#ifdef NATIVE_ARCH
	unsigned err = strcmp(argv[1], "EPERM") ? ENOSYS : EPERM;
	/* io_uring's 425-427 refused only with --uring: its two jumps
	 * land on the ALLOW (the last) otherwise. */
	unsigned ur_lo = uring ? 425 : 0xffffffffu, ur_hi = uring ? 427 : 0xffffffffu;
	struct sock_filter f[] = {
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NATIVE_ARCH, 1, 0),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 449, 4, 0),
	    BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, ur_lo, 0, 1),
	    BPF_JUMP(BPF_JMP | BPF_JGT | BPF_K, ur_hi, 0, 2),
	    BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 454, 0, 2),
	    BPF_JUMP(BPF_JMP | BPF_JGT | BPF_K, 456, 1, 0),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (err & SECCOMP_RET_DATA)),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {(unsigned short)(sizeof(f) / sizeof(f[0])), f};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
		perror("filtered: seccomp");
		return 2;
	}
#else
	fprintf(stderr, "filtered: written for x86_64 and aarch64 only\n");
	return 2;
#endif
	execvp(argv[2], argv + 2);
	perror("filtered: exec");
	return 127;
}
