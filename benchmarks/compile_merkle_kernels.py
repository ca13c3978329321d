"""Compile time of the Merkle kernels, one program per child process (each with a time limit).

    python benchmarks/compile_merkle_kernels.py                   # the default variants, 2^16 x 62
    python benchmarks/compile_merkle_kernels.py --limit 60 --only blake3
    python benchmarks/compile_merkle_kernels.py --jobs 8          # eight children at a time

A kernel whose compilation runs past ``--limit`` seconds is reported as such and the next
variant starts: one slow variant cannot hide the others. Each line is printed when its child
ends. Per variant: the time to trace and lower the program (Pallas -> Triton IR, in JAX) and
the time to compile it (XLA, with Triton and ptxas for the kernels), then the median of five
runs, and for whole builds a check against the ``jnp`` builder on the same device. With
``--jobs`` several children compile at once (compilation is single-threaded host work; the
children share the device, each without a preallocated pool). Needs the device the kernels are for (CUDA);
elsewhere ``--interpret`` compiles the interpreted form instead.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

# label -> (hash, stage, Tiling fields); stage "leaves", "pass<r>" (one tree pass of r levels)
# or "build" (the whole tree).
VARIANTS: dict[str, tuple[str, str, dict]] = {
    "blake3 leaves rolled": ("blake3", "leaves", {"unroll": False}),
    "blake3 leaves unrolled": ("blake3", "leaves", {"unroll": True}),
    "blake3 pass1 unrolled": ("blake3", "pass1", {"unroll": True}),
    "blake3 pass2 unrolled": ("blake3", "pass2", {"unroll": True}),
    "blake3 pass4 rolled": ("blake3", "pass4", {"unroll": False}),
    "blake3 pass4 unrolled": ("blake3", "pass4", {"unroll": True}),
    "blake3 pass2 rolled": ("blake3", "pass2", {"unroll": False}),
    "blake3 build rolled": ("blake3", "build", {"unroll": False}),
    "blake3 build rolled l2": ("blake3", "build", {"unroll": False, "max_levels": 2}),
    "blake3 build unrolled l2": ("blake3", "build", {"unroll": True, "max_levels": 2}),
    "blake3 build default": ("blake3", "build", {}),
    "keccak256 build rolled": ("keccak256", "build", {"unroll": False}),
    "keccak256 build rolled l1": ("keccak256", "build", {"unroll": False, "max_levels": 1}),
    "keccak256 build default": ("keccak256", "build", {}),
    "poseidon2 build rolled": ("poseidon2", "build", {"unroll": False}),
    "poseidon2 build default": ("poseidon2", "build", {}),
}


def child(label: str, log_n: int, width: int, interpret: bool) -> dict:
    import jax
    import jax.numpy as jnp

    from jaxstark import gl, merkle
    from jaxstark.kernels import merkle as km

    name, stage, fields = VARIANTS[label]
    tiling = km.TILINGS[name]._replace(**fields)
    h = km.kernel_hash(name)
    n = 1 << log_n
    matrix = gl.random(jax.random.key(1), (n, width))
    if stage == "leaves":
        fn = lambda m: km.leaf_digests(m, h, interpret=interpret, tiling=tiling)  # noqa: E731
    elif stage.startswith("pass"):
        r = int(stage[4:])

        def fn(m):
            nodes = km.leaf_digests(m, h, interpret=interpret, tiling=tiling).reshape(-1)
            return km._tree_pass(nodes, jnp.int32(n), h, r, n, interpret, tiling)
    else:
        fn = lambda m: km.build_nodes(m, name, interpret=interpret, tiling=tiling)  # noqa: E731
    t0 = time.perf_counter()
    lowered = jax.jit(fn).lower(matrix)
    t1 = time.perf_counter()
    compiled = lowered.compile()
    t2 = time.perf_counter()
    out = compiled(matrix)
    jax.block_until_ready(out)
    runs = []
    for _ in range(5):
        t = time.perf_counter()
        jax.block_until_ready(compiled(matrix))
        runs.append(time.perf_counter() - t)
    ok = "run"
    if stage == "build":
        want = jax.jit(merkle._reference_build, static_argnums=1)(matrix, name)
        ok = "exact" if bool(jnp.array_equal(out, want)) else "MISMATCH"
    run_ms = round(1e3 * sorted(runs)[2], 3)
    lower_s, compile_s = round(t1 - t0, 2), round(t2 - t1, 2)
    return {"variant": label, "lower_s": lower_s, "compile_s": compile_s, "run_ms": run_ms, "check": ok}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--log-rows", type=int, default=16)
    ap.add_argument("--width", type=int, default=62)
    ap.add_argument("--limit", type=float, default=90.0, help="seconds per variant")
    ap.add_argument("--only", default="", help="variants whose label contains this")
    ap.add_argument("--jobs", type=int, default=1, help="children compiling at once")
    ap.add_argument("--interpret", action="store_true")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.log_rows, args.width, args.interpret)))
        return 0
    print(f"{'variant':<26} {'lower s':>8} {'compile s':>10} {'run ms':>9}  check", flush=True)
    # children share the device: no preallocated pool, and each capped at a share of the card
    share = f"{min(0.75, 0.8 / max(1, args.jobs)):.3f}"
    env = dict(os.environ, XLA_PYTHON_CLIENT_PREALLOCATE="false", XLA_PYTHON_CLIENT_MEM_FRACTION=share)
    todo = [label for label in VARIANTS if args.only in label]
    running: list[tuple[str, float, subprocess.Popen]] = []
    while todo or running:
        while todo and len(running) < max(1, args.jobs):
            label = todo.pop(0)
            cmd = [sys.executable, __file__, "--child", label, "--log-rows", str(args.log_rows)]
            cmd += ["--width", str(args.width)] + ["--interpret"] * args.interpret
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
            running.append((label, time.perf_counter(), proc))
        time.sleep(0.2)
        for item in list(running):
            label, t0, proc = item
            if proc.poll() is None:
                if time.perf_counter() - t0 > args.limit:
                    proc.kill()
                    proc.communicate()
                    running.remove(item)
                    print(f"{label:<26} {'':>8} {'>' + format(args.limit, '.0f'):>10}  (time limit)", flush=True)
                continue
            running.remove(item)
            stdout, stderr = proc.communicate()
            lines = [ln for ln in stdout.splitlines() if ln.startswith("{")]
            if proc.returncode or not lines:
                tail = (stderr.strip().splitlines() or ["?"])[-1][:100]
                print(f"{label:<26} failed after {time.perf_counter() - t0:.0f} s: {tail}", flush=True)
                continue
            row = json.loads(lines[-1])
            print(
                f"{label:<26} {row['lower_s']:>8.2f} {row['compile_s']:>10.2f} {row['run_ms']:>9.3f}  {row['check']}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
