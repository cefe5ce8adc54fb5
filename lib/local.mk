# lib/: the primitives, built only on kernel/.
#
# lib/libursa-core.la holds every object of the library (with kernel/'s),
# compiled once with hidden visibility: libursa exports its ursa_* names
# (lib/ursa.map), the pthread shim links the same objects and exports only
# the POSIX names (lib/shim/local.mk).
noinst_LTLIBRARIES += lib/libursa-core.la
lib_libursa_core_la_SOURCES = \
	lib/async.c \
	lib/cancel.h \
	lib/cond.c \
	lib/event.c \
	lib/internal.h \
	lib/latch.c \
	lib/mutex.c \
	lib/ops.h \
	lib/rwlock.c \
	lib/sem.c \
	lib/step.h \
	lib/time.c \
	lib/trace.h \
	lib/version.c \
	lib/wait_any.c \
	lib/waitq.c
lib_libursa_core_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
lib_libursa_core_la_LIBADD = kernel/libursa-kernel.la

lib_LTLIBRARIES += lib/libursa.la
lib_libursa_la_SOURCES =
lib_libursa_la_LIBADD = lib/libursa-core.la $(URING_LIBS) $(PTHREAD_LIBS)
lib_libursa_la_LDFLAGS = $(AM_LDFLAGS) -version-info $(URSA_LT_VERSION) \
	-Wl,--version-script=$(top_srcdir)/lib/ursa.map
EXTRA_lib_libursa_la_DEPENDENCIES = lib/ursa.map
EXTRA_DIST += lib/ursa.map
