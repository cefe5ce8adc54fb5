# Benchmarks and the buffer-pool demo (programs, never tests).

# bench/ursa-bench: every scenario against every implementation in one run.

noinst_PROGRAMS += bench/ursa-bench
bench_ursa_bench_SOURCES = \
	bench/bench.h \
	bench/adapters.h \
	bench/bench_tmpl.h \
	bench/bench_common.c \
	bench/bench_locks.c \
	bench/bench_wake.c \
	bench/bench_async.c \
	bench/bench_shim.c \
	bench/bench_contention.c \
	bench/contention_tmpl.h \
	bench/absl_adapter.h \
	bench/ursa-bench.c
bench_ursa_bench_CFLAGS = $(AM_CFLAGS) $(URING_CFLAGS)
# pthread-shim runs real programs with LD_PRELOAD of this build's shim
# (env URSA_BENCH_SHIM overrides), so the shim is built before the bench.
bench_ursa_bench_CPPFLAGS = $(AM_CPPFLAGS) \
	-DURSA_BENCH_SHIM='"$(abs_top_builddir)/lib/shim/.libs/libursa-pthread.so"'
if ENABLE_SHIM
EXTRA_bench_ursa_bench_DEPENDENCIES = lib/shim/libursa-pthread.la
endif
bench_ursa_bench_LDADD = lib/libursa.la $(URING_LIBS) $(PTHREAD_LIBS) -lm
if HAVE_NSYNC
bench_ursa_bench_LDADD += $(NSYNC_LIBS)
endif
if HAVE_CK
bench_ursa_bench_CFLAGS += $(CK_CFLAGS)
bench_ursa_bench_LDADD += $(CK_LIBS)
endif
# abseil's absl::Mutex (contention scenario) through a small C++ adapter;
# with it the bench links with the C++ driver.
if HAVE_ABSL
bench_ursa_bench_SOURCES += bench/absl_adapter.cc
bench_ursa_bench_CXXFLAGS = $(AM_CXXFLAGS) $(ABSL_CFLAGS)
bench_ursa_bench_LDADD += $(ABSL_LIBS)
endif
# jemalloc is the allocator of the bench programs when configure found it.
if HAVE_JEMALLOC
bench_ursa_bench_CFLAGS += $(JEMALLOC_CFLAGS)
bench_ursa_bench_LDADD += $(JEMALLOC_LIBS)
endif
# The tables of bench/README.md are made from CSVs by these (bench/README.md says how).
EXTRA_DIST += bench/README.md bench/contention_md.py bench/contention_runs.py

# `make bench`: build, then a quick run of every scenario (under a minute),
# table on stdout, CSV in bench/out/quick.csv.
# (bench/ is also a directory here: bench-force makes the rule always run;
# a .PHONY line would clash with the conditional one in tests/.)
bench: bench/ursa-bench$(EXEEXT) bench-force
	$(MKDIR_P) bench/out
	bench/ursa-bench --quick --csv bench/out/quick.csv
bench-force:
CLEANFILES += bench/out/quick.csv

# `make bench-contention`: the contention matrix: every workload,
# critical section, thread count and implementation in alternating rounds;
# table on stdout, CSV and one PNG per workload in bench/out/. About 15 min;
# BENCH_ARGS=--quick for a few minutes (e.g. BENCH_ARGS='--quick --workloads mutex').
bench-contention: bench/ursa-bench$(EXEEXT) bench-force
	$(MKDIR_P) bench/out
	bench/ursa-bench --scenario contention $(BENCH_ARGS) --csv bench/out/contention.csv

# bench/ursa-wakelat: wake-to-completion latency of one cross-thread wake,
# a blocked thread against ring waits (private and URSA_SHARED; plain,
# COOP_TASKRUN, DEFER_TASKRUN rings); p50/p90/p99/max.
noinst_PROGRAMS += bench/ursa-wakelat
bench_ursa_wakelat_LDADD = lib/libursa.la $(URING_LIBS) $(PTHREAD_LIBS)
