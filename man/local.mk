# man/: a page per public function or family (man3; every other name of a
# family is a one-line .so alias), and the ursa(7) overview. Installed by
# make install; man/check.check (in make check) keeps them in step with the
# headers, lib/ursa.map and this list.
dist_man3_MANS = \
	man/ursa_cond_broadcast.3 \
	man/ursa_cond_destroy.3 \
	man/ursa_cond_init.3 \
	man/ursa_cond_signal.3 \
	man/ursa_cond_timedwait.3 \
	man/ursa_cond_wait.3 \
	man/ursa_cond_wait_async.3 \
	man/ursa_event_destroy.3 \
	man/ursa_event_init.3 \
	man/ursa_event_reset.3 \
	man/ursa_event_set.3 \
	man/ursa_event_timedwait.3 \
	man/ursa_event_trywait.3 \
	man/ursa_event_wait.3 \
	man/ursa_event_wait_async.3 \
	man/ursa_handle_cqe.3 \
	man/ursa_latch_count_down.3 \
	man/ursa_latch_destroy.3 \
	man/ursa_latch_init.3 \
	man/ursa_latch_timedwait.3 \
	man/ursa_latch_trywait.3 \
	man/ursa_latch_wait.3 \
	man/ursa_latch_wait_async.3 \
	man/ursa_mutex_destroy.3 \
	man/ursa_mutex_init.3 \
	man/ursa_mutex_lock.3 \
	man/ursa_mutex_lock_async.3 \
	man/ursa_mutex_timedlock.3 \
	man/ursa_mutex_trylock.3 \
	man/ursa_mutex_unlock.3 \
	man/ursa_op_cancel.3 \
	man/ursa_op_set_deadline.3 \
	man/ursa_probe.3 \
	man/ursa_rwlock_destroy.3 \
	man/ursa_rwlock_init.3 \
	man/ursa_rwlock_rdlock.3 \
	man/ursa_rwlock_rdlock_async.3 \
	man/ursa_rwlock_rdunlock.3 \
	man/ursa_rwlock_timedrdlock.3 \
	man/ursa_rwlock_timedwrlock.3 \
	man/ursa_rwlock_tryrdlock.3 \
	man/ursa_rwlock_trywrlock.3 \
	man/ursa_rwlock_wrlock.3 \
	man/ursa_rwlock_wrlock_async.3 \
	man/ursa_rwlock_wrunlock.3 \
	man/ursa_sem_destroy.3 \
	man/ursa_sem_init.3 \
	man/ursa_sem_post.3 \
	man/ursa_sem_timedwait.3 \
	man/ursa_sem_trywait.3 \
	man/ursa_sem_value.3 \
	man/ursa_sem_wait.3 \
	man/ursa_sem_wait_async.3 \
	man/ursa_version.3 \
	man/ursa_wait_any.3 \
	man/ursa_wait_any_async.3 \
	man/ursa_waitid_async.3 \
	man/ursa_waitq_cancel.3 \
	man/ursa_waitq_init.3 \
	man/ursa_waitq_prepare.3 \
	man/ursa_waitq_size.3 \
	man/ursa_waitq_wait.3 \
	man/ursa_waitq_wait_async.3 \
	man/ursa_waitq_wake.3 \
	man/ursa_waitq_wake_slot.3 \
	man/ursa_waitq_wake_upto.3
dist_man7_MANS = man/ursa.7
TESTS += man/check.check
EXTRA_DIST += man/check.check
