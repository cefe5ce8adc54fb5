/* SPDX-License-Identifier: MIT */
/*
 * tests/stress/stress.c — `make stress`: every primitive at once, shared
 * between processes, threads and io_uring waiters, for a fixed number of
 * operations, with invariant checks.
 *
 * All objects are URSA_SHARED in one MAP_SHARED block. P worker processes
 * (fork) each run T blocking threads and, where the kernel has the io_uring
 * futex operations, one ring thread that does the same kinds of operation
 * through the async API (with deadlines and cancels mixed in). Each
 * operation is one of:
 *   mutex    lock/trylock/timedlock; at most one inside; a plain counter
 *   rwlock   read (a == b, no writer inside) or write (alone; a++, b++)
 *   sem      a pool of SEM_UNITS units: wait, use (at most SEM_UNITS in
 *            use), post
 *   cond     a pool of COND_TOKENS tokens under a mutex + condvar
 *   event    an auto-reset event as a token: at most one inside
 *   waitq    wait for a shared "flushed" counter to reach a target
 *            (prepare / re-check / wait or cancel); any thread may flush
 *            (counter + 1, then ursa_waitq_wake_upto); a wait that returns
 *            0 must see its target reached
 * Violations are counted (and the first few printed), not fatal, so the
 * run reports how many. A watchdog (the parent) declares a hang when no
 * operation completes for HANG_S seconds, prints the objects' words and
 * kills the workers.
 *
 * Usage: stress [-n TOTAL_OPS] [-p PROCS] [-t THREADS] [-R] [-q]
 *   -n  operations in total, all workers together (default 100000000)
 *   -p  worker processes (default 2); -t blocking threads each (default 3)
 *   -R  no ring threads
 * Prints operations done and violations; exit 0 only if violations == 0,
 * no hang, and every worker finished its share.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <liburing.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <ursa.h>

#include "tests/integration/common.h"

#define SEM_UNITS 3
#define COND_TOKENS 2
#define MAX_SLOTS 64
#define HANG_S 60

struct shm {
	ursa_mutex_t m;
	atomic_int m_inside;
	long m_count; /* under m */

	ursa_rwlock_t l;
	atomic_int rd_inside, wr_inside;
	long a, b; /* under l (write) */

	ursa_sem_t s;
	atomic_int s_inuse;

	ursa_mutex_t cm;
	ursa_cond_t cv;
	int tokens; /* under cm */
	atomic_int c_active;

	ursa_event_t e; /* auto-reset token */
	atomic_int e_inside;

	atomic_long flushed;

	atomic_long ops, violations, timeouts, cancels, ring_ops;
	atomic_int workers_done;
	atomic_int stop;
	_Alignas(8) unsigned char q[32 + 24 * MAX_SLOTS];
};

static struct shm *S;
static long per_worker;
static bool use_ring = true, quiet;
static int nprocs = 2, nthreads = 3;

#define Q ((ursa_waitq_t *)S->q)
/* Deadlines are on CLOCK_MONOTONIC. */
#define after_us(us) t_after_us(CLOCK_MONOTONIC, us)

static void violation(const char *what, long a, long b)
{
	long n = atomic_fetch_add(&S->violations, 1);
	if (n < 10)
		fprintf(stderr, "stress: VIOLATION %s (%ld, %ld)\n", what, a, b);
}

static void check(int r, const char *what)
{
	if (r != 0)
		violation(what, r, 0);
}

/* ---- critical sections (shared by blocking and ring workers) ----------- */

static void mutex_cs(uint32_t *seed)
{
	int in = atomic_fetch_add(&S->m_inside, 1);
	if (in != 0)
		violation("mutex: two holders", in, 0);
	S->m_count++;
	if (t_rnd(seed) % 16 == 0)
		sched_yield();
	atomic_fetch_sub(&S->m_inside, 1);
}

