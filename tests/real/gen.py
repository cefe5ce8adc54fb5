#!/usr/bin/python3
# tests/real/gen.py SIZE_MB — deterministic text for the real-program runs:
# lines of words from a seeded vocabulary and a number, about as
# compressible as log files (gzip ~3:1). Same bytes on every machine.
import random
import sys

size = int(sys.argv[1]) << 20
rng = random.Random(20240601)
vocab = [''.join(rng.choices('abcdefghijklmnopqrstuvwxyz', k=rng.randint(2, 10)))
         for _ in range(20000)]
out = sys.stdout.buffer
done = 0
while done < size:
    lines = []
    for _ in range(4096):
        words = rng.choices(vocab, k=rng.randint(3, 14))
        lines.append(' '.join(words) + ' %d\n' % rng.getrandbits(30))
    chunk = ''.join(lines).encode()
    out.write(chunk[:size - done])
    done += min(len(chunk), size - done)
