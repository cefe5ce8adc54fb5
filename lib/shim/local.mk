# lib/shim/: libursa-pthread.so, pthread_mutex/cond/rwlock (and sem) on
# ursa, for LD_PRELOAD or -lursa-pthread. It links the library's own objects
# (lib/libursa-core.la, hidden), so LD_PRELOAD=.../libursa-pthread.so needs
# nothing else on the library path, and its version script exports only the
# POSIX names. Shared only: a static archive would clash with libc.a's
# definitions of the same names.
lib_LTLIBRARIES += lib/shim/libursa-pthread.la
lib_shim_libursa_pthread_la_SOURCES = \
	lib/shim/cond.c \
	lib/shim/core.c \
	lib/shim/mutex.c \
	lib/shim/rwlock.c \
	lib/shim/sem.c \
	lib/shim/shim.h
lib_shim_libursa_pthread_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
lib_shim_libursa_pthread_la_LIBADD = lib/libursa-core.la $(URING_LIBS) $(PTHREAD_LIBS) -ldl
lib_shim_libursa_pthread_la_LDFLAGS = $(AM_LDFLAGS) -shared -version-info 0:0:0 \
	-Wl,-z,now -Wl,--version-script=$(top_srcdir)/lib/shim/libursa-pthread.map
EXTRA_lib_shim_libursa_pthread_la_DEPENDENCIES = lib/shim/libursa-pthread.map
EXTRA_DIST += lib/shim/libursa-pthread.map lib/shim/README.md
