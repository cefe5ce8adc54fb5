# kernel/: the only code that issues syscalls or fills SQEs.
noinst_LTLIBRARIES += kernel/libursa_kernel.la
kernel_libursa_kernel_la_SOURCES = \
	kernel/uapi.h \
	kernel/arch.h \
	kernel/futex.h \
	kernel/futex.c \
	kernel/uring.h \
	kernel/probe.c
kernel_libursa_kernel_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden $(URING_CFLAGS)
