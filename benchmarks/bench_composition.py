"""The composition and DEEP rounds alone: compile time, run time and XLA's memory figures, per shape.

    python benchmarks/bench_composition.py [--shapes alu:22:2,wide:20:2,...] [--rounds composition,deep]
                                           [--max-constraints K] [--group G] [--repeats 5] [--json F]

Each shape (``example:log2 rows:blowup``; ``shape<C>x<d>`` is a ``ShapeTable`` of ``C`` columns and
degree ``d``, ``shape<C>x<d>a<A>`` one with ``A`` aux columns) builds a random trace LDE (and aux
LDE and LogUp challenges; for DEEP, random parts and claims) on the default device, lowers each
round for that device's
platform (``kernels.lowering_for``), compiles it (``compile s``, the persistent cache off) and
times it (median of ``--repeats`` after a warm-up). ``temp MiB`` is XLA's temporaries for the
round, ``peak MiB`` its arguments, outputs and temporaries (the memory analysis the planner
reads). ``sha`` digests the round's outputs, so two trees' runs of the same shape can be compared
for identical results. ``--max-constraints`` lets the composition kernel take AIRs of up to ``K``
transition constraints (``jaxstark.kernels.composition.MAX_CONSTRAINTS``; wider ones run in
launches of ``Tiling.constraints``, ``--group``). Run it with ``PYTHONPATH`` set to another tree
to measure that tree's round (the script imports nothing of its own tree but ``common``).
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from common import median, report, timed

jax.config.update("jax_enable_compilation_cache", False)

DEFAULT = "alu:22:2,fibonacci:22:2,wide:20:2,shape600x2:18:2,shape62x3:20:2,shape13x3:16:4"


def air_for(name: str):
    from jaxstark.examples import Alu
    from jaxstark.examples.fibonacci import Fibonacci
    from jaxstark.examples.shape import ShapeTable
    from jaxstark.examples.wide import WideRounds

    if name.startswith("shape"):
        cols, rest = name[5:].split("x")
        degree, _, aux = rest.partition("a")
        return ShapeTable(width=int(cols), degree=int(degree), aux_columns=int(aux or 0))
    return {"alu": Alu, "fibonacci": Fibonacci, "wide": WideRounds}[name]()


def one(spec: str, which: str, repeats: int) -> dict:
    import jaxstark as js
    from jaxstark import gl, kernels
    from jaxstark.field import extension as fext
    from jaxstark.logup import bus_layout
    from jaxstark.memory.executor import _export_platform
    from jaxstark.protocol.statement import public_array
    from jaxstark.rounds.domain import make_domain
    from jaxstark.rounds.r0_statement import fork_table, initial_transcript
    from jaxstark.rounds.r2_composition import composition
    from jaxstark.rounds.r3_ood import OutOfDomain
    from jaxstark.rounds.r4_deep import deep

    name, log_n, blowup = spec.split(":")
    air, log_n, blowup = air_for(name), int(log_n), int(blowup)
    domain = make_domain(log_n, blowup)
    size = domain.size
    keys = jax.random.split(jax.random.PRNGKey(log_n), -(-air.width // 64))
    lde = jnp.concatenate([gl.random(k, (size, min(64, air.width - 64 * i))) for i, k in enumerate(keys)], axis=1)
    a = air.num_aux_columns
    aux_lde = gl.random(jax.random.fold_in(keys[0], 1), (size, 3 * a)) if a else None
    logup = None
    if a:  # the LogUp challenges and the buses' sums
        buses = (len(bus_layout(air)),)
        logup = (fext.random(jax.random.fold_in(keys[0], 2), (2,)), fext.random(jax.random.fold_in(keys[0], 3), buses))
    public = public_array(air, tuple(range(1, air.num_public_inputs + 1)))
    cfg = js.StarkConfig(blowup=blowup)
    tr = fork_table(initial_transcript((public,), airs=(air,), config=cfg, log_ns=(log_n,)), jnp.uint64(0))
    parts = air.composition_parts
    if which == "composition":
        fn, args, static = composition, (domain, lde, aux_lde, logup, public, tr), {"air": air, "hash_name": cfg.hash}
    else:
        key = jax.random.PRNGKey(7)
        shapes = [(), (air.width,), (air.width,), (parts,), (a,), (a,)]
        ood = OutOfDomain(*(fext.random(jax.random.fold_in(key, i), s) for i, s in enumerate(shapes)))
        parts_lde = fext.random(jax.random.fold_in(key, 9), (size, parts))
        fn, args, static = deep, (domain, lde, aux_lde, parts_lde, ood, tr), {}
    t = time.perf_counter()
    with kernels.lowering_for(_export_platform(jax.devices()[0])):  # as the executor lowers rounds
        compiled = fn.trace(*args, **static).lower().compile()
    compile_s = time.perf_counter() - t
    mem = compiled.memory_analysis()
    out = compiled(*args)
    digest = hashlib.sha256(b"".join(np.asarray(v).tobytes() for v in jax.tree.leaves(out))).hexdigest()[:16]
    del out
    ms = median(timed(compiled, *args, repeats=repeats)) * 1e3
    peak = mem.argument_size_in_bytes + mem.output_size_in_bytes + mem.temp_size_in_bytes - mem.alias_size_in_bytes
    return {"round": which, "shape": f"{name} 2^{log_n} @ b{blowup}", "compile_s": compile_s, "ms": ms,
            "temp_mib": mem.temp_size_in_bytes / 2**20, "peak_mib": peak / 2**20,
            "lde_mib": lde.nbytes / 2**20, "sha": digest}  # fmt: skip


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shapes", default=DEFAULT)
    p.add_argument("--rounds", default="composition,deep")
    p.add_argument("--max-constraints", type=int, default=None)
    p.add_argument("--group", type=int, default=None, help="constraints per kernel launch (Tiling.constraints)")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--json", type=Path, default=Path("/tmp/bench_composition.json"))
    a = p.parse_args(argv)
    from jaxstark.kernels import composition as kc

    if a.max_constraints is not None:
        kc.MAX_CONSTRAINTS = a.max_constraints
    if a.group is not None:
        kc.TILING = kc.TILING._replace(constraints=a.group)
    rows = []
    for which in a.rounds.split(","):
        for spec in a.shapes.split(","):
            rows.append(one(spec, which, a.repeats))
            print(rows[-1], file=sys.stderr, flush=True)
    columns = [("round", "round", "s"), ("shape", "shape", "s"), ("compile_s", "compile s", ".2f"),
               ("ms", "median ms", ".2f"),
               ("temp_mib", "temp MiB", ".0f"), ("peak_mib", "peak MiB", ".0f"), ("lde_mib", "LDE MiB", ".0f"),
               ("sha", "sha", "s")]  # fmt: skip
    report("composition and DEEP rounds", columns, rows, a.json, {"shapes": a.shapes})
    return 0


if __name__ == "__main__":
    sys.exit(main())
