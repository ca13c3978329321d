"""XLA's memory figures for a grid of table shapes, and the memory model's temporaries fitted to them.

    python benchmarks/fit_memory_model.py record [--grid cpu|gpu] [--jobs 2]   # plan every shape
    python benchmarks/fit_memory_model.py fit [--data FILE]                    # fit, print, check

``record`` plans every shape of the grid with ``jaxstark.plan`` (a :class:`ShapeTable` stand-in of
the shape; every round compiled for the default device, nothing dispatched), each shape in a fresh
process, and writes every round's figures to ``benchmarks/data/memory_<backend>.json``.

``fit`` fits each round's temporaries as the largest of one or two non-negative linear forms in
the model's features (:data:`jaxstark.memory.model.FEATURES`), minimising the error relative to
the round's device set with an under-prediction weighted twice an over-prediction
(:func:`fit_max_linear`), on the shapes marked ``fit`` only; prints the coefficients to paste
into :data:`jaxstark.memory.model.TEMP_COEFFS` and the model's error on every shape, the held-out
ones separately. ``tests/test_memory_model.py``
holds the model to the recorded figures.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

DATA = Path(__file__).parent / "data"

# (log2 rows, main columns, aux columns, blowup, constraint degree); "fit" shapes fix the
# coefficients, "check" shapes are held out and only compared.
# fmt: off
GRIDS = {
    "cpu": {
        "fit": [
            (8, 2, 0, 2, 2), (8, 400, 0, 2, 2), (9, 16, 1, 4, 3), (10, 4, 0, 8, 2), (10, 64, 2, 2, 2),
            (11, 128, 0, 4, 3), (12, 32, 1, 8, 2), (12, 300, 0, 2, 2), (13, 16, 2, 2, 3), (14, 4, 1, 2, 2),
            (14, 64, 0, 2, 2), (15, 2, 1, 4, 3), (16, 12, 2, 2, 2), (16, 4, 0, 8, 2),
        ],
        "check": [
            (8, 24, 0, 4, 2), (8, 120, 3, 2, 2), (9, 2, 0, 2, 3), (9, 256, 0, 8, 2), (10, 13, 2, 4, 3),
            (10, 400, 0, 2, 3), (11, 2, 1, 2, 2), (11, 48, 0, 8, 2), (12, 8, 0, 2, 2), (12, 200, 1, 2, 2),
            (13, 2, 0, 4, 2), (13, 100, 0, 2, 3), (13, 24, 1, 8, 2), (14, 8, 0, 8, 2), (14, 40, 2, 2, 2),
            (15, 24, 0, 2, 2), (15, 6, 0, 4, 3), (16, 2, 0, 2, 2), (16, 4, 0, 4, 2), (16, 24, 1, 2, 3),
            (16, 64, 0, 2, 2), (12, 400, 2, 4, 2),
        ],
    },
    "gpu": {
        "fit": [
            (12, 8, 0, 2, 2), (14, 316, 0, 2, 3), (16, 2, 0, 4, 2), (16, 64, 2, 2, 2), (18, 13, 1, 2, 3),
            (18, 200, 0, 4, 2), (20, 8, 0, 2, 2), (20, 32, 1, 4, 3), (21, 62, 0, 2, 2), (22, 13, 0, 2, 3),
            (22, 4, 2, 2, 2), (16, 600, 0, 2, 2),
        ],
        "check": [
            (16, 8, 0, 2, 2), (16, 13, 0, 4, 3), (16, 316, 0, 2, 3), (17, 100, 1, 2, 2), (18, 8, 0, 4, 2),
            (18, 600, 0, 2, 2), (19, 24, 2, 2, 3), (20, 13, 0, 2, 3), (20, 64, 0, 4, 2), (20, 316, 0, 2, 3),
            (21, 8, 1, 4, 2), (22, 8, 0, 2, 2), (22, 13, 0, 4, 3), (22, 62, 0, 2, 2), (17, 450, 0, 4, 2),
            (19, 150, 0, 2, 2), (21, 24, 1, 2, 2), (15, 40, 0, 2, 2), (22, 30, 1, 2, 2), (20, 600, 0, 2, 2),
        ],
    },
}
# fmt: on


def config_for(blowup: int):
    import dataclasses

    from jaxstark.examples.shape import shape_config

    return dataclasses.replace(shape_config(blowup), held_strategies=())  # the rounds as they are, nothing recomputed


def shape_air(c: int, a: int, d: int):
    from jaxstark.examples.shape import ShapeTable

    return ShapeTable(width=c, aux_columns=a, degree=d)


def record_one(shape: tuple[int, ...]) -> dict:
    """Plan one shape; every round's XLA figures and the held buffers by name."""
    import time

    import jaxstark as js

    log_n, c, a, b, d = shape
    t = time.perf_counter()
    plan = js.plan(shape_air(c, a, d), log_n, config_for(b))
    rounds = [
        dict(name=r.name, table=r.table, resident=dict(r.resident), arguments=r.arguments, outputs=r.outputs,
             temporaries=r.temporaries, aliased=r.aliased, total=r.total)
        for r in plan.rounds
    ]  # fmt: skip
    return dict(shape=list(shape), rounds=rounds, plan_s=round(time.perf_counter() - t, 1))


