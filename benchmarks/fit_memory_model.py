"""XLA's memory figures for a grid of table shapes, and the memory model's temporaries fitted to them.

    python benchmarks/fit_memory_model.py record [--grid cpu|gpu] [--jobs 2]   # plan every shape
    python benchmarks/fit_memory_model.py fit [--data FILE]                    # fit, print, check

``record`` plans every shape of the grid with ``jaxstark.plan`` (a :class:`ShapeTable` stand-in of
the shape; every round compiled for the default device, nothing dispatched), each shape in a fresh
process, and writes every round's figures to ``benchmarks/data/memory_<backend>.json``.

``fit`` fits each round's temporaries as a non-negative linear form in the model's features
(:data:`jaxstark.memory.model.FEATURES`), minimising the *relative* error, on the shapes marked
``fit`` only; prints the coefficients to paste into :data:`jaxstark.memory.model.TEMP_COEFFS` and
the model's error on every shape, the held-out ones separately. ``tests/test_memory_model.py``
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
    from jaxstark.examples.shape import shape_config

    return shape_config(blowup)


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


def record(grid: str, jobs: int, out: Path) -> None:
    import jax

    shapes = [(s, kind) for kind in ("fit", "check") for s in GRIDS[grid][kind]]
    env = dict(os.environ, XLA_PYTHON_CLIENT_PREALLOCATE="false", PYTHONPATH=str(Path(__file__).parent.parent))

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

    dev = jax.devices()[0]
    meta = dict(backend=dev.platform, device=dev.device_kind, jax=jax.__version__,
                date=datetime.date.today().isoformat(), command=" ".join(["python"] + sys.argv),
                device_row_floor_log2=config_for(2).device_row_floor_log2)  # fmt: skip
    out.parent.mkdir(parents=True, exist_ok=True)
    data: list[dict] = []
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
    print(f"wrote {out} ({len(data)} of {len(shapes)} shapes)", file=sys.stderr)


def fit_max_linear(x, y, nnls, max_pieces: int = 2, rounds: int = 40):
    """Temporaries as the largest of up to ``max_pieces`` non-negative linear forms in the
    features (XLA reuses temporary buffers, so a round's temporaries are the largest live set
    over the program, and which set is largest changes with the shape), fitted for the smallest
    relative error. Returns the forms' coefficient vectors."""
    import numpy as np

    def solve(rows):
        return nnls(x[rows] / y[rows, None], np.ones(int(rows.sum())))[0]

    def worst(ws):
        pred = np.max([x @ w for w in ws], axis=0)
        return float(np.max(np.abs(pred / y - 1)))

    everything = np.ones(len(y), bool)
    best = [solve(everything)]
    if max_pieces < 2 or len(y) < 4:
        return best
    for j in range(x.shape[1]):  # initial splits: by each feature's share of the bytes
        key = x[:, j] / y
        groups = [key <= np.median(key), key > np.median(key)]
        for _ in range(rounds):
            if min(g.sum() for g in groups) == 0:
                break
            ws = [solve(g) for g in groups]
            preds = np.array([x @ w for w in ws])
            new = [preds.argmax(0) == k for k in range(2)]
            if all((a == b).all() for a, b in zip(new, groups, strict=True)):
                break
            groups = new
        else:
            ws = [solve(g) for g in groups]
        if min(g.sum() for g in groups) and worst(ws) < worst(best):
            best = ws
    return best


def fit(path: Path) -> None:
    import numpy as np
    from scipy.optimize import nnls

    from jaxstark.memory.model import ROUND_FEATURES, features, model

    blob = json.loads(path.read_text())
    backend, floor = blob["meta"]["backend"], blob["meta"].get("device_row_floor_log2", 0)
    # tables below the row floor ran on the host CPU: not this backend's figures
    data = [e for e in blob["data"] if backend == "cpu" or e["shape"][0] >= floor]
    names = sorted({r["name"] for e in data for r in e["rounds"]})
    coeffs = {}
    for name in names:
        xs, ys = [], []
        for e in data:
            if e["kind"] != "fit":
                continue
            log_n, c, a, b, d = e["shape"]
            f = features(log_n, b, c, a, shape_air(c, a, d).composition_parts)
            for r in e["rounds"]:
                if r["name"] == name:
                    xs.append([f[k] for k in ROUND_FEATURES[name]])
                    ys.append(max(r["temporaries"], 1))
        pieces = fit_max_linear(np.array(xs, float), np.array(ys, float), nnls)
        coeffs[name] = tuple(
            {k: float(f"{v:.4g}") for k, v in zip(ROUND_FEATURES[name], w, strict=True) if v} for w in pieces
        )
    print(f'    "{backend}": {{')
    for name in names:
        print(f'        "{name}": {coeffs[name]},')
    print("    },")
    worst = {"fit": 0.0, "check": 0.0}
    worst_round = {"fit": 0.0, "check": 0.0}
    for e in data:
        log_n, c, a, b, d = e["shape"]
        m = model(shape_air(c, a, d), log_n, config_for(b), backend=backend, coeffs=coeffs)
        xla = {r["name"]: r["total"] for r in e["rounds"]}
        ratios = {r.name: r.total / xla[r.name] for r in m.rounds}
        peak_ratio = m.peak / max(xla.values())
        worst[e["kind"]] = max(worst[e["kind"]], abs(peak_ratio - 1))
        worst_round[e["kind"]] = max(worst_round[e["kind"]], max(abs(v - 1) for v in ratios.values()))
        bad = {k: round(v, 3) for k, v in ratios.items() if abs(v - 1) > 0.1}
        peak = max(xla.values())
        print(f"{e['kind']:5} {e['shape']!s:24} XLA peak {peak:>15,} model/XLA {peak_ratio:.3f}  {bad or ''}")
    for kind in ("fit", "check"):
        print(f"{kind}: worst peak error {worst[kind]:.1%}, worst round error {worst_round[kind]:.1%}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record")
    r.add_argument("--grid", choices=sorted(GRIDS), default=None, help="default: the current backend's")
    r.add_argument("--jobs", type=int, default=2)
    r.add_argument("--out", type=Path, default=None)
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
        record(args.grid or backend, args.jobs, args.out or DATA / f"memory_{args.grid or backend}.json")
    else:
        fit(args.data or DATA / f"memory_{backend}.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
