include_HEADERS = include/ursa.h
ursaincdir = $(includedir)/ursa
ursainc_HEADERS = \
	include/ursa/common.h \
	include/ursa/mutex.h \
	include/ursa/rwlock.h \
	include/ursa/cond.h \
	include/ursa/sem.h \
	include/ursa/event.h \
	include/ursa/latch.h \
	include/ursa/waitq.h \
	include/ursa/wait_any.h \
	include/ursa/async.h \
	include/ursa/probe.h