def record(
    grid: str, jobs: int, out: Path, only: str | None = None, reuse: Path | None = None, replan: str = "kernel"
) -> None:
    """Plan every shape of ``grid`` (or its fit or check shapes) and write the figures to ``out``.
    With ``reuse``, an earlier recording of the same grid on the same card: only the shapes
    ``replan`` names are planned -- ``"kernel"``, those whose composition the kernel sums now;
    ``"aux"``, those with aux columns -- and the others are taken from it as they are (each
    marked ``"reused"`` with the date it was recorded, the recording named in the meta). A change
    since that recording to what the kept shapes compile makes their figures stale, which the
    caller must rule out."""
    import jax

    from jaxstark.kernels import composition as composition_kernel
    from jaxstark.memory.model import kernel_sums
    from jaxstark.rounds.r4_fri_layer import scan_layers_below

    shapes = [(s, kind) for kind in ("fit", "check") if only in (None, kind) for s in GRIDS[grid][kind]]
    dev = jax.devices()[0]
    meta = dict(backend=dev.platform, device=dev.device_kind, jax=jax.__version__,
                date=datetime.date.today().isoformat(), command=" ".join(["python"] + sys.argv),
                device_row_floor_log2=config_for(2).device_row_floor_log2,
                scan_layers_below=scan_layers_below(dev.platform),
                composition_max_constraints=composition_kernel.MAX_CONSTRAINTS)  # fmt: skip
    kept: list[dict] = []
    if replan not in ("kernel", "aux"):
        raise SystemExit(f"--replan must be 'kernel' or 'aux', got {replan!r}")
    if reuse is None and replan != "kernel":
        raise SystemExit("--replan names the shapes planned again with --reuse: give --reuse too")
    if reuse is not None:
        if only is not None:
            raise SystemExit("--reuse takes the whole grid: it cannot be combined with --only")
        old = json.loads(reuse.read_text())
        for key in ("backend", "device", "device_row_floor_log2", "scan_layers_below"):  # one card: schedules differ
            if old["meta"].get(key) != meta[key]:
                raise SystemExit(f"--reuse {reuse}: its {key} is {old['meta'].get(key)!r}, here {meta[key]!r}")
        by_shape = {(tuple(e["shape"]), e["kind"]): e for e in old["data"]}
        todo = []
        for shape, kind in shapes:
            log_n, c, a, b, d = shape
            if a if replan == "aux" else kernel_sums(shape_air(c, a, d), c, dev.platform):
                todo.append((shape, kind))
            elif (tuple(shape), kind) in by_shape:
                entry = by_shape[tuple(shape), kind]
                kept.append(dict(entry, reused=entry.get("reused") or old["meta"].get("date")))
            else:
                raise SystemExit(f"--reuse {reuse}: it has no figures for {shape} ({kind})")
        shapes = todo
    path = os.pathsep.join(p for p in (str(Path(__file__).parent.parent), os.environ.get("PYTHONPATH")) if p)
    env = dict(os.environ, XLA_PYTHON_CLIENT_PREALLOCATE="false", PYTHONPATH=path)

    def one(item):
        shape, kind = item
        cmd = [sys.executable, __file__, "one", ",".join(map(str, shape))]
        res = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
        if res.returncode:
            raise RuntimeError(f"{shape}: {res.stderr[-2000:]}")
        entry = json.loads(res.stdout.strip().splitlines()[-1])
        entry["kind"] = kind
        print(f"planned {shape} ({kind}) in {entry['plan_s']} s", file=sys.stderr, flush=True)
        return entry

    if kept:
        meta["reused"] = dict(date=old["meta"].get("date"), device=old["meta"].get("device"),
                              jax=old["meta"].get("jax"), command=old["meta"].get("command"),
                              shapes=len(kept), replanned=replan)  # fmt: skip
    out.parent.mkdir(parents=True, exist_ok=True)
    data: list[dict] = list(kept)
    lock = threading.Lock()

    def save(entry):  # after every shape, so an interrupted run keeps what it planned
        with lock:
            data.append(entry)
            data.sort(key=lambda e: (e["kind"], e["shape"]))
            out.write_text(json.dumps(dict(meta=meta, data=data), indent=1) + "\n")

    with ThreadPoolExecutor(jobs) as pool:
        for fut in as_completed([pool.submit(one, item) for item in shapes]):
            try:
                save(fut.result())
            except RuntimeError as exc:
                print(f"failed: {exc}", file=sys.stderr, flush=True)
    data.sort(key=lambda e: (e["kind"], e["shape"]))
    out.write_text(json.dumps(dict(meta=meta, data=data), indent=1) + "\n")
    print(f"wrote {out} ({len(data) - len(kept)} of {len(shapes)} shapes planned, {len(kept)} reused)", file=sys.stderr)