static void rw_cs(bool wr, uint32_t *seed)
{
	if (wr) {
		int w = atomic_fetch_add(&S->wr_inside, 1), r = atomic_load(&S->rd_inside);
		if (w != 0 || r != 0)
			violation("rwlock: writer not alone", w, r);
		S->a++;
		if (t_rnd(seed) % 16 == 0)
			sched_yield();
		S->b++;
		atomic_fetch_sub(&S->wr_inside, 1);
	} else {
		atomic_fetch_add(&S->rd_inside, 1);
		int w = atomic_load(&S->wr_inside);
		long a = S->a, b = S->b;
		if (w != 0 || a != b)
			violation("rwlock: reader saw a writer", w, a - b);
		atomic_fetch_sub(&S->rd_inside, 1);
	}
}

static void sem_cs(void)
{
	int u = atomic_fetch_add(&S->s_inuse, 1) + 1;
	if (u > SEM_UNITS)
		violation("sem: more units in use than exist", u, SEM_UNITS);
	atomic_fetch_sub(&S->s_inuse, 1);
}

static void cond_cs(void)
{
	int c = atomic_fetch_add(&S->c_active, 1) + 1;
	if (c > COND_TOKENS)
		violation("cond: more tokens out than exist", c, COND_TOKENS);
	atomic_fetch_sub(&S->c_active, 1);
}

static void event_cs(uint32_t *seed)
{
	int in = atomic_fetch_add(&S->e_inside, 1);
	if (in != 0)
		violation("event: auto-reset released two", in, 0);
	if (t_rnd(seed) % 16 == 0)
		sched_yield();
	atomic_fetch_sub(&S->e_inside, 1);
	check(ursa_event_set(&S->e), "event set");
}

static void cond_release(void)
{
	check(ursa_mutex_lock(&S->cm), "cond: lock");
	S->tokens++;
	if (S->tokens > COND_TOKENS)
		violation("cond: token count", S->tokens, COND_TOKENS);
	check(ursa_cond_signal(&S->cv), "cond: signal");
	check(ursa_mutex_unlock(&S->cm), "cond: unlock");
}

static void flush_some(void)
{
	atomic_fetch_add(&S->flushed, 1);
	int r = ursa_waitq_wake_upto(Q, (uint64_t)atomic_load(&S->flushed), NULL);
	if (r < 0)
		violation("waitq: wake_upto", r, 0);
}

/* ---- blocking operations ----------------------------------------------- */

/* A wait on obj through wait(obj, deadline or NULL): timed, with a
 * deadline 20-120 us away (an expiry is counted and took nothing: false),
 * or not. Any other error is a violation. */
static bool take(uint32_t *seed, bool timed, int (*wait)(void *, const struct timespec *),
		 void *obj, const char *what)
{
	int r;
	if (timed) {
		struct timespec ts = after_us(20 + t_rnd(seed) % 100);
		r = wait(obj, &ts);
		if (r == -ETIMEDOUT) {
			atomic_fetch_add(&S->timeouts, 1);
			return false;
		}
	} else {
		r = wait(obj, NULL);
	}
	check(r, what);
	return true;
}

static int mutex_wait(void *o, const struct timespec *ts)
{
	return ts ? ursa_mutex_timedlock(o, CLOCK_MONOTONIC, ts) : ursa_mutex_lock(o);
}
static int rd_wait(void *o, const struct timespec *ts)
{
	return ts ? ursa_rwlock_timedrdlock(o, CLOCK_MONOTONIC, ts) : ursa_rwlock_rdlock(o);
}
static int wr_wait(void *o, const struct timespec *ts)
{
	return ts ? ursa_rwlock_timedwrlock(o, CLOCK_MONOTONIC, ts) : ursa_rwlock_wrlock(o);
}
static int sem_take(void *o, const struct timespec *ts)
{
	return ts ? ursa_sem_timedwait(o, CLOCK_MONOTONIC, ts) : ursa_sem_wait(o);
}
static int event_wait(void *o, const struct timespec *ts)
{
	return ts ? ursa_event_timedwait(o, CLOCK_MONOTONIC, ts) : ursa_event_wait(o);
}

static void op_mutex(uint32_t *seed)
{
	uint32_t k = t_rnd(seed) % 8;
	if (k == 0) {
		int r;
		while ((r = ursa_mutex_trylock(&S->m)) == -EBUSY)
			sched_yield();
		check(r, "mutex lock");
	} else if (!take(seed, k == 1, mutex_wait, &S->m, "mutex lock")) {
		return;
	}
	mutex_cs(seed);
	check(ursa_mutex_unlock(&S->m), "mutex unlock");
}

