"""``jaxstark plan``: every round's device set, the binding round and the verdict, before anything runs."""

from __future__ import annotations

import dataclasses
import sys

import jaxstark as js
from jaxstark import compile_cache
from jaxstark.chunking import chunkable
from jaxstark.cli.common import (
    OK,
    OVER_BUDGET,
    CliError,
    add_config,
    add_memory,
    add_tables,
    check_log_rows,
    config_from,
    device_from,
    print_json,
    shapes_from,
    subcommand,
)
from jaxstark.examples.shape import ShapeTable
from jaxstark.memory.cards import CARDS, best_split, card_budget, frontier
from jaxstark.memory.model import model, within
from jaxstark.memory.plan import _size
from jaxstark.progress import TerminalProgress

HELP = """Plan a proof without running it. By default every round is compiled for the device it
would run on and XLA's own figures are read (what `prove` admits with; nothing is dispatched, so
shapes far larger than this machine's memory can be planned). With --model the closed-form
model gives the same device sets in milliseconds, compiling nothing (held buffers exact,
temporaries fitted per backend).

The table is an example (--example, --log-rows), your own AIR (--air MODULE:CLASS, --log-rows),
or a shape (--columns, --aux, --degree, --row-local, --log-rows). When the proof does not fit,
the plan shows how the planner would split a row-local table into row chunks."""

EXAMPLES = """examples:
  jaxstark plan --example alu --log-rows 16 --blowup 2
  jaxstark plan --columns 62 --log-rows 24 --blowup 2 --card h200 --model gpu
  jaxstark plan --columns 13 --row-local --log-rows 27 --blowup 2 --card 80 --model gpu --json
  jaxstark plan --example alu --log-rows 14 --budget-mb 4 --blowup 2     # over budget: the split"""


def add_parser(sub) -> None:
    ap = subcommand(sub, "plan", run, "every round's device set, the binding round, the verdict", HELP, EXAMPLES)
    add_tables(ap, traces=False)
    g = ap.add_argument_group("or a shape (no AIR needed)")
    g.add_argument("--columns", type=int, help="main columns of a stand-in table")
    g.add_argument("--aux", type=int, default=0, help="aux (LogUp, extension) columns (default 0)")
    g.add_argument("--degree", type=int, default=2, help="constraint degree, 1 ... 5 (default 2)")
    g.add_argument("--row-local", action="store_true", help="no constraint reads the next row (can be split)")
    add_config(ap)
    add_memory(ap)
    g = ap.add_argument_group("planning")
    g.add_argument("--card", help="plan for a card of this much memory: GiB, or a name (" + ", ".join(CARDS) + ")")
    g.add_argument(
        "--model",
        nargs="?",
        const="auto",
        choices=["auto", "cpu", "gpu"],
        help="the closed-form model instead of compiling (temporaries fitted for cpu or gpu; "
        "default: gpu with --card, else the device's)",
    )
    g.add_argument("--all-terms", action="store_true", help="every round term by term (default: the binding round)")
    g.add_argument("--json", action="store_true", help="print the plan as JSON (the same data as Plan.to_dict())")
    g.add_argument("--quiet", action="store_true", help="no compile progress on stderr")


def card_gib(text: str) -> float:
    """``--card``: a number of GiB, or (part of) a name in CARDS."""
    try:
        gib = float(text)
    except ValueError:
        hits = [v for k, v in CARDS.items() if text.lower() in k.lower()]
        if len(hits) != 1:
            raise CliError(f"--card {text!r}: give GiB or one of {list(CARDS)}") from None
        return hits[0]
    if not gib > 0:
        raise CliError(f"--card must be a positive number of GiB, got {text!r}")
    return gib


def run(args, ap) -> int:
    if args.card is not None and args.budget_mb is not None:
        ap.error("give --card or --budget-mb, not both")
    if args.card is not None:
        args.budget_mb = card_budget(card_gib(args.card)) / 2**20
    config = config_from(args, ap)
    if args.columns is not None:
        if args.example or args.air:
            ap.error("give a shape (--columns) or a table (--example / --air), not both")
        try:
            air = ShapeTable(width=args.columns, aux_columns=args.aux, degree=args.degree, local=args.row_local)
        except ValueError as exc:
            ap.error(str(exc).replace("ShapeTable.width", "--columns").replace("ShapeTable.", "--"))
        shapes = [(air, args.log_rows)]
    else:
        shapes = shapes_from(args, ap)
    check_log_rows(args, ap, 1, 31 - config.log_blowup)
    if args.model:
        return _model(args, config, shapes)
    return _compiled(args, config, shapes)