def fit_max_linear(
    x, y, nnls, scale=None, max_pieces: int = 2, rounds: int = 40, under: float = 2.0, margin: float = 0.8
):
    """Temporaries as the largest of up to ``max_pieces`` non-negative linear forms in the
    features (XLA reuses temporary buffers, so a round's temporaries are the largest live set
    over the program, and which set is largest changes with the shape). Each form minimises the
    squared error relative to ``scale`` (the round's device set: an error in the temporaries
    matters as a share of what the round holds), an under-prediction weighted ``under`` times an
    over-prediction (the model answers "does it fit?": too small is the worse mistake; 2 gave
    the smallest worst peak error on the GPU's fit shapes of 2, 3 and 4). Candidates: one form,
    and ``2 .. max_pieces`` forms from several splits of the shapes (quantiles of each
    feature's share of the bytes, of the round's size and of its temporaries), refined by
    reassigning each shape to the form that predicts the most; the candidate with the smallest
    worst weighted error wins, a form more only when it cuts that error to ``margin`` of the
    fewer forms'. Returns the forms' coefficient vectors."""
    import numpy as np

    s = y if scale is None else scale

    def loss_terms(pred):
        r = (pred - y) / s
        return np.where(r < 0, under * -r, r)

    def solve(rows):
        a, b = x[rows] / s[rows, None], y[rows] / s[rows]
        w = nnls(a, b)[0]
        for _ in range(30):  # iteratively reweighted: under-predictions count ``under`` times
            r = a @ w - b
            wt = np.sqrt(np.where(r < 0, under, 1.0))
            w_new = nnls(a * wt[:, None], b * wt)[0]
            if np.allclose(w_new, w, rtol=1e-9, atol=0):
                break
            w = w_new
        return w

    def predict(ws):
        return np.max([x @ w for w in ws], axis=0)

    def score(ws):
        return float(np.max(loss_terms(predict(ws))))

    def refine(groups, k):
        ws = None
        for _ in range(rounds):
            if any(g.sum() == 0 for g in groups):
                return None
            ws = [solve(g) for g in groups]
            preds = np.array([x @ w for w in ws])
            new = [preds.argmax(0) == j for j in range(k)]
            if all((a == b).all() for a, b in zip(new, groups, strict=True)):
                break
            groups = new
        if ws is None or any(g.sum() == 0 for g in groups):
            return None
        return ws

    best = [solve(np.ones(len(y), bool))]
    if max_pieces < 2 or len(y) < 4:
        return best
    keys = [x[:, j] / y for j in range(x.shape[1])] + [np.log(s), np.log(y)]
    for k in range(2, max_pieces + 1):
        best_k = None
        for key in keys:
            cuts = np.quantile(key, np.linspace(0, 1, k + 1)[1:-1])
            label = np.searchsorted(cuts, key, side="left")
            ws = refine([label == j for j in range(k)], k)
            if ws is not None and (best_k is None or score(ws) < score(best_k)):
                best_k = ws
        if best_k is not None and score(best_k) < margin * score(best):
            best = best_k
    return best