static void op_rwlock(uint32_t *seed)
{
	bool wr = t_rnd(seed) % 4 == 0;
	if (!take(seed, t_rnd(seed) % 8 == 0, wr ? wr_wait : rd_wait, &S->l, "rwlock lock"))
		return;
	rw_cs(wr, seed);
	check(wr ? ursa_rwlock_wrunlock(&S->l) : ursa_rwlock_rdunlock(&S->l), "rwlock unlock");
}

static void op_sem(uint32_t *seed)
{
	if (!take(seed, t_rnd(seed) % 8 == 0, sem_take, &S->s, "sem wait"))
		return;
	sem_cs();
	check(ursa_sem_post(&S->s), "sem post");
}

static void op_cond(uint32_t *seed)
{
	check(ursa_mutex_lock(&S->cm), "cond: lock");
	while (S->tokens == 0) {
		int r;
		if (t_rnd(seed) % 4 == 0) {
			struct timespec ts = after_us(50 + t_rnd(seed) % 200);
			r = ursa_cond_timedwait(&S->cv, &S->cm, CLOCK_MONOTONIC, &ts);
			if (r == -ETIMEDOUT) {
				atomic_fetch_add(&S->timeouts, 1);
				r = 0;
			}
		} else {
			r = ursa_cond_wait(&S->cv, &S->cm);
		}
		check(r, "cond wait");
	}
	S->tokens--;
	check(ursa_mutex_unlock(&S->cm), "cond: unlock");
	cond_cs();
	cond_release();
}

static void op_event(uint32_t *seed)
{
	if (take(seed, t_rnd(seed) % 8 == 0, event_wait, &S->e, "event wait"))
		event_cs(seed);
}

static void op_waitq(uint32_t slot, uint32_t *seed)
{
	if (t_rnd(seed) % 3 == 0) {
		flush_some();
		return;
	}
	long target = atomic_load(&S->flushed) + 1 + t_rnd(seed) % 2;
	int r = ursa_waitq_prepare(Q, slot, (uint64_t)target);
	if (r != 0) {
		violation("waitq: prepare", r, slot);
		return;
	}
	if (atomic_load(&S->flushed) >= target) {
		r = ursa_waitq_cancel(Q, slot);
		if (r != 0 && r != 1)
			violation("waitq: cancel", r, slot);
		return;
	}
	/* Bounded: the flushers are the other workers, who may be done. */
	struct timespec ts = after_us(2000);
	r = ursa_waitq_wait(Q, slot, CLOCK_MONOTONIC, &ts);
	if (r == 0) {
		long f = atomic_load(&S->flushed);
		if (f < target)
			violation("waitq: woken before its key was reached", f, target);
	} else if (r == -ETIMEDOUT) {
		atomic_fetch_add(&S->timeouts, 1);
	} else {
		violation("waitq: wait", r, slot);
	}
}

static void one_op(uint32_t slot, uint32_t *seed)
{
	uint32_t k = t_rnd(seed) % 100;
	if (k < 30)
		op_mutex(seed);
	else if (k < 55)
		op_rwlock(seed);
	else if (k < 70)
		op_sem(seed);
	else if (k < 80)
		op_cond(seed);
	else if (k < 90)
		op_event(seed);
	else
		op_waitq(slot, seed);
}

/* ---- ring operations ------------------------------------------------------ */

/* Run an op to completion on r (every CQE on r is ursa's). */
static int ring_finish(struct io_uring *r, struct ursa_op *op, int started, bool cancel)
{
	if (started == 1)
		return op->res;
	if (started != 0) {
		violation("ring: starter", started, 0);
		return started;
	}
	if (cancel) {
		io_uring_submit(r);
		if (ursa_op_cancel(r, op) != 0)
			violation("ring: cancel", 0, 0);
	}
	for (;;) {
		struct io_uring_cqe *cqe;
		int rc = io_uring_submit_and_wait(r, 1);
		if (rc < 0 && rc != -EINTR) {
			violation("ring: submit_and_wait", rc, 0);
			return rc;
		}
		bool finished = false;
		while (io_uring_peek_cqe(r, &cqe) == 0) {
			struct ursa_op *done = NULL;
			if (ursa_handle_cqe(r, cqe, &done) != 1)
				violation("ring: a CQE not ursa's", (long)cqe->user_data, cqe->res);
			io_uring_cqe_seen(r, cqe);
			if (done) {
				if (done != op || finished)
					violation("ring: op finished twice or unknown op", 0, 0);
				finished = true;
			}
		}
		if (finished)
			return op->res;
	}
}

