# Area fragment (pthread shim): libursa-pthread, then its tests.
#
# libursa-pthread.so: pthread_mutex/cond/rwlock (and sem) on ursa, for
# LD_PRELOAD or -lursa-pthread. It carries its own private copy of ursa
# (lib/shim/libursa-static.la, compiled from libursa's own source list), so
# LD_PRELOAD=.../libursa-pthread.so needs nothing else on the library path,
# and its version script exports only the POSIX names. Shared only: a static
# archive would clash with libc.a's definitions of the same names.
noinst_LTLIBRARIES += lib/shim/libursa-static.la
lib_shim_libursa_static_la_SOURCES = $(lib_libursa_la_SOURCES)
lib_shim_libursa_static_la_CFLAGS = $(lib_libursa_la_CFLAGS)
lib_shim_libursa_static_la_LIBADD = kernel/libursa_kernel.la

lib_LTLIBRARIES += lib/shim/libursa-pthread.la
lib_shim_libursa_pthread_la_SOURCES = \
	lib/shim/shim.h \
	lib/shim/core.c \
	lib/shim/mutex.c \
	lib/shim/cond.c \
	lib/shim/rwlock.c \
	lib/shim/sem.c
lib_shim_libursa_pthread_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
lib_shim_libursa_pthread_la_LIBADD = lib/shim/libursa-static.la $(URING_LIBS) $(PTHREAD_LIBS) -ldl
lib_shim_libursa_pthread_la_LDFLAGS = $(AM_LDFLAGS) -shared -version-info 0:0:0 \
	-Wl,-z,now -Wl,--version-script=$(top_srcdir)/lib/shim/libursa-pthread.map
EXTRA_lib_shim_libursa_pthread_la_DEPENDENCIES = lib/shim/libursa-pthread.map
EXTRA_DIST += lib/shim/libursa-pthread.map lib/shim/README.md

if HAVE_CRITERION
SHIM_TESTS = tests/unit/shim_mutex tests/unit/shim_cond tests/unit/shim_rwlock tests/unit/shim_sem \
	tests/unit/shim_tsan
check_PROGRAMS += $(SHIM_TESTS)
TESTS += $(SHIM_TESTS)
# Linked to the shim first, so its pthread_* come before libc's.
SHIM_TEST_LIBS = lib/shim/libursa-pthread.la $(TEST_LIBS)
tests_unit_shim_mutex_SOURCES = tests/unit/shim_mutex.c tests/unit/shim_test.h
tests_unit_shim_mutex_CFLAGS = $(TEST_CFLAGS)
tests_unit_shim_mutex_LDADD = $(SHIM_TEST_LIBS)
tests_unit_shim_cond_SOURCES = tests/unit/shim_cond.c tests/unit/shim_test.h
tests_unit_shim_cond_CFLAGS = $(TEST_CFLAGS)
tests_unit_shim_cond_LDADD = $(SHIM_TEST_LIBS)
tests_unit_shim_rwlock_SOURCES = tests/unit/shim_rwlock.c tests/unit/shim_test.h
tests_unit_shim_rwlock_CFLAGS = $(TEST_CFLAGS)
tests_unit_shim_rwlock_LDADD = $(SHIM_TEST_LIBS)
tests_unit_shim_sem_SOURCES = tests/unit/shim_sem.c tests/unit/shim_test.h
tests_unit_shim_sem_CFLAGS = $(TEST_CFLAGS)
tests_unit_shim_sem_LDADD = $(SHIM_TEST_LIBS)
# Plain C (no Criterion), so it also runs under ThreadSanitizer:
#   make -C <tsan build> check TESTS=tests/unit/shim_tsan
tests_unit_shim_tsan_SOURCES = tests/unit/shim_tsan.c
tests_unit_shim_tsan_LDADD = lib/shim/libursa-pthread.la $(PTHREAD_LIBS) -ldl
# It names none of the shim's symbols (dlsym finds them): keep the shim linked.
tests_unit_shim_tsan_LDFLAGS = -Wl,--no-as-needed
endif

# Real programs under LD_PRELOAD (pigz, zstd -T2, a condvar-heavy program):
# minutes, so not in make check.
shim-real: lib/shim/libursa-pthread.la
	URSA_SHIM=$(abs_top_builddir)/lib/shim/.libs/libursa-pthread.so \
		bash $(top_srcdir)/tests/real/run.sh
# PostgreSQL's server on the shim (issue 8): pgbench with and without it.
shim-postgres: lib/shim/libursa-pthread.la
	URSA_SHIM=$(abs_top_builddir)/lib/shim/.libs/libursa-pthread.so \
		bash $(top_srcdir)/tests/real/postgres.sh
if HAVE_CRITERION
stress: shim-real shim-postgres
endif
EXTRA_DIST += tests/real/run.sh tests/real/gen.py tests/real/condqueue.py tests/real/postgres.sh
