"""Ways to bring a host (numpy) trace onto the device, and the host's check that its values are < p.

    python benchmarks/bench_transfer.py [--log-rows 22] [--width 62] [--device gpu]

Prints one line per method, best of 5 (bytes / seconds): the field check as ``any(a >= p)`` and as
one ``max`` pass; ``jax.device_put`` of the whole array; of ``k`` row blocks in one call (then
concatenated on the device); of ``k`` row blocks each put from its own thread (left as
blocks: the copy alone); and :func:`jaxstark.transfer.put`, the prover's way (row blocks from
threads written in place into one device array; checked equal first), and with
``--sweep-block-mib 4 16`` the same under other block sizes and thread counts
(``layout``: block rows and threads).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--log-rows", type=int, default=22)
    ap.add_argument("--width", type=int, default=62)
    ap.add_argument("--device", default="gpu", choices=("cpu", "gpu"))
    ap.add_argument("--sweep-block-mib", type=int, nargs="*", default=[], help="transfer.put at these blocks")
    ap.add_argument("--sweep-threads", type=int, nargs="*", default=[16, 8], help="... and these thread counts")
    args = ap.parse_args(argv)

    import jax
    import jax.numpy as jnp
    import numpy as np

    dev = jax.devices(args.device)[0]
    a = np.random.default_rng(0).integers(0, 2**63, size=(1 << args.log_rows, args.width), dtype=np.uint64)
    p = np.uint64(0xFFFF_FFFF_0000_0001)
    print(f"{a.nbytes / 2**20:.0f} MiB ({1 << args.log_rows} x {args.width} uint64) onto {dev.device_kind}")

    def best(name, fn, repeats=5):
        fn()
        times = []
        for _ in range(repeats):
            t = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t)
        print(f"  {name:44} {min(times) * 1e3:8.1f} ms {a.nbytes / min(times) / 1e9:6.1f} GB/s", flush=True)

    best("host check: any(a >= p)", lambda: bool(np.any(a >= p)))
    best("host check: a.max() >= p", lambda: bool(a.max() >= p))
    best("device_put, whole", lambda: jax.block_until_ready(jax.device_put(a, dev)))
    for k in (4, 8, 16):
        rows = a.shape[0] // k
        blocks = [a[i * rows : (i + 1) * rows] for i in range(k)]
        best(f"device_put, {k} row blocks in one call + concat",
             lambda blocks=blocks: jax.block_until_ready(jnp.concatenate(jax.device_put(blocks, dev))))  # fmt: skip
        with ThreadPoolExecutor(k) as pool:
            best(f"device_put, {k} row blocks from {k} threads",
                 lambda blocks=blocks, pool=pool: jax.block_until_ready(
                     list(pool.map(lambda b: jax.device_put(b, dev), blocks))))  # fmt: skip
    from jaxstark import transfer

    single = jax.sharding.SingleDeviceSharding(dev)
    if not np.array_equal(np.asarray(transfer.put(a, single)), a):
        print("jaxstark.transfer.put gave another array", file=sys.stderr)
        return 1
    best(f"jaxstark.transfer.put ({transfer.threads()} threads, "
         f"{'blocks' if transfer.wanted(a, single) else 'whole'})",
         lambda: jax.block_until_ready(transfer.put(a, single)))  # fmt: skip
    for mib in args.sweep_block_mib:  # the same under other block sizes and thread counts
        for threads in args.sweep_threads:
            transfer.MIN_BLOCK_BYTES = mib << 20
            os.environ[transfer.THREADS_ENV] = str(threads)
            lay = transfer.layout(a.shape, a.dtype.itemsize, transfer.platform(single))
            best(f"  min block {mib} MiB, {threads} threads: layout {lay}",
                 lambda: jax.block_until_ready(transfer.put(a, single)))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
