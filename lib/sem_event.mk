# Area fragment (sem_event): the semaphore, the event, wait-any; their tests.
lib_libursa_la_SOURCES += \
	lib/sem.c \
	lib/event.c \
	lib/wait_any.c \
	lib/wait_any_internal.h
if HAVE_CRITERION
check_PROGRAMS += tests/unit/sem tests/unit/event tests/unit/wait_any
TESTS += tests/unit/sem tests/unit/event tests/unit/wait_any
tests_unit_sem_SOURCES = tests/unit/sem.c
tests_unit_sem_CFLAGS = $(TEST_CFLAGS)
tests_unit_sem_LDADD = $(TEST_LIBS)
tests_unit_event_SOURCES = tests/unit/event.c
tests_unit_event_CFLAGS = $(TEST_CFLAGS)
tests_unit_event_LDADD = $(TEST_LIBS)
tests_unit_wait_any_SOURCES = tests/unit/wait_any.c
tests_unit_wait_any_CFLAGS = $(TEST_CFLAGS)
tests_unit_wait_any_LDADD = $(TEST_LIBS)
check_PROGRAMS += tests/integration/sem_event_any
TESTS += tests/integration/sem_event_any
tests_integration_sem_event_any_SOURCES = tests/integration/sem_event_any.c
tests_integration_sem_event_any_CFLAGS = $(TEST_CFLAGS)
tests_integration_sem_event_any_LDADD = $(TEST_LIBS)
endif
