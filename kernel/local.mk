# kernel/: the only code that issues syscalls or fills SQEs. A convenience
# library, linked into lib/libursa-core.la.
noinst_LTLIBRARIES += kernel/libursa-kernel.la
kernel_libursa_kernel_la_SOURCES = \
	kernel/arch.h \
	kernel/cpus.c \
	kernel/futex.c \
	kernel/futex.h \
	kernel/probe.c \
	kernel/proc.c \
	kernel/proc.h \
	kernel/timens.c \
	kernel/uapi.h \
	kernel/uring.h \
	kernel/wake.c \
	kernel/wake.h
kernel_libursa_kernel_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
