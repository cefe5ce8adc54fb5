/* SPDX-License-Identifier: MIT */
/*
 * examples/mutex.c — ursa_mutex_t where a pthread mutex would be: four
 * threads deposit, the main thread withdraws with a 10 ms deadline, and
 * the balance adds up at the end.
 *
 * Build: cc -pthread mutex.c $(pkg-config --cflags --libs ursa)
 */
#include <pthread.h>
#include <stdio.h>

/* README: begin mutex */
#include <ursa.h>

static ursa_mutex_t lock = URSA_MUTEX_INIT;    /* 4 bytes */
static long balance;

static void deposit(long amount)
{
	ursa_mutex_lock(&lock);      /* one inline atomic when uncontended */
	balance += amount;
	ursa_mutex_unlock(&lock);    /* a wake syscall only if someone sleeps */
}

static int withdraw_within_10ms(long amount)
{
	struct timespec dl;
	clock_gettime(CLOCK_MONOTONIC, &dl);
	dl.tv_nsec += 10 * 1000000;
	if (dl.tv_nsec >= 1000000000) { dl.tv_sec++; dl.tv_nsec -= 1000000000; }
	int rc = ursa_mutex_timedlock(&lock, CLOCK_MONOTONIC, &dl);
	if (rc)
		return rc;               /* -ETIMEDOUT */
	balance -= amount;
	return ursa_mutex_unlock(&lock);
}
/* README: end */

enum { THREADS = 4, DEPOSITS = 100000, WITHDRAWALS = 1000 };

static void *depositor(void *arg)
{
	(void)arg;
	for (int i = 0; i < DEPOSITS; i++)
		deposit(2);
	return NULL;
}

int main(void)
{
	pthread_t t[THREADS];
	for (int i = 0; i < THREADS; i++)
		if (pthread_create(&t[i], NULL, depositor, NULL) != 0) {
			perror("pthread_create");
			return 1;
		}

	/* Withdraw while they deposit; a withdrawal that misses its deadline
	 * (the lock stayed busy for 10 ms) is simply tried again. */
	long withdrawn = 0, timeouts = 0;
	while (withdrawn < WITHDRAWALS) {
		int rc = withdraw_within_10ms(1);
		if (rc == 0)
			withdrawn++;
		else if (rc == -ETIMEDOUT)
			timeouts++;
		else {
			fprintf(stderr, "withdraw: %d\n", rc);
			return 1;
		}
	}
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);

	long want = 2L * THREADS * DEPOSITS - withdrawn;
	printf("balance %ld (want %ld), %ld withdrawals, %ld timed out and retried\n", balance,
	       want, withdrawn, timeouts);
	if (balance != want || ursa_mutex_destroy(&lock) != 0)
		return 1;
	return 0;
}