/* Plain, with a short deadline, or cancelled at once. Returns op->res and
 * checks it is one the variant allows. */
static int ring_op(struct io_uring *r, uint32_t *seed, int (*start)(struct io_uring *, void *,
								 struct ursa_op *),
		   void *obj)
{
	struct ursa_op op;
	memset(&op, 0, sizeof(op));
	uint32_t k = t_rnd(seed) % 8;
	if (k == 0) {
		struct timespec ts = after_us(20 + t_rnd(seed) % 200);
		ursa_op_set_deadline(&op, CLOCK_MONOTONIC, &ts);
	}
	int res = ring_finish(r, &op, start(r, obj, &op), k == 1);
	atomic_fetch_add(&S->ring_ops, 1);
	if (res == -ETIMEDOUT && k == 0)
		atomic_fetch_add(&S->timeouts, 1);
	else if (res == -ECANCELED && k == 1)
		atomic_fetch_add(&S->cancels, 1);
	else if (res != 0)
		violation("ring: op result", res, k);
	return res;
}

static int st_mutex(struct io_uring *r, void *o, struct ursa_op *op)
{
	return ursa_mutex_lock_async(r, o, op);
}
static int st_rd(struct io_uring *r, void *o, struct ursa_op *op)
{
	return ursa_rwlock_rdlock_async(r, o, op);
}
static int st_wr(struct io_uring *r, void *o, struct ursa_op *op)
{
	return ursa_rwlock_wrlock_async(r, o, op);
}
static int st_sem(struct io_uring *r, void *o, struct ursa_op *op)
{
	return ursa_sem_wait_async(r, o, op);
}
static int st_event(struct io_uring *r, void *o, struct ursa_op *op)
{
	return ursa_event_wait_async(r, o, op);
}

static void ring_one_op(struct io_uring *r, uint32_t slot, uint32_t *seed)
{
	uint32_t k = t_rnd(seed) % 100;
	if (k < 30) {
		if (ring_op(r, seed, st_mutex, &S->m) == 0) {
			mutex_cs(seed);
			check(ursa_mutex_unlock(&S->m), "mutex unlock");
		}
	} else if (k < 55) {
		bool wr = t_rnd(seed) % 4 == 0;
		if (ring_op(r, seed, wr ? st_wr : st_rd, &S->l) == 0) {
			rw_cs(wr, seed);
			check(wr ? ursa_rwlock_wrunlock(&S->l) : ursa_rwlock_rdunlock(&S->l),
			      "rwlock unlock");
		}
	} else if (k < 70) {
		if (ring_op(r, seed, st_sem, &S->s) == 0) {
			sem_cs();
			check(ursa_sem_post(&S->s), "sem post");
		}
	} else if (k < 80) {
		/* cond through the ring: lock cm in the ring, wait in the ring
		 * (the op finishes holding cm, whatever its result). */
		while (ring_op(r, seed, st_mutex, &S->cm) != 0)
			;
		while (S->tokens == 0) {
			struct ursa_op op;
			memset(&op, 0, sizeof(op));
			int res = ring_finish(r, &op, ursa_cond_wait_async(r, &S->cv, &S->cm, &op),
					      t_rnd(seed) % 8 == 0);
			atomic_fetch_add(&S->ring_ops, 1);
			if (res != 0 && res != -ECANCELED)
				violation("ring: cond_wait_async", res, 0);
			if (ursa_mutex_trylock(&S->cm) != -EBUSY)
				violation("ring: cond op finished without the mutex", 0, 0);
		}
		S->tokens--;
		check(ursa_mutex_unlock(&S->cm), "cond: unlock");
		cond_cs();
		cond_release();
	} else if (k < 90) {
		if (ring_op(r, seed, st_event, &S->e) == 0)
			event_cs(seed);
	} else {
		op_waitq(slot, seed); /* the ring thread's own slot, blocking */
	}
}

