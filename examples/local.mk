# examples/: the README's programs as complete files. make check builds
# them the way a user of an installed ursa does -- the public headers
# (source and generated) and libursa, no -I lib/ or kernel/, no config.h --
# runs them, builds the installed copies again with pkg-config alone
# against a temporary `make install DESTDIR=`, and checks that the README
# quotes them exactly.
check_PROGRAMS += examples/mutex examples/event_loop examples/group_commit
# Installed as documentation too (Debian: /usr/share/doc/ursa/examples).
examplesdir = $(docdir)/examples
dist_examples_DATA = examples/mutex.c examples/event_loop.c examples/group_commit.c
EXAMPLE_CPPFLAGS = -I$(top_srcdir)/include -I$(top_builddir)/include
EXAMPLE_CFLAGS = $(WARN_CFLAGS) $(SAN_CFLAGS) $(PTHREAD_CFLAGS) $(URING_CFLAGS)
EXAMPLE_LDADD = lib/libursa.la $(URING_LIBS) $(PTHREAD_LIBS)
examples_mutex_CPPFLAGS = $(EXAMPLE_CPPFLAGS)
examples_mutex_CFLAGS = $(EXAMPLE_CFLAGS)
examples_mutex_LDADD = $(EXAMPLE_LDADD)
examples_event_loop_CPPFLAGS = $(EXAMPLE_CPPFLAGS)
examples_event_loop_CFLAGS = $(EXAMPLE_CFLAGS)
examples_event_loop_LDADD = $(EXAMPLE_LDADD)
examples_group_commit_CPPFLAGS = $(EXAMPLE_CPPFLAGS)
examples_group_commit_CFLAGS = $(EXAMPLE_CFLAGS)
examples_group_commit_LDADD = $(EXAMPLE_LDADD)
TESTS += examples/run.check examples/install.check examples/readme.check
EXTRA_DIST += examples/run.check examples/install.check examples/readme.check
