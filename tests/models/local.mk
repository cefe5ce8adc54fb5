# Spin models of the word protocols (skips, exit 77, without spin).
TESTS += tests/models/run.sh
EXTRA_DIST += tests/models/run.sh \
	tests/models/cond.pml \
	tests/models/event.pml \
	tests/models/futex.pml \
	tests/models/mutex.pml \
	tests/models/rwlock.pml \
	tests/models/latch.pml \
	tests/models/sem.pml \
	tests/models/waitq.pml
# The larger bounds (minutes, gigabytes): not part of make check.
check-models-deep:
	SPIN='$(SPIN)' $(SHELL) '$(abs_top_srcdir)/tests/models/run.sh' --deep
