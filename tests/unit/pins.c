/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/pins.c — the wakers' pins (lib/sem.c, lib/rwlock.c,
 * lib/mutex.c: "Pins"). A post or an unlock that will look at the object
 * after its release (it wakes someone) holds a pin from before that
 * release to its last look, and destroy waits while one is held, so that
 * the object may be freed as soon as the wait it served has returned
 * (tests/fault/waker_destroy.c, tests/fault/unlock_destroy.c). There are
 * seven (three bits). An eighth waker at once waits for one to go, as
 * destroy would wait for them: one that went on without a pin could still
 * be looking at the object after a destroy that nothing held back (the
 * spin models' -DPINCAP=1 runs find that use after free). Pins that stay a
 * second are dead (left by killed processes): destroy says -EBUSY, and a
 * waker goes on without one. Neither wait is a cancellation point.
 *
 * White-box: the tests set the pin bits themselves, standing for seven
 * wakers inside their window.
 */
#include "tests/helpers.h"
#include "tests/unit/rwlock_layout.h"

#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <ursa.h>

TestSuite(pins, .timeout = 60);

/* Where each object keeps its pins (lib/sem.c S_PINS, lib/rwlock.c
 * RW_PINS, lib/mutex.c M_PINS). */
#define SEM_PINS    0x00e00000u
#define SEM_PIN_ONE 0x00200000u
#define RW_PINS	    0x0000000eu
#define RW_PIN_ONE  0x00000002u
#define M_PINS	    0x000000e0u
#define M_PIN_ONE   0x00000020u

/* The waking operation under test. RD: the last read unlock with a writer
 * waiting; WR: a write unlock with a writer waiting. */
enum kind { SEM, MUTEX, RW_RD, RW_WR };

struct case_ {
	enum kind kind;
	ursa_sem_t s;
	ursa_mutex_t m;
	ursa_rwlock_t rw;
	atomic_int waker_done;
};

static uint32_t *pin_word(struct case_ *c)
{
	return c->kind == SEM ? &c->s.__waiters : c->kind == MUTEX ? &c->m.__word : &c->rw.__notify;
}

static uint32_t pin_mask(enum kind k)
{
	return k == SEM ? SEM_PINS : k == MUTEX ? M_PINS : RW_PINS;
}

static uint32_t pin_one(enum kind k)
{
	return k == SEM ? SEM_PIN_ONE : k == MUTEX ? M_PIN_ONE : RW_PIN_ONE;
}

static uint32_t pins_of(struct case_ *c)
{
	return __atomic_load_n(pin_word(c), __ATOMIC_RELAXED) & pin_mask(c->kind);
}

static void pins_add(struct case_ *c, uint32_t d)
{
	__atomic_fetch_add(pin_word(c), d, __ATOMIC_RELAXED);
}

static void pins_sub(struct case_ *c, uint32_t d)
{
	__atomic_fetch_sub(pin_word(c), d, __ATOMIC_RELAXED);
}

/* Set up: all seven pins taken, the object held (or empty) so that the
 * waiter sleeps. */
static void setup(struct case_ *c, enum kind k)
{
	c->kind = k;
	atomic_store(&c->waker_done, 0);
	switch (k) {
	case SEM:
		cr_assert_eq(ursa_sem_init(&c->s, 0, 0), 0);
		break;
	case MUTEX:
		cr_assert_eq(ursa_mutex_init(&c->m, 0), 0);
		cr_assert_eq(ursa_mutex_lock(&c->m), 0);
		break;
	case RW_RD:
		cr_assert_eq(ursa_rwlock_init(&c->rw, 0), 0);
		cr_assert_eq(ursa_rwlock_rdlock(&c->rw), 0);
		break;
	case RW_WR:
		cr_assert_eq(ursa_rwlock_init(&c->rw, 0), 0);
		cr_assert_eq(ursa_rwlock_wrlock(&c->rw), 0);
		break;
	}
	pins_add(c, pin_mask(k)); /* seven wakers in their window */
}

/* The waiter: it sleeps until the waker's post or unlock serves it. */
static int waiter(void *p)
{
	struct case_ *c = p;
	switch (c->kind) {
	case SEM:
		return ursa_sem_wait(&c->s);
	case MUTEX:
		return ursa_mutex_lock(&c->m);
	default:
		return ursa_rwlock_wrlock(&c->rw);
	}
}

/* The eighth waker (the object's ops do not check the owner: this
 * thread may unlock what the test thread took). */
static void *waker(void *p)
{
	struct case_ *c = p;
	int r = c->kind == SEM	   ? ursa_sem_post(&c->s)
		: c->kind == MUTEX ? ursa_mutex_unlock(&c->m)
		: c->kind == RW_RD ? ursa_rwlock_rdunlock(&c->rw)
				   : ursa_rwlock_wrunlock(&c->rw);
	cr_assert_eq(r, 0);
	atomic_store(&c->waker_done, 1);
	return NULL;
}

/* Clean up once the waiter was served: it lets go, the pins go, and
 * destroy finds the object quiescent. */
static void teardown(struct case_ *c)
{
	pins_sub(c, pins_of(c));
	switch (c->kind) {
	case SEM:
		cr_assert_eq(ursa_sem_value(&c->s), 0, "the unit was taken once");
		cr_assert_eq(ursa_sem_destroy(&c->s), 0);
		break;
	case MUTEX:
		cr_assert_eq(ursa_mutex_unlock(&c->m), 0);
		cr_assert_eq(ursa_mutex_destroy(&c->m), 0);
		break;
	default:
		cr_assert_eq(ursa_rwlock_wrunlock(&c->rw), 0);
		cr_assert_eq(ursa_rwlock_destroy(&c->rw), 0);
		break;
	}
}

/* With the seven pins taken the waker waits, its release not yet made:
 * the waiter is not served. When one pin goes, it takes that pin, serves
 * the waiter and drops its own pin: six are left, the test's. */
static void waits_for_a_pin(enum kind k)
{
	static struct case_ c;
	setup(&c, k);
	struct t_waiter w;
	t_waiter_start(&w, waiter, &c);
	pthread_t t;
	cr_assert_eq(pthread_create(&t, NULL, waker, &c), 0);
	t_sleep_ms(50); /* far less than the second after which pins are dead */
	cr_assert_not(atomic_load(&c.waker_done), "the waker went on while all 7 pins were taken");
	cr_assert_not(t_waiter_done(&w), "the waiter was served before the waker had a pin");
	cr_assert_eq(pins_of(&c), pin_mask(k), "pins %#x", pins_of(&c));
	pins_sub(&c, pin_one(k)); /* one of the seven finished */
	cr_assert_eq(pthread_join(t, NULL), 0);
	cr_assert_eq(t_waiter_join(&w), 0);
	cr_assert_eq(pins_of(&c), pin_mask(k) - pin_one(k),
		     "pins %#x: the waker's own pin was not dropped, or another was", pins_of(&c));
	teardown(&c);
}

Test(pins, sem_post_waits_for_a_pin)
{
	waits_for_a_pin(SEM);
}

Test(pins, mutex_unlock_waits_for_a_pin)
{
	waits_for_a_pin(MUTEX);
}

Test(pins, rwlock_read_unlock_waits_for_a_pin)
{
	waits_for_a_pin(RW_RD);
}

Test(pins, rwlock_write_unlock_waits_for_a_pin)
{
	waits_for_a_pin(RW_WR);
}

/* Pins that stay a second are dead: the waker goes on without one, and
 * the waiter is served. */
static void dead_pins(enum kind k)
{
	static struct case_ c;
	setup(&c, k);
	struct t_waiter w;
	t_waiter_start(&w, waiter, &c);
	uint64_t t0 = t_now_ns();
	pthread_t t;
	cr_assert_eq(pthread_create(&t, NULL, waker, &c), 0);
	cr_assert_eq(pthread_join(t, NULL), 0);
	cr_assert_eq(t_waiter_join(&w), 0, "the waiter was not served");
	cr_assert_eq(pins_of(&c), pin_mask(k), "pins %#x: the waker took one", pins_of(&c));
	cr_assert_geq(t_now_ns() - t0, 500000000u, "the waker did not wait for the pins to go");
	teardown(&c);
}

Test(pins, sem_post_goes_on_past_dead_pins)
{
	dead_pins(SEM);
}

Test(pins, rwlock_read_unlock_goes_on_past_dead_pins)
{
	dead_pins(RW_RD);
}

/* A thread with a cancel pending (deferred) that waits for pins acts on
 * it only at its next cancellation point, not inside the library's wait:
 * were the wait one (libc's nanosleep is), an unlock would unwind holding
 * the lock. destroy's wait for a pin left behind is the same wait. */
static atomic_int cancel_ret, destroy_ret;

/* No criterion assertion here: its locals would lie in the frame the
 * cancellation unwinds, which AddressSanitizer leaves poisoned (it then
 * reports its own thread teardown writing there). */
static void *cancelled_destroyer(void *p)
{
	struct case_ *c = p;
	atomic_store(&cancel_ret, pthread_cancel(pthread_self()));
	atomic_store(&destroy_ret, ursa_sem_destroy(&c->s));
	pthread_testcancel();
	return NULL;
}

Test(pins, the_wait_for_a_pin_is_no_cancellation_point)
{
	static struct case_ c;
	c.kind = SEM;
	cr_assert_eq(ursa_sem_init(&c.s, 0, 0), 0);
	pins_add(&c, SEM_PIN_ONE); /* left by a process killed in a post */
	atomic_store(&destroy_ret, 1);
	pthread_t t;
	void *ret;
	cr_assert_eq(pthread_create(&t, NULL, cancelled_destroyer, &c), 0);
	cr_assert_eq(pthread_join(t, &ret), 0);
	cr_assert_eq(atomic_load(&cancel_ret), 0);
	cr_assert_eq(ret, PTHREAD_CANCELED);
	cr_assert_eq(atomic_load(&destroy_ret), -EBUSY,
		     "destroy did not return (%d): cancelled inside its wait for the pin",
		     atomic_load(&destroy_ret));
	pins_sub(&c, SEM_PIN_ONE);
	cr_assert_eq(ursa_sem_destroy(&c.s), 0);
}