/* ---- workers, watchdog ---------------------------------------------------- */

struct wargs {
	uint32_t slot;
	bool ring;
};

static void *worker(void *arg)
{
	struct wargs *w = arg;
	uint32_t seed = 0x9e3779b9u * (w->slot + 1) ^ (uint32_t)getpid();
	struct io_uring r;
	if (w->ring && io_uring_queue_init(16, &r, 0) != 0) {
		violation("ring: io_uring_queue_init", 0, 0);
		w->ring = false;
	}
	for (long i = 0; i < per_worker && !atomic_load(&S->stop); i++) {
		if (w->ring)
			ring_one_op(&r, w->slot, &seed);
		else
			one_op(w->slot, &seed);
		/* Every worker flushes now and then, so that waitq waiters are
		 * not left waiting for the few that happen to pick waitq ops. */
		if (t_rnd(&seed) % 8 == 0)
			flush_some();
		atomic_fetch_add_explicit(&S->ops, 1, memory_order_relaxed);
	}
	if (w->ring) {
		/* Late auxiliary CQEs (timeouts, cancels) are ursa's and finish
		 * nothing. */
		struct io_uring_cqe *cqe;
		struct __kernel_timespec ts = {0, 5 * 1000 * 1000};
		io_uring_submit(&r);
		while (io_uring_wait_cqe_timeout(&r, &cqe, &ts) == 0) {
			struct ursa_op *done = NULL;
			if (ursa_handle_cqe(&r, cqe, &done) != 1 || done)
				violation("ring: stray CQE at the end", 0, 0);
			io_uring_cqe_seen(&r, cqe);
		}
		io_uring_queue_exit(&r);
	}
	atomic_fetch_add(&S->workers_done, 1);
	return NULL;
}

static void process_main(int p, bool ring)
{
	int n = nthreads + (ring ? 1 : 0);
	pthread_t tids[MAX_SLOTS];
	struct wargs args[MAX_SLOTS];
	for (int i = 0; i < n; i++) {
		args[i].slot = (uint32_t)(p * (nthreads + 1) + i);
		args[i].ring = ring && i == nthreads;
		if (pthread_create(&tids[i], NULL, worker, &args[i]) != 0) {
			violation("pthread_create", p, i);
			_exit(3);
		}
	}
	for (int i = 0; i < n; i++)
		pthread_join(tids[i], NULL);
	_exit(0);
}

static void dump_words(void)
{
	fprintf(stderr,
		"stress: words: mutex %#x, rwlock %#x/%#x, sem %u/%#x, cond-mutex %#x, cond "
		"%#x/%#x, event %#x, tokens %d, flushed %ld\n",
		S->m.__word, S->l.__state, S->l.__notify, S->s.__value, S->s.__waiters,
		S->cm.__word, S->cv.__seq, S->cv.__waiters, S->e.__word, S->tokens,
		(long)atomic_load(&S->flushed));
}

