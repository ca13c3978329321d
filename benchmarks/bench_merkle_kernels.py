"""Merkle trees: the Pallas kernels (jaxstark.kernels.merkle) against the plain jnp builder.

    python benchmarks/bench_merkle_kernels.py            # 2^22 x 62, 2^23 x 62, 2^21 x 316 (blake3)
    python benchmarks/bench_merkle_kernels.py --sweep    # also try launch shapes on the first shape
    python benchmarks/bench_merkle_kernels.py --quick    # tiny shapes, kernels in Pallas' interpreter

For each hash and shape, four programs: "leaves" (kernel: the leaf kernel writing the node
buffer; jnp: ``hash._hash_rows``) and "tree" (kernel: ``kernels.merkle.build_nodes``; jnp:
``merkle._reference_build``). Correctness before timing, on the full arrays: the kernel tree
equals the jnp tree byte for byte, the kernel leaves equal the jnp leaves, and
``merkle._build`` (the platform switch the prover calls) returns the same tree. Reported:
compile time, median of ``--repeats`` runs after a warm-up, compressions per second (BLAKE3
compressions, Keccak-f or Poseidon2 permutations) and bytes hashed per second. ``--sweep``
times the leaf kernel and the whole kernel build under other launch shapes (``Tiling``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
from bench_merkle import result_row
from common import compile_timed, median, report, timed

from jaxstark import gl, merkle
from jaxstark.hash.encoding import words_to_bytes
from jaxstark.hash.interface import get_hash
from jaxstark.kernels import merkle as km

STANDARD = [(22, 62), (23, 62), (21, 316)]
QUICK = [(6, 5), (4, 130)]
LEAF_SWEEP = [(128, 4, 1), (256, 4, 1), (512, 4, 1), (256, 8, 1), (512, 8, 1), (256, 2, 1), (256, 4, 2), (256, 4, 3)]
TREE_SWEEP = [(3, 128, 4), (4, 64, 4), (4, 128, 4), (4, 256, 4), (4, 128, 8), (5, 128, 4)]


def programs(name: str, interpret: bool, tiling: km.Tiling) -> dict:
    h, kh = get_hash(name), km.kernel_hash(name)
    return {
        ("kernel", "leaves"): lambda m: km.leaf_digests(m, kh, interpret=interpret, tiling=tiling),
        ("kernel", "tree"): lambda m: km.build_nodes(m, name, interpret=interpret, tiling=tiling),
        ("jnp", "leaves"): h._hash_rows,
        ("jnp", "tree"): lambda m: merkle._reference_build(m, name),
    }


def check(name: str, matrix, outs: dict) -> str:
    n = matrix.shape[0]
    tree, leaves = outs[("jnp", "tree")], outs[("jnp", "leaves")]
    same = [
        jnp.array_equal(outs[("kernel", "tree")], tree),
        jnp.array_equal(words_to_bytes(outs[("kernel", "leaves")][n:]), leaves),
        jnp.array_equal(tree[n:], leaves),
        jnp.array_equal(jax.jit(merkle._build, static_argnums=1)(matrix, name), tree),
    ]
    return "exact" if all(bool(s) for s in same) else "MISMATCH " + "".join("1" if bool(s) else "0" for s in same)


def sweep(name: str, log_n: int, width: int, matrix, want: dict, jnp_s: dict, interpret: bool, repeats: int):
    """The leaf kernel and the whole kernel build under other launch shapes, each checked."""
    rows, kh, n = [], km.kernel_hash(name), matrix.shape[0]
    base = km.TILINGS.get(name, km.Tiling())
    variants = [("leaves", base._replace(leaf_block=b, leaf_warps=w, leaf_stages=s)) for b, w, s in LEAF_SWEEP]
    variants += [("tree", base._replace(max_levels=r, tree_block=b, tree_warps=w)) for r, b, w in TREE_SWEEP]
    for what, t in variants:
        if what == "leaves":
            fn, cs = compile_timed(lambda m, t=t: km.leaf_digests(m, kh, interpret=interpret, tiling=t), matrix)
            same = jnp.array_equal(words_to_bytes(fn(matrix)[n:]), want["leaves"])
        else:
            fn, cs = compile_timed(lambda m, t=t: km.build_nodes(m, name, interpret=interpret, tiling=t), matrix)
            same = jnp.array_equal(fn(matrix), want["tree"])
        status = "exact" if bool(same) else "MISMATCH"
        s = median(timed(fn, matrix, repeats=repeats))
        shape = f"leaf {t.leaf_block}/{t.leaf_warps}w/{t.leaf_stages}s" if what == "leaves" else ""
        shape = shape or f"tree r{t.max_levels}/{t.tree_block}/{t.tree_warps}w"
        extra = dict(speedup=jnp_s[what] / s, tiling=t._asdict())
        rows.append(result_row(name, what, log_n, width, cs, s, status, path="kernel " + shape, **extra))
        del fn
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="tiny shapes, kernels in Pallas' interpreter")
    ap.add_argument("--sweep", action="store_true", help="try launch shapes on the first shape")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--hashes", default="blake3")
    ap.add_argument("--json", type=Path, default=Path(__file__).parent / "out" / "merkle_kernels.json")
    args = ap.parse_args(argv)
    interpret = args.quick or jax.devices()[0].platform != "gpu"
    names = [n for n in args.hashes.split(",") if km.kernel_hash(n) is not None]
    rows = []
    for i, (log_n, width) in enumerate(QUICK if args.quick else STANDARD):
        matrix = gl.random(jax.random.PRNGKey(log_n * 1000 + width), (1 << log_n, width))
        for name in names:
            tiling = km.TILINGS.get(name, km.Tiling())
            fns = {k: compile_timed(f, matrix) for k, f in programs(name, interpret, tiling).items()}
            outs = {k: fn(matrix) for k, (fn, _) in fns.items()}
            status = check(name, matrix, outs)
            times = {k: median(timed(fn, matrix, repeats=args.repeats)) for k, (fn, _) in fns.items()}
            for (path, what), (_, cs) in fns.items():
                t, speedup = times[(path, what)], times[("jnp", what)] / times[(path, what)]
                rows.append(result_row(name, what, log_n, width, cs, t, status, path=path, speedup=speedup))
            if args.sweep and i == 0:
                jnp_s = {what: times[("jnp", what)] for what in ("leaves", "tree")}
                want = {what: outs[("jnp", what)] for what in ("leaves", "tree")}
                rows += sweep(name, log_n, width, matrix, want, jnp_s, interpret, args.repeats)
            del fns, outs
        del matrix
    columns = [
        ("case", "hash / what / shape", "s"),
        ("path", "path", "s"),
        ("compile_s", "compile s", ".2f"),
        ("median_ms", "median ms", ".3f"),
        ("gcomp_per_s", "G comp/s", ".3f"),
        ("gbytes_per_s", "GB/s hashed", ".1f"),
        ("speedup", "x jnp", ".1f"),
        ("check", "check", "s"),
    ]
    report(
        "Merkle kernels vs jnp",
        columns,
        rows,
        args.json,
        dict(repeats=args.repeats, interpret=interpret, tilings={n: km.TILINGS[n]._asdict() for n in names}),
    )
    for n in names:
        print(f"{n}: tiling {km.TILINGS[n]}, tree passes for 2^23 leaves {km.pass_plan(23, km.TILINGS[n].max_levels)}")
    return 0 if all(not r["check"].startswith("MISMATCH") for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