def _compiled(args, config, shapes) -> int:
    dev = device_from(args.device)
    progress = None if args.quiet else TerminalProgress(sys.stderr)
    plan = js.plan(shapes, config=config, device=dev, progress=progress)
    split = None
    if not plan.fits and config.max_chunk_rows_log2 is None and any(chunkable(a) for a, _ in shapes):
        auto = dataclasses.replace(config, max_chunk_rows_log2="auto")
        split = js.plan(shapes, config=auto, device=dev, progress=progress)
    if args.json:
        print_json(dict(mode="compiled", plan=plan.to_dict(), split=None if split is None else split.to_dict()))
        return OK if plan.fits else OVER_BUDGET
    print(plan)
    rounds = plan.rounds if args.all_terms else [plan.binding]
    for r in rounds:
        mark = " (binding)" if r is plan.binding else ""
        where = "all tables" if r.table is None else f"unit {r.table}"
        print(f"\n{where}, round '{r.name}' on {r.device}{mark}, term by term:")
        for name, b in plan.terms(r).items():
            print(f"  {name:52} {_size(b):>12}")
        print(f"  {'device set':52} {_size(r.total):>12}  of budget {_size(plan.budgets[r.device].bytes)}")
    print()
    kept = compile_cache.cache_dir()
    print(f"compiled rounds kept across runs in {kept} ({compile_cache.ENV}=off to stop)" if kept else
          f"compiled rounds are not kept across runs ({compile_cache.ENV} names a directory to keep them)")  # fmt: skip
    if plan.fits:
        share = plan.peak / plan.budgets[plan.binding.device].bytes
        print(f"verdict: fits (peak {_size(plan.peak)}, {100 * share:.0f}% of the budget)")
        return OK
    print("verdict: DOES NOT FIT; prove would refuse it before dispatching anything")
    if split is not None:
        words = [split.chunking(t) for t in range(len(shapes)) if split.chunking(t)]
        state = "fits" if split.fits else "still does not fit"
        print(
            f"with --chunk-rows auto the planner splits: {'; '.join(words) or 'nothing'} -> {state} "
            f"(peak {_size(split.peak)}, {split.binding.name})"
        )
    elif not any(chunkable(a) for a, _ in shapes):
        print(
            "no table can be split into row chunks (that needs a row-local AIR without boundary constraints): "
            "lower the blowup or use a larger device"
        )
    return OVER_BUDGET


def _model(args, config, shapes) -> int:
    backend = args.model
    if backend == "auto":
        backend = "gpu" if args.card is not None else ("cpu" if device_from(args.device).platform == "cpu" else "gpu")
    if args.budget_mb is not None:
        budget, source = int(args.budget_mb * 2**20), f"card {args.card}" if args.card else "--budget-mb"
    else:
        b = js.memory.device_budget(device_from(args.device))
        budget, source = b.bytes, b.source
    models = [model(air, log_n, config, backend=backend) for air, log_n in shapes]
    splits, held = [], []
    for (air, log_n), m in zip(shapes, models, strict=True):
        over = m.peak > budget and chunkable(air)
        best = best_split(frontier(air, log_n, config, budget, backend=backend)) if over else None
        splits.append(best)
        # the held-buffer strategies the planner would search, on the model's figures
        held.append(within(air, log_n, config, budget, backend=backend) if m.peak > budget else None)
    fits = all(m.peak <= budget or (w is not None and w.peak <= budget) for m, w in zip(models, held, strict=True))
    if args.json:
        print_json(
            dict(
                mode="model",
                backend=backend,
                budget=dict(bytes=budget, source=source),
                fits=fits,
                tables=[m.to_dict() for m in models],
                split=[None if s is None else dataclasses.asdict(s) for s in splits],
                held_strategies=[None if w is None else w.to_dict() for w in held],
            )
        )
        return OK if fits else OVER_BUDGET
    print(f"budget {_size(budget)} ({source}); closed-form model, nothing compiled")
    for (air, _), m, best, w in zip(shapes, models, splits, held, strict=True):
        print(f"\n{air.name}: " + str(m).replace("\n", "\n  "))
        if args.all_terms or m.peak > budget:
            print(f"  {m.binding.name} term by term:")
            for name, b in m.binding.terms().items():
                print(f"    {name:50} {_size(b):>12}")
        if w is not None and w.strategies():
            verdict = "fits" if w.peak <= budget else f"still over budget ({w.binding.name})"
            print(f"  the model's held-buffer strategies ({', '.join(config.held_strategies)} allowed): "
                  f"{w.strategies()}; peak {_size(w.peak)}, {verdict}")  # fmt: skip
        elif w is not None and config.held_strategies:
            print(f"  no held-buffer strategy ({', '.join(config.held_strategies)}) shrinks {m.binding.name}")
        elif w is not None:
            print("  held buffers kept on the device (no strategy allowed)")
        if m.peak > budget and not (w is not None and w.peak <= budget):
            if best is not None:
                print(
                    f"  over budget; the model's split: {best.chunks} chunks of 2^{best.chunk_rows_log2} rows, "
                    f"{best.group} at a time (group peak {_size(best.peak)})"
                )
            else:
                why = "no chunk height fits" if chunkable(air) else "cannot be split into chunks"
                print(f"  over budget; {why}")
    print(f"\nverdict: {'fits' if fits else 'DOES NOT FIT'}")
    return OK if fits else OVER_BUDGET
