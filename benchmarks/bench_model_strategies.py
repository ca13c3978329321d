"""The closed-form model's held-buffer strategies against the planner's, shape by shape.

    python benchmarks/bench_model_strategies.py                     # the CPU grid below, 0.7 and 0.5
    python benchmarks/bench_model_strategies.py --fit               # also refit TREE_BUILD_COEFFS
    python benchmarks/bench_model_strategies.py --shapes 14,2,0,4 --fractions 0.6 --device gpu

For each shape (``log2 rows, main columns, aux columns, blowup``: a ``ShapeTable`` of constraint
degree 2, the memory model's config: 40 queries, 16 grinding bits, FRI final degree 64, BLAKE3)
and each budget (a fraction of the planner's keep-everything peak), it compiles the plan under
that budget (``jaxstark.plan``: its held-buffer search) and runs the model's search at the same
budget (``jaxstark.memory.model.within``), compiling nothing. Prints, per case: the planner's
peak, the model's peak for the planner's own strategies (``model(park=..., recompute=...,
blocks=...)``, the error that matters for a notebook sweeping strategies), whether the model
chose the same strategies, and whether its choice fits by its own figures.

``--fit`` also plans each shape with every tree recomputed (``plan._plan_units``, a private
entry) and fits :data:`jaxstark.memory.model.TREE_BUILD_COEFFS` -- what building a tree again
holds besides it -- on those rebuilds, printing the coefficients to paste.
"""

from __future__ import annotations

import argparse
import importlib
import sys

SHAPES = [(10, 2, 0, 2), (14, 2, 0, 4), (12, 62, 0, 2), (12, 8, 1, 2), (13, 200, 0, 2), (11, 16, 2, 4)]


def _shape(text: str) -> tuple[int, int, int, int]:
    parts = tuple(int(x) for x in text.split(","))
    if len(parts) != 4:
        raise argparse.ArgumentTypeError(f"{text!r}: expected log2 rows, columns, aux columns, blowup")
    return parts  # type: ignore[return-value]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shapes", type=_shape, nargs="*", default=SHAPES)
    ap.add_argument("--fractions", default="0.7,0.5", help="budgets, as fractions of the keep-everything peak")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--fit", action="store_true", help="refit the tree-build temporaries first")
    args = ap.parse_args(argv)

    import dataclasses

    import jax

    import jaxstark as js
    from jaxstark.examples.shape import ShapeTable, shape_config
    from jaxstark.memory.model import buffer_name, model, within

    device = jax.devices(args.device)[0]
    backend = "cpu" if device.platform == "cpu" else "gpu"
    if args.fit:
        _fit(args.shapes, device)
    rows = []
    for log_n, c, a, b in args.shapes:
        air = ShapeTable(width=c, aux_columns=a, degree=2)
        full = js.plan(air, log_n, dataclasses.replace(shape_config(b), held_strategies=()), device=device)
        keep = max(r.total for r in full.rounds)
        for frac in (float(x) for x in args.fractions.split(",")):
            budget = int(frac * keep)
            config = dataclasses.replace(shape_config(b), vram_budget_mb=budget / 2**20)
            p = js.plan(air, log_n, config, device=device)
            peak = max(r.total for r in p.rounds)
            park = [buffer_name(n) for n, _, _ in p.parked]
            recompute = [buffer_name(n) for n, _, _ in p.recomputed]
            blocks = {n.split(": ", 1)[-1]: k for n, k in p.row_blocks}
            if None in park + recompute:
                rows.append((log_n, c, a, b, frac, peak, None, None, None, "a buffer the model does not name"))
                continue
            same = model(air, log_n, config, backend=backend, park=park, recompute=recompute, blocks=blocks)
            chose = within(air, log_n, config, budget, backend=backend)
            agree = (set(chose.parked), set(chose.recomputed), dict(chose.row_blocks)) == (set(park), set(recompute),
                                                                                             blocks)  # fmt: skip
            rows.append((log_n, c, a, b, frac, peak, same.peak, agree, chose.peak <= budget,
                         f"plan: {same.strategies() or 'keep'} | model: {chose.strategies() or 'keep'}"))  # fmt: skip
            print(rows[-1], file=sys.stderr, flush=True)
    print(f"\n{'shape':>16} {'budget':>6} {'plan peak':>10} {'model (plan strategies)':>24} {'same choice':>11} "
          f"{'model fits':>10}")  # fmt: skip
    worst = 0.0
    for log_n, c, a, b, frac, peak, mpeak, agree, fits, what in rows:
        shape = f"2^{log_n}x{c}+{a} b{b}"
        if mpeak is None:
            print(f"{shape:>16} {frac:>6} {peak / 2**20:>9.2f}M {'-':>24} {'-':>11} {'-':>10}  {what}")
            continue
        err = mpeak / peak - 1
        worst = max(worst, abs(err))
        print(f"{shape:>16} {frac:>6} {peak / 2**20:>9.2f}M {mpeak / 2**20:>12.2f}M ({err:+6.1%}) {str(agree):>11} "
              f"{str(fits):>10}  {what}")  # fmt: skip
    print(f"worst |model/plan - 1| with the plan's strategies: {worst:.1%}")
    return 0


def _fit(shapes, device) -> None:
    """Every tree recomputed, each rebuild's temporaries less the trees: fitted as one
    non-negative linear form in Lb (leaves, at most merkle.BLOCK) and Lb*w (times a leaf's
    words), relative error, under-predictions weighted twice (fit_memory_model.fit_max_linear)."""
    import dataclasses

    import numpy as np
    from fit_memory_model import fit_max_linear
    from scipy.optimize import nnls

    from jaxstark import merkle
    from jaxstark.examples.shape import ShapeTable, shape_config

    plan_mod = importlib.import_module("jaxstark.memory.plan")
    xs, ys = [], []
    for log_n, c, a, b in shapes:
        air = ShapeTable(width=c, aux_columns=a, degree=2)
        config = dataclasses.replace(shape_config(b), held_strategies=())
        where = (device, (device,))
        base = plan_mod._plan_units((air,), (log_n,), config, where, (0,), (0,), (False,))
        trees = dict(base.recomputable)
        p = plan_mod._plan_units((air,), (log_n,), config, where, (0,), (0,), (False,), frozenset(), trees, {})
        size = (1 << log_n) * b
        fri = {k: v for k, v in trees.items() if "FRI layer" in k}
        words = dict(trace=c, aux=3 * a, composition=3)
        for r in p.rounds:
            if r.name == "composition tree":
                leaves, w, held = size, 3, 64 * size
            elif r.name.startswith("openings ") and r.name != "openings FRI":
                leaves, w, held = size, words[r.name.split(" ", 1)[1]], 64 * size
            elif r.name == "openings FRI" and fri:
                leaves, w, held = max(fri.values()) // 64, 6, sum(fri.values())
            else:
                continue
            lb = min(leaves, merkle.BLOCK)
            xs.append([lb, lb * w])
            ys.append(max(1, r.temporaries - held))
    x, y = np.array(xs, float), np.array(ys, float)
    (w,) = fit_max_linear(x, y, nnls, scale=y, max_pieces=1)
    pred = x @ w
    print(f'TREE_BUILD_COEFFS["{device.platform}"] = {{"Lb": {w[0]:.4g}, "Lb*w": {w[1]:.4g}}}  # {len(y)} rebuilds, '
          f"{(pred / y - 1).min():+.0%} / {(pred / y - 1).max():+.0%} of those temporaries")  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
