"""What a process's first allocation on a device costs, by allocator posture.

JAX's GPU allocator reserves its pool at the device's first allocation, not when the backend
starts. Each posture runs in fresh processes: the backend is started (``jax.devices``), then
two 32 MiB arrays are copied in, each timed; the first pays for the pool.

    python benchmarks/bench_first_alloc.py --device gpu [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

CHILD = """
import sys, time
import numpy as np
import jax
t = time.perf_counter(); device = jax.devices(sys.argv[1])[0]; start = time.perf_counter() - t
times = []
for _ in range(2):
    t = time.perf_counter()
    jax.device_put(np.ones(1 << 22, np.uint64), device).block_until_ready()
    times.append(time.perf_counter() - t)
print(f"{start:.3f} {times[0]:.3f} {times[1]:.3f}")
"""

POSTURES = [
    ("preallocated (default)", {}),
    ("XLA_PYTHON_CLIENT_MEM_FRACTION=0.2", {"XLA_PYTHON_CLIENT_MEM_FRACTION": "0.2"}),
    ("XLA_PYTHON_CLIENT_PREALLOCATE=false", {"XLA_PYTHON_CLIENT_PREALLOCATE": "false"}),
]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="gpu")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args(argv)
    base = {k: v for k, v in os.environ.items() if not k.startswith("XLA_PYTHON_CLIENT_")}
    print(f"{'posture':38} {'backend s':>10} {'first put s':>12} {'second put s':>13}")
    for label, extra in POSTURES:
        for _ in range(args.runs):
            out = subprocess.run([sys.executable, "-c", CHILD, args.device], env={**base, **extra},
                                 capture_output=True, text=True, check=True)  # fmt: skip
            start, first, second = out.stdout.split()
            print(f"{label:38} {start:>10} {first:>12} {second:>13}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
