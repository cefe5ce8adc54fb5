# Benchmarks and the buffer-pool demo (programs, never tests).
