"""The speed suite: the operations a proof spends its time in, against the device's bandwidth.

    python benchmarks/bench_speed.py                  # the target shapes, kernels as configured
    python benchmarks/bench_speed.py --compare        # also the plain-jnp path (a subprocess
                                                      # with JAXSTARK_KERNELS=jnp): before/after
    python benchmarks/bench_speed.py --proof          # also a whole ALU proof, time per round
    python benchmarks/bench_speed.py --quick          # tiny shapes (a smoke test; runs in CI)

Operations (each checked before it is timed: against the CPU backend bit for bit at small
sizes, by sampled rows at large ones):

* ``ntt``         natural-order NTT (``jaxstark.ntt.ntt``, includes the bit-reversal gather);
* ``ntt-br``      the butterflies alone, bit-reversed output (``jaxstark.ntt.dif_bitrev``);
* ``lde``         coset LDE, trace to evaluations (``jaxstark.lde.coset_lde``);
* ``tree``        Merkle tree over LDE rows (``jaxstark.merkle.commit``'s builder), per hash;
* ``commit``      the trace-commit round's work: interpolate, extend, build the tree.

"median ms": median of ``--repeats`` (>= 5) runs after a warm-up, compile excluded (its time is
the "compile s" column). "MB moved" is the operation's one-pass floor -- every input read once,
every output written once: NTT ``2 n c 8``; LDE ``n c 8 + L c 8``; tree ``L c 8 + 2 L 32``;
commit ``n c 8`` (trace) + ``n c 8`` (coefficients) + ``L c 8`` (LDE) + ``2 L 32`` (nodes).
"% of copy" divides the achieved rate by the copy bandwidth measured in the same run. Rows with
a target say whether it was met. Prints a table and writes JSON (``--json``).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import subprocess
import sys
from pathlib import Path

import bench_ntt
import jax
import jax.numpy as jnp
import numpy as np
from common import compile_timed, copy_bandwidth, median, report, timed

import jaxstark.kernels as kernels
from jaxstark import gl, lde, merkle, ntt
from jaxstark.rounds.domain import make_domain
from jaxstark.rounds.r1_trace_commit import _commit

# (op, log2 rows, columns, blowup, hash, target ms on one H200 or None)
STANDARD = [
    ("ntt", 22, 64, 1, "", 4.0),
    ("ntt-br", 22, 64, 1, "", None),
    ("lde", 22, 62, 2, "", None),
    ("tree", 23, 62, 1, "blake3", None),
    ("commit", 22, 62, 2, "blake3", 25.0),
    ("lde", 21, 316, 2, "", None),
    ("tree", 22, 316, 1, "blake3", None),
    ("commit", 21, 316, 2, "blake3", 60.0),
    ("tree", 23, 62, 1, "keccak256", None),
    ("tree", 23, 62, 1, "poseidon2", 40.0),
]
QUICK = [
    ("ntt", 10, 8, 1, "", None),
    ("ntt-br", 10, 8, 1, "", None),
    ("lde", 9, 6, 2, "", None),
    ("tree", 9, 6, 1, "blake3", None),
    ("commit", 8, 6, 2, "blake3", None),
]


def _shape(op: str, log_n: int, cols: int, blowup: int, hash_name: str) -> str:
    s = f"2^{log_n} x {cols}"
    if op in ("lde", "commit"):
        s = f"2^{log_n}->2^{log_n + blowup.bit_length() - 1} x {cols}"
    return s + (f" {hash_name}" if hash_name else "")


def bytes_moved(op: str, log_n: int, cols: int, blowup: int) -> int:
    n, big = 1 << log_n, (1 << log_n) * blowup
    return {
        "ntt": 2 * n * cols * 8,
        "ntt-br": 2 * n * cols * 8,
        "lde": n * cols * 8 + big * cols * 8,
        "tree": n * cols * 8 + 2 * n * 32,
        "commit": 2 * n * cols * 8 + big * cols * 8 + 2 * big * 32,
    }[op]


def random_matrix(key, rows: int, cols: int, block_cols: int = 64):
    """``gl.random`` of ``(rows, cols)``, drawn ``block_cols`` columns at a time: the random bits
    and their reduction hold a block's temporaries beside the matrix, not the whole matrix's (a
    2^22 x 316 matrix drawn at once held about four times its 10.6 GB on an 80 GB card)."""
    if cols <= block_cols:
        return gl.random(key, (rows, cols))
    keys = jax.random.split(key, -(-cols // block_cols))
    return jnp.concatenate(
        [gl.random(k, (rows, min(block_cols, cols - j * block_cols))) for j, k in enumerate(keys)], axis=1
    )


def build(op: str, log_n: int, cols: int, blowup: int, hash_name: str):
    """(function, arguments) for one operation."""
    x = random_matrix(jax.random.PRNGKey(log_n * 1000 + cols), 1 << log_n, cols)
    if op == "ntt":
        return ntt._ntt_jit, (x, ntt.ntt_tables(log_n))
    if op == "ntt-br":
        return jax.jit(ntt.dif_bitrev), (x, ntt.ntt_tables(log_n).forward)
    if op == "lde":
        return lde._lde_jit, (x, lde.lde_tables(log_n, blowup))
    if op == "tree":
        return functools.partial(merkle._build, hash_name=hash_name), (x,)
    return jax.jit(functools.partial(_commit, hash_name=hash_name)), (x, make_domain(log_n, blowup))


def _leaves(out) -> list[np.ndarray]:
    return [np.asarray(v) for v in jax.tree.leaves(out)]


def check(op: str, log_n: int, cols: int, blowup: int, hash_name: str, fn, args, out) -> str:
    """Bit-exact against the CPU backend (small), or sampled rows/paths against it (large)."""
    if op in ("ntt", "lde"):  # the NTT benchmark's check: CPU-exact, or sampled rows by Horner
        return bench_ntt.check(op, log_n, cols, blowup, fn, args)
    cpu = jax.devices("cpu")[0]
    if jax.devices()[0].platform == "cpu":
        return "cpu"
    x = np.asarray(args[0])
    if x.shape[0] <= 1 << 12:  # small: everything against the CPU backend
        with jax.default_device(cpu):
            want = fn(*jax.device_put(args, cpu))
        ok = all(np.array_equal(a, b) for a, b in zip(_leaves(out), _leaves(want), strict=True))
        return "cpu-exact" if ok else "MISMATCH"
    rng = np.random.default_rng(0)
    if op == "ntt-br":  # equals the natural-order transform, permuted
        nat = np.asarray(ntt.ntt(jax.device_put(x, jax.devices()[0])))
        rev = ntt.bit_reverse_indices(x.shape[0].bit_length() - 1)
        return "exact" if np.array_equal(np.asarray(out), nat[rev]) else "MISMATCH"
    # tree / commit: sampled leaves re-hashed on the CPU and their paths checked up to the root
    matrix = x if op == "tree" else np.asarray(out.lde)
    return sampled_paths(hash_name, matrix, np.asarray(out if op == "tree" else out.nodes), rng)


def sampled_paths(hash_name: str, matrix: np.ndarray, nodes: np.ndarray, rng) -> str:
    """Four random leaves: their rows hashed again on the CPU, their authentication paths read
    from ``nodes`` and checked up to ``nodes[1]`` (a wrong node on any path, a wrong leaf or a
    wrong root fails)."""
    cpu = jax.devices("cpu")[0]
    log_leaves = matrix.shape[0].bit_length() - 1
    idx = rng.integers(0, matrix.shape[0], size=4)
    paths = nodes[np.asarray(merkle._path_indices(jnp.asarray(idx), log_leaves))]
    with jax.default_device(cpu):
        ok = merkle.verify_paths(hash_name, nodes[1], log_leaves, idx, matrix[idx].reshape(4, -1), paths)
    return "sampled-paths" if bool(np.all(np.asarray(ok))) else "MISMATCH"


def run_cases(cases, repeats: int, bandwidth: float) -> list[dict]:
    rows = []
    for op, log_n, cols, blowup, hash_name, target in cases:
        fn, args = build(op, log_n, cols, blowup, hash_name)
        compiled, compile_s = compile_timed(fn, *args)
        status = check(op, log_n, cols, blowup, hash_name, fn, args, compiled(*args))  # fn: also runs on the CPU
        ms = median(timed(compiled, *args, repeats=repeats)) * 1e3
        moved = bytes_moved(op, log_n, cols, blowup)
        rate = moved / (ms / 1e3)
        met = "" if target is None else ("met" if ms <= target else "MISSED")
        row = dict(
            op=op, shape=_shape(op, log_n, cols, blowup, hash_name), compile_s=compile_s, median_ms=ms,
            mb_moved=moved / 1e6, gb_s=rate / 1e9, of_copy=100 * rate / bandwidth,
            target_ms=target if target is not None else float("nan"), target=met, check=status,
        )  # fmt: skip
        rows.append(row)
        print(f"  {op:7} {row['shape']:28} {ms:9.2f} ms  {status} {met}", file=sys.stderr, flush=True)
        del fn, args, compiled  # the next case's input is drawn with nothing of this one's held
    return rows


def proof_rounds(log_rows: int, blowup: int) -> dict:
    """A whole ALU proof: warm-up prove (plans and compiles), then one timed prove with the
    wall time of every round."""
    import jaxstark as js
    from jaxstark.examples import EXAMPLES
    from jaxstark.progress import RoundTimes

    air, trace, public = EXAMPLES["alu"](log_rows)
    cfg = js.StarkConfig(blowup=blowup, num_queries=40, grinding_bits=16)
    js.prove(air, trace, public, cfg)
    times = RoundTimes()
    proof = js.prove(air, trace, public, cfg, progress=times)
    assert js.verify(air, proof, public, cfg)
    return dict(log_rows=log_rows, blowup=blowup, total_ms=1e3 * times.total, table=times.table(),
                rounds_ms={k: 1e3 * v for k, v in times.seconds.items()})  # fmt: skip


COLUMNS = [
    ("op", "op", "s"),
    ("shape", "shape", "s"),
    ("compile_s", "compile s", ".2f"),
    ("median_ms", "median ms", ".2f"),
    ("mb_moved", "MB moved", ".1f"),
    ("gb_s", "GB/s", ".1f"),
    ("of_copy", "% of copy", ".1f"),
    ("target_ms", "target ms", ".0f"),
    ("target", "target", "s"),
    ("check", "check", "s"),
]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="tiny shapes (smoke test)")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--only", help="comma-separated ops to run (ntt, ntt-br, lde, tree, commit)")
    ap.add_argument("--compare", action="store_true", help="also run the plain-jnp path (subprocess)")
    ap.add_argument("--proof", action="store_true", help="also time a whole ALU proof, round by round")
    ap.add_argument("--proof-log-rows", type=int, default=22)
    ap.add_argument("--json", type=Path, default=Path(__file__).parent / "out" / "speed.json")
    args = ap.parse_args(argv)
    if args.repeats < 1:
        ap.error("--repeats must be >= 1")
    cases = QUICK if args.quick else STANDARD
    if args.only:
        ops = args.only.split(",")
        cases = [c for c in cases if c[0] in ops]
    bandwidth = copy_bandwidth(args.repeats, 20 if args.quick else 28)
    print(f"posture: JAXSTARK_KERNELS={kernels.MODE}; copy bandwidth {bandwidth / 1e9:.0f} GB/s", file=sys.stderr)
    rows = run_cases(cases, args.repeats, bandwidth)
    meta = dict(kernels=kernels.MODE, copy_gb_s=bandwidth / 1e9, repeats=args.repeats, command=sys.argv)
    if args.compare:
        base_json = args.json.with_name(args.json.stem + "_jnp.json")
        cmd = [sys.executable, __file__, "--json", str(base_json), "--repeats", str(args.repeats)]
        cmd += ["--quick"] * args.quick + (["--only", args.only] if args.only else [])
        env = dict(os.environ, JAXSTARK_KERNELS="jnp")
        subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
        base = {(r["op"], r["shape"]): r for r in json.loads(base_json.read_text())["results"]}
        for r in rows:
            b = base.get((r["op"], r["shape"]))
            r["jnp_ms"] = b["median_ms"] if b else float("nan")
            r["speedup"] = r["jnp_ms"] / r["median_ms"] if b else float("nan")
    columns = COLUMNS + ([("jnp_ms", "jnp ms", ".2f"), ("speedup", "speedup", ".1f")] if args.compare else [])
    if args.proof:
        meta["proof"] = proof_rounds(args.proof_log_rows, 2)
    report("Speed suite", columns, rows, args.json, meta)
    if args.proof:
        print(f"\nALU proof 2^{args.proof_log_rows} rows, blowup 2 (warm; rounds waited for one by one):")
        print(meta["proof"]["table"])
    return 1 if any(r["check"] == "MISMATCH" for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
