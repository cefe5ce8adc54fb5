# Area fragment (bufpool): bench/ursa-bufpool, the buffer-pool demo (the
# main job; scripts/demo.sh builds and runs it). A program, never a test.
noinst_PROGRAMS += bench/ursa-bufpool
bench_ursa_bufpool_SOURCES = \
	bench/bufpool.h \
	bench/bufpool_locks.h \
	bench/bufpool_pool.h \
	bench/bufpool_threads.h \
	bench/bufpool.c \
	bench/bufpool_common.c \
	bench/bufpool_threads_pthread.c \
	bench/bufpool_threads_ursa.c \
	bench/bufpool_threads_aio.c \
	bench/bufpool_ring.c
bench_ursa_bufpool_CFLAGS = $(AM_CFLAGS) $(URING_CFLAGS)
# -static: link the uninstalled libursa statically (no libtool wrapper
# script; ursa's calls are direct calls, like glibc's are to libc).
bench_ursa_bufpool_LDFLAGS = $(AM_LDFLAGS) -static
bench_ursa_bufpool_LDADD = lib/libursa.la $(URING_LIBS) $(PTHREAD_LIBS) -lm
# jemalloc is the allocator of the demo when configure found it.
if HAVE_JEMALLOC
bench_ursa_bufpool_CFLAGS += $(JEMALLOC_CFLAGS)
bench_ursa_bufpool_LDADD += $(JEMALLOC_LIBS)
endif
EXTRA_DIST += bench/BUFPOOL.md scripts/demo.sh bench/bufpool-equal.png bench/bufpool-sweep.png \
	bench/bufpool-contended.png bench/ursa-commit.png

# bench/ursa-commit: group commit across processes (the directed-wakeup
# case): sem, condvar, waitq, waitq-ring. A program, never a test.
noinst_PROGRAMS += bench/ursa-commit
bench_ursa_commit_SOURCES = bench/ursa-commit.c
bench_ursa_commit_CFLAGS = $(AM_CFLAGS) $(URING_CFLAGS)
bench_ursa_commit_LDFLAGS = $(AM_LDFLAGS) -static
bench_ursa_commit_LDADD = lib/libursa.la $(URING_LIBS) $(PTHREAD_LIBS) -lm
