"""Leaf hashing and full Merkle trees, per hash.

    python benchmarks/bench_merkle.py             # 2^22 x 62 and 2^21 x 316, every hash
    python benchmarks/bench_merkle.py --quick     # tiny shapes (a smoke test; runs in CI)

For each hash and shape: "leaves" hashes every row of the matrix (``hash.hash_rows``), "tree"
builds the whole node array (``merkle.commit``'s builder). Reported: compile time, median of
``--repeats`` runs after a warm-up, compressions per second (BLAKE3 compressions, Keccak-f or
Poseidon2 permutations, counted exactly from the message lengths) and bytes hashed per second
(leaf bytes, plus 64 bytes per internal node for trees). Correctness before timing: the root of
a small instance and sampled leaves of the large one are compared with the CPU backend.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import jax
import numpy as np
from common import compile_timed, median, report, timed

from jaxstark import gl, merkle
from jaxstark.hash import get_hash

STANDARD = [(22, 62), (21, 316)]
QUICK = [(8, 5), (6, 40)]
HASH_NAMES = ["blake3", "keccak256", "poseidon2"]


def leaf_compressions(hash_name: str, width: int) -> int:
    """Compression-function calls to hash one row of ``width`` field elements."""
    nbytes = 8 * width
    if hash_name == "blake3":
        chunks = max(1, -(-nbytes // 1024))
        blocks = sum(max(1, -(-min(1024, nbytes - 1024 * k) // 64)) for k in range(chunks))
        return blocks + chunks - 1  # chunk blocks + parent nodes
    if hash_name == "keccak256":
        return nbytes // 136 + 1
    return max(1, -(-width // 8))  # poseidon2 sponge, rate 8


def result_row(name: str, what: str, log_n: int, width: int, compile_s: float, seconds: float, status: str, **extra):
    """One table row: the case, its time, and compressions and bytes hashed per second (leaf
    bytes, plus 64 bytes per internal node for a tree)."""
    n = 1 << log_n
    comp = n * leaf_compressions(name, width) + (n - 1 if what == "tree" else 0)
    nbytes = n * width * 8 + (64 * (n - 1) if what == "tree" else 0)
    return dict(
        case=f"{name} {what} 2^{log_n} x {width}", hash=name, what=what, log_n=log_n, width=width,
        compile_s=compile_s, median_ms=seconds * 1e3, compressions=comp, gcomp_per_s=comp / seconds / 1e9,
        gbytes_per_s=nbytes / seconds / 1e9, check=status, **extra,
    )  # fmt: skip


def check(hash_name: str, matrix, tree_nodes) -> str:
    cpu = jax.devices("cpu")[0]
    rows = np.random.default_rng(0).integers(0, matrix.shape[0], 4)
    h = get_hash(hash_name)
    leaves_dev = np.asarray(h.hash_rows(matrix[rows]))
    with jax.default_device(cpu):
        leaves_cpu = np.asarray(h.hash_rows(jax.device_put(np.asarray(matrix[rows]), cpu)))
    n = matrix.shape[0]
    in_tree = np.asarray(tree_nodes)[n + rows]
    if not (np.array_equal(leaves_dev, leaves_cpu) and np.array_equal(in_tree, leaves_cpu)):
        return "MISMATCH"
    small = np.asarray(matrix[:64])
    with jax.default_device(cpu):
        root_cpu = np.asarray(merkle.commit(jax.device_put(small, cpu), hash_name).root)
    root_dev = np.asarray(merkle.commit(jax.numpy.asarray(small), hash_name).root)
    return "cpu-exact" if np.array_equal(root_cpu, root_dev) else "MISMATCH"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--hashes", default=",".join(HASH_NAMES))
    ap.add_argument("--json", type=Path, default=Path(__file__).parent / "out" / "merkle.json")
    args = ap.parse_args(argv)
    names = args.hashes.split(",")
    for n in names:
        get_hash(n)
    rows = []
    for log_n, width in QUICK if args.quick else STANDARD:
        n = 1 << log_n
        matrix = gl.random(jax.random.PRNGKey(log_n), (n, width))
        for name in names:
            h = get_hash(name)
            leaves_fn, leaves_s = compile_timed(h._hash_rows, matrix)
            tree_fn, tree_s = compile_timed(merkle._build, matrix, name)
            status = check(name, matrix, tree_fn(matrix))
            for what, fn, cs in (("leaves", leaves_fn, leaves_s), ("tree", tree_fn, tree_s)):
                t = median(timed(fn, matrix, repeats=args.repeats))
                rows.append(result_row(name, what, log_n, width, cs, t, status))
            del leaves_fn, tree_fn
    columns = [
        ("case", "hash / what / shape", "s"),
        ("compile_s", "compile s", ".2f"),
        ("median_ms", "median ms", ".2f"),
        ("gcomp_per_s", "G comp/s", ".3f"),
        ("gbytes_per_s", "GB/s hashed", ".2f"),
        ("check", "check", "s"),
    ]
    report("Merkle benchmark", columns, rows, args.json, dict(repeats=args.repeats))
    return 0 if all(r["check"] != "MISMATCH" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