def fit(path: Path) -> None:
    import numpy as np
    from scipy.optimize import nnls

    from jaxstark.kernels import composition as composition_kernel
    from jaxstark.memory.model import ROUND_FEATURES, features, kernel_sums, model, round_features
    from jaxstark.rounds import r4_fri_layer, registered

    blob = json.loads(path.read_text())
    backend, floor = blob["meta"]["backend"], blob["meta"].get("device_row_floor_log2", 0)
    # the FRI layers as the figures were cut (recordings made before the key: 2^10 on every platform)
    below = blob["meta"].get("scan_layers_below", 1 << 10)
    setattr(r4_fri_layer, r4_fri_layer.scan_threshold_name(backend), below)
    # the composition kernel taking the AIRs it took then (recordings made before the key: none)
    composition_kernel.MAX_CONSTRAINTS = blob["meta"].get("composition_max_constraints", 0)
    # tables below the row floor ran on the host CPU: not this backend's figures
    data = [e for e in blob["data"] if backend == "cpu" or e["shape"][0] >= floor]
    # recordings made while the statement was a program of its own list it first; it is now
    # absorbed on the host, its 32-byte transcript held like any other round's
    for e in data:
        if e["rounds"][0]["name"] == "statement":
            e["rounds"] = e["rounds"][1:]
    names = sorted({registered(r["name"]).name for e in data for r in e["rounds"]})  # every FRI layer: one fit
    coeffs = {}
    for name in names:
        xs, ys, totals = [], [], []
        for e in data:
            if e["kind"] != "fit":
                continue
            log_n, c, a, b, d = e["shape"]
            air = shape_air(c, a, d)
            summed = kernel_sums(air, c, backend)
            f = features(log_n, b, c, a, air.composition_parts, backend=backend, constraints=c, summed=summed)
            for r in e["rounds"]:
                if registered(r["name"]).name == name:
                    fr = round_features(r["name"], f, log_n, b, config_for(b).fri_final_degree, backend)
                    xs.append([fr[k] for k in ROUND_FEATURES[name]])
                    ys.append(max(r["temporaries"], 1))
                    totals.append(max(r["total"], 1))
        pieces = fit_max_linear(np.array(xs, float), np.array(ys, float), nnls, scale=np.array(totals, float))
        coeffs[name] = tuple(
            {k: float(f"{v:.4g}") for k, v in zip(ROUND_FEATURES[name], w, strict=True) if v} for w in pieces
        )
    print(f'    "{backend}": {{')
    for name in names:
        line = f'        "{name}": {coeffs[name]},'
        if len(line) <= 120:
            print(line)
        else:  # a form a line, within the project's line length
            print(f'        "{name}": (\n' + "".join(f"            {form},\n" for form in coeffs[name]) + "        ),")
    print("    },")
    worst = {"fit": 0.0, "check": 0.0}
    extremes = {"fit": [1.0, 1.0], "check": [1.0, 1.0]}  # lowest and highest model/XLA peak
    worst_round = {"fit": 0.0, "check": 0.0}
    for e in data:
        log_n, c, a, b, d = e["shape"]
        m = model(shape_air(c, a, d), log_n, config_for(b), backend=backend, coeffs=coeffs)
        xla = {r["name"]: r["total"] for r in e["rounds"]}
        ratios = {r.name: r.total / xla[r.name] for r in m.rounds}
        peak_ratio = m.peak / max(xla.values())
        worst[e["kind"]] = max(worst[e["kind"]], abs(peak_ratio - 1))
        lo_hi = extremes[e["kind"]]
        lo_hi[:] = [min(lo_hi[0], peak_ratio), max(lo_hi[1], peak_ratio)]
        worst_round[e["kind"]] = max(worst_round[e["kind"]], max(abs(v - 1) for v in ratios.values()))
        bad = {k: round(v, 3) for k, v in ratios.items() if abs(v - 1) > 0.1}
        peak = max(xla.values())
        print(f"{e['kind']:5} {e['shape']!s:24} XLA peak {peak:>15,} model/XLA {peak_ratio:.3f}  {bad or ''}")
    for kind in ("fit", "check"):
        lo, hi = extremes[kind]
        print(
            f"{kind}: worst peak error {worst[kind]:.1%} (model/XLA {lo:.3f} .. {hi:.3f}), "
            f"worst round error {worst_round[kind]:.1%}"
        )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record")
    r.add_argument("--grid", choices=sorted(GRIDS), default=None, help="default: the current backend's")
    r.add_argument("--jobs", type=int, default=2)
    r.add_argument("--out", type=Path, default=None)
    r.add_argument("--only", choices=("fit", "check"), default=None, help="record the grid's fit or check shapes only")
    r.add_argument(
        "--reuse",
        type=Path,
        default=None,
        help="an earlier recording on this card: keep its figures for the shapes --replan does not name",
    )
    r.add_argument(
        "--replan",
        choices=("kernel", "aux"),
        default="kernel",
        help="with --reuse, the shapes planned again: those the composition kernel takes (default) or with aux columns",
    )
    f = sub.add_parser("fit")
    f.add_argument("--data", type=Path, default=None)
    o = sub.add_parser("one")
    o.add_argument("shape")
    args = ap.parse_args(argv)
    if args.cmd == "one":
        print(json.dumps(record_one(tuple(int(x) for x in args.shape.split(",")))))
        return 0
    import jax

    backend = jax.default_backend()
    if args.cmd == "record":
        out = args.out or DATA / f"memory_{args.grid or backend}.json"
        record(args.grid or backend, args.jobs, out, args.only, args.reuse, args.replan)
    else:
        fit(args.data or DATA / f"memory_{backend}.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
