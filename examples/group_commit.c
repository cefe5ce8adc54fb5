/* SPDX-License-Identifier: MIT */
/*
 * examples/group_commit.c — a write-ahead log's group commit on ursa_waitq.
 *
 * Committer threads append a record (taking the next LSN) and wait until
 * the log is durable up to their LSN. One flusher writes and syncs whatever
 * has been appended, then wakes, with one ursa_waitq_wake_upto, every
 * committer whose LSN is now durable — through an io_uring when it has
 * one, so the whole batch of wakes is one kernel entry. Each committer is a
 * slot of the queue (PostgreSQL's PGPROC number, in a database).
 *
 * Build: cc -pthread group_commit.c $(pkg-config --cflags --libs ursa)
 */
#include <liburing.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <ursa.h>

enum { COMMITTERS = 8, COMMITS = 200 };

static ursa_mutex_t log_lock = URSA_MUTEX_INIT; /* orders appends */
static uint64_t appended;                        /* last LSN appended (under log_lock) */
static uint64_t durable;                         /* last LSN on disk (atomic) */
static ursa_event_t work;                        /* auto-reset: something to flush */
static bool stop;                                /* atomic: committers are done */
static ursa_waitq_t *q;                          /* one slot per committer */
static int log_fd;

/* README: begin commit */
/* A committer: append, then wait until the log is durable up to our LSN. */
static int commit(uint32_t slot, const char *rec)
{
	ursa_mutex_lock(&log_lock);
	uint64_t lsn = ++appended;           /* the record would be copied here */
	ursa_mutex_unlock(&log_lock);
	(void)rec;
	ursa_event_set(&work);               /* the flusher has work */

	int rc = ursa_waitq_prepare(q, slot, lsn);   /* enqueue with key = LSN */
	if (rc)
		return rc;
	if (__atomic_load_n(&durable, __ATOMIC_ACQUIRE) >= lsn) {
		rc = ursa_waitq_cancel(q, slot);     /* flushed meanwhile */
		return rc < 0 ? rc : 0;              /* 1: a wake took it first */
	}
	return ursa_waitq_wait(q, slot, CLOCK_MONOTONIC, NULL);  /* 0: durable */
}

/* The flusher: write out what is appended, then wake every committer
 * whose LSN is durable now, in one call. */
static void flush_once(struct io_uring *ring)
{
	ursa_mutex_lock(&log_lock);
	uint64_t upto = appended;
	ursa_mutex_unlock(&log_lock);
	if (upto == __atomic_load_n(&durable, __ATOMIC_RELAXED))
		return;
	fdatasync(log_fd);                   /* write(2) the records, then sync */
	__atomic_store_n(&durable, upto, __ATOMIC_RELEASE);
	ursa_waitq_wake_upto(q, upto, ring); /* all slots with key <= upto */
}
/* README: end */

static unsigned long flushes, error_cqes;

static void *flusher(void *arg)
{
	struct io_uring *ring = arg;
	for (;;) {
		ursa_event_wait(&work);
		uint64_t before = __atomic_load_n(&durable, __ATOMIC_RELAXED);
		flush_once(ring);
		if (__atomic_load_n(&durable, __ATOMIC_RELAXED) != before)
			flushes++;
		/* A batched wake posts no CQE when it succeeds; an error CQE
		 * is ursa's, and ursa_handle_cqe consumes it. */
		struct io_uring_cqe *cqe;
		while (ring && io_uring_peek_cqe(ring, &cqe) == 0) {
			struct ursa_op *done;
			if (ursa_handle_cqe(ring, cqe, &done) == 1)
				error_cqes++;
			io_uring_cqe_seen(ring, cqe);
		}
		if (__atomic_load_n(&stop, __ATOMIC_ACQUIRE))
			return NULL;
	}
}

static int failures;

static void *committer(void *arg)
{
	uint32_t slot = (uint32_t)(uintptr_t)arg;
	char rec[32];
	for (int i = 0; i < COMMITS; i++) {
		snprintf(rec, sizeof(rec), "slot %u txn %d", slot, i);
		int rc = commit(slot, rec);
		if (rc != 0) {
			fprintf(stderr, "commit: %d\n", rc);
			__atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);
		}
	}
	return NULL;
}

int main(void)
{
	char path[] = "/tmp/ursa-group-commit.XXXXXX";
	log_fd = mkstemp(path);
	if (log_fd < 0) {
		perror("mkstemp");
		return 1;
	}
	unlink(path);
	ursa_event_init(&work, URSA_EVENT_AUTO_RESET);
	q = malloc(ursa_waitq_size(COMMITTERS)); /* malloc is 16-byte aligned */
	if (!q || ursa_waitq_init(q, COMMITTERS, 0) != 0)
		return 1;

	/* The flusher batches its wakes through a ring when it can have one;
	 * without one (io_uring disabled) the same call makes syscalls. */
	struct io_uring ring, *r = &ring;
	if (io_uring_queue_init(8, &ring, 0) < 0)
		r = NULL;

	pthread_t fl, t[COMMITTERS];
	pthread_create(&fl, NULL, flusher, r);
	for (uint32_t i = 0; i < COMMITTERS; i++)
		pthread_create(&t[i], NULL, committer, (void *)(uintptr_t)i);
	for (int i = 0; i < COMMITTERS; i++)
		pthread_join(t[i], NULL);
	__atomic_store_n(&stop, true, __ATOMIC_RELEASE);
	ursa_event_set(&work);
	pthread_join(fl, NULL);

	printf("%d commits in %lu flushes (%s wakes, %lu error CQEs), durable up to %llu\n",
	       COMMITTERS * COMMITS, flushes, r ? "ring-batched" : "syscall", error_cqes,
	       (unsigned long long)durable);
	if (r)
		io_uring_queue_exit(r);
	free(q);
	close(log_fd);
	return failures == 0 && durable == (uint64_t)COMMITTERS * COMMITS ? 0 : 1;
}
