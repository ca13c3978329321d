"""The serial part of a GPU plan, measured without a GPU: every program traced and exported for CUDA.

    python benchmarks/bench_cuda_trace.py --example alu --log-rows 22 --blowup 2 [--prof FILE]

A cold plan on a GPU traces its programs one after another on the host (Python, under the GIL)
while XLA compiles the earlier ones on threads, so the tracing is the plan's critical path until
the last program is traced (``bench_compile.py`` prints that timeline on a GPU). This benchmark
walks the same plan on this machine's CPU device with the CUDA lowering: the Pallas/Triton
kernels are traced and lowered for CUDA exactly as on a GPU (``jax.export`` for ``cuda``, what
the executor does for a program it keeps), and nothing is compiled -- each program's
executable is replaced by its output shapes and zero memory figures. So the plan's choices
that read XLA's figures (held-buffer strategies, row blocks) are not the GPU's; at a shape that
fits, the programs are the GPU's: the FRI scan threshold is set to the accelerators'.

Prints, per program, the seconds of trace + lower + serialise for CUDA and a hash of the
serialised module (to check that a change leaves the programs unchanged; the hash includes
source locations, so a change that moves lines changes it). ``--search-dialect`` reproduces the
lowering before ``kernels._name_triton_dialect_module`` (MLIR's bindings search ``sys.path``
for the Triton dialect's module on every typed value). ``--prof FILE`` writes a cProfile.
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import sys
import time

from cli_args import add_proof_args


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_proof_args(ap)
    ap.add_argument("--prof", help="write a cProfile of the walk to this file")
    ap.add_argument("--search-dialect", action="store_true", help="leave the Triton dialect's module unnamed")
    args = ap.parse_args(argv)

    import jax
    from jax.sharding import SingleDeviceSharding

    from jaxstark import kernels

    kernels._has_cuda.cache_clear()
    kernels._has_cuda = lambda: True  # trace the kernels' branch: this walk lowers for CUDA
    if args.search_dialect:
        kernels._name_triton_dialect_module = lambda: None

    import jaxstark as js
    from jaxstark.examples import example_shapes
    from jaxstark.memory import executor as ex
    from jaxstark.rounds import r4_fri_layer

    r4_fri_layer.SCAN_LAYERS_BELOW_CPU = r4_fri_layer.scan_layers_below("gpu")  # the GPU's programs
    cpu = jax.devices("cpu")[0]
    rows: list[tuple[str, float, str]] = []

    class Figures:  # what the planner reads of memory_analysis(): the arguments it passed, else 0
        def __init__(self, arguments: int):
            self.argument_size_in_bytes = arguments

        def __getattr__(self, name):
            return 0

    class Traced:  # an executable's stand-in: its output shapes and figures
        def __init__(self, out_info, arguments: int):
            self.out_info, self.arguments = out_info, arguments

        def memory_analysis(self):
            return Figures(self.arguments)

        @property
        def output_shardings(self):
            return jax.tree.map(lambda s: s.sharding, self.out_info)

    def for_cuda(fn, static, args, shardings, name=None, describe=None, defer=False):
        abstract = jax.tree.map(ex._sds, args, shardings)
        leaves, in_tree = jax.tree.flatten(abstract)
        box = {}

        def flat(*xs):
            out, box["tree"] = jax.tree.flatten(fn(*jax.tree.unflatten(in_tree, xs), **static))
            return out

        start = time.perf_counter()
        with kernels.lowering_for("cuda"):
            exported = jax.export.export(jax.jit(flat, keep_unused=True), platforms=("cuda",),
                                         disabled_checks=ex._KERNEL_CALLS)(*leaves)  # fmt: skip
        seconds = time.perf_counter() - start
        module = hashlib.sha256(exported.mlir_module_serialized).hexdigest()[:12]
        rows.append((name or getattr(fn, "__name__", "?"), seconds, module))
        sharding = SingleDeviceSharding(cpu)
        out = [jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=sharding) for a in exported.out_avals]
        nbytes = sum(x.size * x.dtype.itemsize for x in leaves)
        return Traced(jax.tree.unflatten(box["tree"], out), nbytes), True

    ex._compiled = for_cuda
    config = js.StarkConfig(blowup=args.blowup, num_queries=args.queries, grinding_bits=args.grinding, hash=args.hash)
    profile = cProfile.Profile() if args.prof else None
    start = time.perf_counter()
    if profile:
        profile.enable()
    js.plan(example_shapes(args.example, args.log_rows), config=config, device=cpu, host_traces=False)
    if profile:
        profile.disable()
        profile.dump_stats(args.prof)
    wall = time.perf_counter() - start
    print(f"{args.example} 2^{args.log_rows} b{args.blowup} {args.hash}, traced and exported for CUDA on the CPU"
          f"{' (the dialect module searched)' if args.search_dialect else ''}: {len(rows)} programs")  # fmt: skip
    print(f"  {'program':24} {'seconds':>8}  module")
    for name, seconds, module in rows:
        print(f"  {name:24} {seconds:8.2f}  {module}")
    print(f"  {'sum':24} {sum(s for _, s, _ in rows):8.2f}  (plan walk {wall:.2f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