int main(int argc, char **argv)
{
	long total = 100000000L;
	int opt;
	while ((opt = getopt(argc, argv, "n:p:t:Rq")) != -1) {
		switch (opt) {
		case 'n':
			total = atol(optarg);
			break;
		case 'p':
			nprocs = atoi(optarg);
			break;
		case 't':
			nthreads = atoi(optarg);
			break;
		case 'R':
			use_ring = false;
			break;
		case 'q':
			quiet = true;
			break;
		default:
			fprintf(stderr, "usage: %s [-n TOTAL_OPS] [-p PROCS] [-t THREADS] [-R] [-q]\n",
				argv[0]);
			return 64;
		}
	}
	if (nprocs < 1 || nthreads < 1 || nprocs * (nthreads + 1) > MAX_SLOTS || total < 1) {
		fprintf(stderr, "stress: bad sizes\n");
		return 64;
	}
	struct ursa_features f;
	ursa_probe(&f);
	bool ring = use_ring && f.uring_futex;
	int nworkers = nprocs * (nthreads + (ring ? 1 : 0));
	per_worker = (total + nworkers - 1) / nworkers;

	S = mmap(NULL, sizeof(*S), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (S == MAP_FAILED)
		return 99;
	memset(S, 0, sizeof(*S));
	if (ursa_mutex_init(&S->m, URSA_SHARED) || ursa_rwlock_init(&S->l, URSA_SHARED) ||
	    ursa_sem_init(&S->s, SEM_UNITS, URSA_SHARED) ||
	    ursa_mutex_init(&S->cm, URSA_SHARED) || ursa_cond_init(&S->cv, URSA_SHARED) ||
	    ursa_event_init(&S->e, URSA_SHARED | URSA_EVENT_AUTO_RESET) ||
	    ursa_event_set(&S->e) || ursa_waitq_init(Q, MAX_SLOTS, URSA_SHARED)) {
		fprintf(stderr, "stress: init failed\n");
		return 99;
	}
	S->tokens = COND_TOKENS;
	printf("stress: %ld operations, %d processes x (%d threads%s), per worker %ld%s\n", total,
	       nprocs, nthreads, ring ? " + 1 ring thread" : "", per_worker,
	       use_ring && !ring ? " (ring threads skipped: no io_uring futex ops)" : "");
	fflush(stdout);

	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pid_t pids[MAX_SLOTS];
	for (int p = 0; p < nprocs; p++) {
		pids[p] = fork();
		if (pids[p] < 0)
			return 99;
		if (pids[p] == 0)
			process_main(p, ring);
	}

	/* Watchdog: progress every HANG_S seconds, or it is a hang. */
	long last = -1;
	int still = 0, alive = nprocs, hung = 0;
	while (alive > 0) {
		int st;
		pid_t w = waitpid(-1, &st, WNOHANG);
		if (w > 0) {
			alive--;
			if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
				fprintf(stderr, "stress: worker %d died (status %#x)\n", (int)w, st);
				atomic_fetch_add(&S->violations, 1);
			}
			continue;
		}
		sleep(1);
		long now = atomic_load(&S->ops);
		if (!quiet && now / 10000000 != last / 10000000 && last >= 0)
			printf("stress: %ld operations...\n", now), fflush(stdout);
		if (now == last) {
			if (++still >= HANG_S) {
				fprintf(stderr, "stress: HANG: no operation finished in %d s\n", HANG_S);
				dump_words();
				hung = 1;
				atomic_store(&S->stop, 1);
				for (int p = 0; p < nprocs; p++)
					kill(pids[p], SIGKILL);
				while (wait(NULL) > 0)
					;
				break;
			}
		} else {
			still = 0;
		}
		last = now;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;

	/* Final invariants: everything returned, nothing leaked. */
	if (!hung) {
		if (S->a != S->b)
			violation("rwlock: a != b at the end", S->a, S->b);
		if (ursa_sem_value(&S->s) != SEM_UNITS)
			violation("sem: units lost", ursa_sem_value(&S->s), SEM_UNITS);
		if (S->tokens != COND_TOKENS)
			violation("cond: tokens lost", S->tokens, COND_TOKENS);
		if (ursa_event_trywait(&S->e) != 0)
			violation("event: the token was lost", 0, 0);
		if (ursa_mutex_trylock(&S->m) != 0 || ursa_mutex_unlock(&S->m) != 0)
			violation("mutex: left locked", 0, 0);
		if (ursa_rwlock_trywrlock(&S->l) != 0 || ursa_rwlock_wrunlock(&S->l) != 0)
			violation("rwlock: left locked", 0, 0);
		if (atomic_load(&S->workers_done) != nworkers)
			violation("workers did not all finish", atomic_load(&S->workers_done),
				  nworkers);
	}
	long ops = atomic_load(&S->ops), viol = atomic_load(&S->violations);
	printf("stress: operations %ld (ring %ld), timeouts %ld, cancels %ld, %.1f s, %.0f ops/s\n",
	       ops, (long)atomic_load(&S->ring_ops), (long)atomic_load(&S->timeouts),
	       (long)atomic_load(&S->cancels), secs, (double)ops / secs);
	printf("stress: mutex sections %ld, rwlock writes %ld\n", S->m_count, S->a);
	printf("stress: violations %ld%s\n", viol, hung ? " (and a HANG)" : "");
	return viol == 0 && !hung && ops >= total ? 0 : 1;
}
