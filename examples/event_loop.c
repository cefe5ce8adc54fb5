/* SPDX-License-Identifier: MIT */
/*
 * examples/event_loop.c — one io_uring waits for a lock and a read together.
 *
 * A worker thread holds `lock`, writes a message into a pipe and unlocks.
 * Meanwhile the event loop has queued, in the same ring, a read of the pipe
 * and an ursa_mutex_lock_async of `lock`; it handles the two completions in
 * whatever order they come, and exits 0 once it has both. Exits 77 (skip)
 * on kernels without the io_uring futex operations (before 6.7).
 *
 * Build: cc event_loop.c $(pkg-config --cflags --libs ursa)
 * (pkg-config's ursa.pc requires liburing: -luring comes with it)
 */
#include <liburing.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <ursa.h>

static ursa_mutex_t lock = URSA_MUTEX_INIT;
static ursa_event_t holding = URSA_EVENT_INIT; /* set once the worker holds lock */
static int pipefd[2];

static void *worker(void *arg)
{
	static const char msg[] = "page 42 is on disk";
	(void)arg;
	ursa_mutex_lock(&lock);
	ursa_event_set(&holding);
	if (write(pipefd[1], msg, sizeof(msg)) != (ssize_t)sizeof(msg))
		perror("write");
	ursa_mutex_unlock(&lock); /* wakes the ring's lock op */
	return NULL;
}

/* The application's read request: its address is the read's user_data. */
struct read_req {
	char buf[64];
	int res;
	bool done;
};

static bool lock_done, lock_ok;

static void have_lock(struct ursa_op *op)
{
	(void)op;
	lock_done = lock_ok = true;
	printf("lock taken in the ring\n");
	ursa_mutex_unlock(&lock); /* the work under the lock would go here */
}

static void lock_failed(struct ursa_op *op)
{
	lock_done = true;
	fprintf(stderr, "lock: %s\n", strerror(-op->res));
}

static void my_completion(struct io_uring_cqe *cqe)
{
	struct read_req *rd = io_uring_cqe_get_data(cqe);
	rd->res = cqe->res;
	rd->done = true;
	if (cqe->res > 0)
		printf("read %d bytes: \"%s\"\n", cqe->res, rd->buf);
}

static int fail(const char *what, int rc)
{
	fprintf(stderr, "%s: %s\n", what, strerror(-rc));
	return 1;
}

int main(void)
{
	struct ursa_features f;
	if (ursa_probe(&f) != 0 || !f.uring_futex) {
		printf("skip: this kernel has no io_uring futex operations (Linux 6.7+)\n");
		return 77;
	}
	struct io_uring ring; /* the application's own ring */
	int rc = io_uring_queue_init(64, &ring, 0);
	if (rc < 0)
		return fail("io_uring_queue_init", rc);
	pthread_t t;
	if (pipe(pipefd) != 0 || pthread_create(&t, NULL, worker, NULL) != 0) {
		perror("pipe/pthread_create");
		return 1;
	}
	ursa_event_wait(&holding);

	/* README: begin start */
	/* I/O: a read, tagged with an application value (top byte zero). */
	struct read_req rd = {.res = 0};
	struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
	io_uring_prep_read(sqe, pipefd[0], rd.buf, sizeof(rd.buf), 0);
	io_uring_sqe_set_data(sqe, &rd);

	/* A lock, in the same ring; give up after 10 s. */
	struct ursa_op op = URSA_OP_INIT;
	struct timespec dl;
	clock_gettime(CLOCK_MONOTONIC, &dl);
	dl.tv_sec += 10;
	ursa_op_set_deadline(&op, CLOCK_MONOTONIC, &dl);
	rc = ursa_mutex_lock_async(&ring, &lock, &op);
	if (rc == 1)
		have_lock(&op);  /* it was free: taken at once, nothing queued */
	else if (rc < 0)
		return fail("ursa_mutex_lock_async", rc); /* -EBUSY: SQ ring full */
	/* rc == 0: in flight; its CQE comes back through the loop */
	/* README: end */

	/* README: begin loop */
	while (!rd.done || !lock_done) {
		io_uring_submit_and_wait(&ring, 1);
		struct io_uring_cqe *cqe;
		unsigned head, n = 0;
		io_uring_for_each_cqe(&ring, head, cqe) {
			struct ursa_op *done;
			n++;
			if (ursa_handle_cqe(&ring, cqe, &done) == 0)
				my_completion(cqe);   /* the application's CQE */
			else if (done && done->res == 0)
				have_lock(done);      /* done holds the lock */
			else if (done)
				lock_failed(done);    /* -ETIMEDOUT, -ECANCELED */
			/* else: ursa's own CQE (a re-armed wait), consumed */
		}
		io_uring_cq_advance(&ring, n);
	}
	/* README: end */

	pthread_join(t, NULL);
	io_uring_queue_exit(&ring);
	return lock_ok && rd.res > 0 && ursa_mutex_destroy(&lock) == 0 ? 0 : 1;
}
