# lib/: the primitives, built only on kernel/.
lib_LTLIBRARIES += lib/libursa.la
lib_libursa_la_SOURCES = \
	lib/internal.h \
	lib/time.c \
	lib/mutex.c
lib_libursa_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden $(URING_CFLAGS)
lib_libursa_la_LIBADD = kernel/libursa_kernel.la $(URING_LIBS) $(PTHREAD_LIBS)
lib_libursa_la_LDFLAGS = $(AM_LDFLAGS) -version-info $(URSA_LT_VERSION) \
	-Wl,--version-script=$(top_srcdir)/lib/ursa.map
EXTRA_lib_libursa_la_DEPENDENCIES = lib/ursa.map
EXTRA_DIST += lib/ursa.map
