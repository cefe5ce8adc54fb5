# Area fragment (waitq): library sources, then its tests.
lib_libursa_la_SOURCES += lib/waitq.c lib/waitq_internal.h
# Batched futex wakes (syscalls or FUTEX_WAKE SQEs): kernel/ code, compiled
# into the library itself.
lib_libursa_la_SOURCES += kernel/wake.c kernel/wake.h
if HAVE_CRITERION
check_PROGRAMS += tests/unit/waitq tests/integration/waitq_groupcommit
TESTS += tests/unit/waitq tests/integration/waitq_groupcommit
tests_unit_waitq_SOURCES = tests/unit/waitq.c
tests_unit_waitq_CFLAGS = $(TEST_CFLAGS)
tests_unit_waitq_LDADD = $(TEST_LIBS)
tests_integration_waitq_groupcommit_SOURCES = tests/integration/waitq_groupcommit.c
tests_integration_waitq_groupcommit_CFLAGS = $(TEST_CFLAGS)
tests_integration_waitq_groupcommit_LDADD = $(TEST_LIBS)
endif
