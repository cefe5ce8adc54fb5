#!/usr/bin/python3
# tests/real/condqueue.py [ITEMS] — a condvar-heavy threaded program: two
# producers and two consumers pass ITEMS items each through a small
# queue.Queue, with a tiny GIL switch interval. CPython's GIL hand-off is a
# pthread mutex + condvar (pthread_cond_timedwait on CLOCK_MONOTONIC), and
# queue.Queue blocks in threading.Condition; every hand-off goes through the
# pthread library. Prints a digest of everything consumed: the same on
# every run, whatever the interleaving.
import hashlib
import queue
import sys
import threading

sys.setswitchinterval(0.0001)
items = int(sys.argv[1]) if len(sys.argv) > 1 else 50000
q = queue.Queue(maxsize=8)
out = queue.Queue()


def producer(k):
    for i in range(items):
        q.put((k, i))


def consumer():
    while True:
        item = q.get()
        if item is None:
            return
        out.put(hashlib.sha256(repr(item).encode()).hexdigest())


threads = [threading.Thread(target=producer, args=(k,)) for k in range(2)]
threads += [threading.Thread(target=consumer) for _ in range(2)]
for t in threads:
    t.start()
for t in threads[:2]:
    t.join()
for _ in range(2):
    q.put(None)
for t in threads[2:]:
    t.join()
digests = sorted(out.get() for _ in range(out.qsize()))
print(len(digests), hashlib.sha256(''.join(digests).encode()).hexdigest())
