#!/usr/bin/env python3
"""How long one group-commit-sized msync takes on this disk, by how the file was made.

    python3 docs/bench/msync_probe.py DIR [fallocate|sparse|zeros ...]

For each mode: a 64 MiB file in DIR (reserved with posix_fallocate, left sparse, or
written with zeros and fsynced), mapped; then 400 times: 32 KiB written through the
mapping and msync'ed. Prints msync p50/p90/p99. BENCHMARKS.md's notes use it to show
that unwritten-extent conversion (fallocate) is not what a sync-flush group pays.
"""
import mmap
import os
import sys
import time

SIZE = 64 << 20
CHUNK = 32 << 10
ROUNDS = 400


def probe(directory, mode):
    path = os.path.join(directory, f"msync-probe-{mode}")
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC)
    try:
        if mode == "fallocate":
            os.posix_fallocate(fd, 0, SIZE)
        elif mode == "sparse":
            os.ftruncate(fd, SIZE)
        elif mode == "zeros":
            zeros = b"\0" * (1 << 20)
            for _ in range(SIZE >> 20):
                os.write(fd, zeros)
            os.fsync(fd)
        else:
            sys.exit(f"unknown mode {mode}")
        with mmap.mmap(fd, SIZE) as m:
            data = b"x" * CHUNK
            lat = []
            for i in range(ROUNDS):
                off = i * CHUNK
                m[off:off + CHUNK] = data
                start = time.perf_counter()
                m.flush(off & ~(mmap.PAGESIZE - 1), CHUNK + (off & (mmap.PAGESIZE - 1)))
                lat.append(time.perf_counter() - start)
        lat.sort()
        pct = lambda p: lat[min(len(lat) - 1, len(lat) * p // 100)] * 1e3
        print(f"{mode:10s} msync of {CHUNK >> 10} KiB: p50 {pct(50):.3f} ms  "
              f"p90 {pct(90):.3f}  p99 {pct(99):.3f}")
    finally:
        os.close(fd)
        os.unlink(path)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for mode in sys.argv[2:] or ["fallocate", "sparse", "zeros"]:
        probe(sys.argv[1], mode)
