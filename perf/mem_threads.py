#!/usr/bin/env python3
"""A threaded Python allocation workload for perf/mem_bench.py: THREADS threads
each keep a sliding window of WINDOW buffers of random sizes (64 KiB to 8 MiB,
every page written: bytearray clears what it allocates), replacing the oldest
ITERS times. The sizes vary, as in a program that reads and transforms data, so
a freed block often does not fit the next request: what an allocator keeps
mapped for reuse shows in the peak RSS.

  $PYTHON perf/mem_threads.py [ITERS [THREADS [WINDOW]]]   (default 200 4 8)
"""
import random
import sys
import threading


def worker(seed, iters, window):
    rng = random.Random(seed)
    live = []
    for _ in range(iters):
        live.append(bytearray(rng.randrange(64 << 10, 8 << 20)))
        if len(live) > window:
            live.pop(0)


def main():
    given = [int(a) for a in sys.argv[1:4]]
    iters, threads, window = given + [200, 4, 8][len(given):]
    ts = [threading.Thread(target=worker, args=(i, iters, window)) for i in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


if __name__ == "__main__":
    main()
