"""What the subcommands share: exit codes, the options for the config, the memory and the tables,
and turning them into a :class:`~jaxstark.config.StarkConfig` and a list of tables."""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import math
import os
import re
import sys
from pathlib import Path

import jax
import numpy as np

from jaxstark.air import AIR
from jaxstark.config import HELD_STRATEGIES, StarkConfig
from jaxstark.examples import TABLE_EXAMPLES, example_shapes, example_tables
from jaxstark.hash import HASHES

# exit codes (documented in ``jaxstark --help``)
OK, REJECTED, USAGE, OVER_BUDGET, DEVICE_FAILURE = 0, 1, 2, 3, 4

EXIT_CODES = """exit codes:
  0  done: the plan fits, the proof was written, the proof verifies
  1  the proof was rejected (verify), with the reason
  2  bad arguments or input: unreadable or malformed files, a trace that violates its AIR
  3  over the memory budget: the planner refused before anything ran
  4  a device failed during an admitted run
  141  the output's reader went away (`jaxstark ... | head`)"""

DEFAULTS = StarkConfig()


class CliError(Exception):
    """A problem with the command line or its files: printed as ``jaxstark: error: ...``, exit 2."""


def subcommand(sub, name: str, run, help: str, description: str, epilog: str | None = None) -> argparse.ArgumentParser:
    """A subcommand's parser (descriptions printed as written) that runs ``run(args, parser)``."""
    ap = sub.add_parser(
        name, help=help, description=description, epilog=epilog, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.set_defaults(run=run, parser=ap)
    return ap


def add_config(ap: argparse.ArgumentParser, **defaults) -> None:
    """The proof parameters (they change the proof; the verifier needs the same)."""
    g = ap.add_argument_group("proof parameters (the verifier needs the same)")
    d = dict(blowup=DEFAULTS.blowup, queries=DEFAULTS.num_queries, grinding=DEFAULTS.grinding_bits) | defaults
    g.add_argument(
        "--blowup", type=int, default=d["blowup"], help="LDE blowup, a power of two >= 2 (default %(default)s)"
    )
    g.add_argument("--queries", type=int, default=d["queries"], help="FRI queries (default %(default)s)")
    g.add_argument("--grinding", type=int, default=d["grinding"], help="proof-of-work bits (default %(default)s)")
    g.add_argument(
        "--fri-final-degree",
        type=int,
        default=DEFAULTS.fri_final_degree,
        help="FRI stops folding at this degree bound (default %(default)s)",
    )
    g.add_argument("--hash", choices=sorted(HASHES), default=DEFAULTS.hash, help="Merkle and transcript hash")


def add_memory(ap: argparse.ArgumentParser) -> None:
    """Where the proof runs and within what budget (they never change the proof)."""
    g = ap.add_argument_group("device and memory (they never change the proof)")
    g.add_argument(
        "--device",
        choices=["cpu", "gpu", "default"],
        default="cpu",
        help="where the rounds run (default cpu; 'default': JAX's default device)",
    )
    g.add_argument("--budget-mb", type=float, help="the device budget in MiB (default: from the device)")
    g.add_argument(
        "--chunk-rows",
        metavar="K|auto",
        help="split taller row-local tables into chunks of 2^K rows; 'auto': only when over budget",
    )
    g.add_argument("--chunk-group", type=int, metavar="G", help="prove G chunks at a time (default: the planner's)")
    g.add_argument(
        "--keep-held",
        action="store_true",
        help="keep every buffer held between rounds on the device (the same as --held-strategies none)",
    )
    g.add_argument(
        "--held-strategies",
        metavar="LIST",
        help="what the planner may do with buffers held between rounds when keeping them does not fit: "
        f"comma-separated from {','.join(HELD_STRATEGIES)} (recompute: a tree is built again where it is "
        "opened; park: copied to host memory and back; blocks: the out-of-domain, DEEP and composition "
        "rounds in more blocks of rows), or 'none' (default: "
        f"{','.join(DEFAULTS.held_strategies)})",
    )


def add_tables(ap: argparse.ArgumentParser, *, traces: bool, log_rows: int | None = 10) -> None:
    """An example, or user AIRs (``module:Class``) with their traces and public inputs."""
    g = ap.add_argument_group("the statement: an example, or your own AIRs")
    g.add_argument("--example", choices=TABLE_EXAMPLES, help="a built-in example (machine: three tables, two buses)")
    g.add_argument(
        "--log-rows",
        type=int,
        default=log_rows,
        help="the example's height is 2^LOG_ROWS (default %(default)s)"
        if log_rows is not None
        else "the tables' height is 2^LOG_ROWS (the example's default 10; with --air, unpinned when not given)",
    )
    g.add_argument(
        "--air",
        action="append",
        default=[],
        metavar="MODULE:CLASS",
        help="an AIR class (constructed with no arguments) or factory; repeat for several tables",
    )
    if traces:
        g.add_argument(
            "--trace",
            action="append",
            default=[],
            type=Path,
            metavar="FILE.npy",
            help="a uint64 (rows, width) .npy trace per --air, in the same order",
        )
    g.add_argument(
        "--public",
        action="append",
        default=[],
        metavar="A,B,...",
        help="public inputs of each --air table, comma-separated ('' for none)",
    )


def _held_strategies(args: argparse.Namespace, ap: argparse.ArgumentParser) -> tuple[str, ...]:
    """``--keep-held`` / ``--held-strategies`` as StarkConfig.held_strategies."""
    text = getattr(args, "held_strategies", None)
    if getattr(args, "keep_held", False):
        if text is not None and text.strip() != "none":
            ap.error(f"--keep-held keeps every held buffer on the device; it contradicts --held-strategies {text}")
        return ()
    if text is None:
        return DEFAULTS.held_strategies
    if text.strip() == "none":
        return ()
    names = tuple(n.strip() for n in text.split(","))
    bad = [n for n in names if n not in HELD_STRATEGIES]
    if bad or len(set(names)) != len(names):
        ap.error(f"--held-strategies: expected distinct names from {','.join(HELD_STRATEGIES)} or 'none', got {text!r}")
    return names


def config_from(args: argparse.Namespace, ap: argparse.ArgumentParser) -> StarkConfig:
    chunk_rows = getattr(args, "chunk_rows", None)
    if chunk_rows is not None and chunk_rows != "auto":
        try:
            chunk_rows = int(chunk_rows)
        except ValueError:
            ap.error(f"--chunk-rows must be an int or 'auto', got {chunk_rows!r}")
    try:
        return StarkConfig(
            blowup=args.blowup,
            num_queries=args.queries,
            grinding_bits=args.grinding,
            fri_final_degree=args.fri_final_degree,
            hash=args.hash,
            vram_budget_mb=getattr(args, "budget_mb", None),
            max_chunk_rows_log2=chunk_rows,
            chunk_group=getattr(args, "chunk_group", None),
            held_strategies=_held_strategies(args, ap),
        )
    except ValueError as exc:
        ap.error(str(exc).replace("StarkConfig.", "").replace("num_queries", "queries"))


def device_from(kind: str) -> jax.Device:
    if kind == "default":
        return jax.devices()[0]
    try:
        return jax.devices(kind)[0]
    except RuntimeError as exc:
        raise CliError(f"no {kind} device available ({exc})") from None


TRUST_ENV = "JAXSTARK_TRUST"
_MODULE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")


def _split(spec: str, where: str) -> tuple[str, str]:
    module, _, name = spec.partition(":")
    if not _MODULE.fullmatch(module) or not _MODULE.fullmatch(name):
        raise CliError(f"{where} must be MODULE:CLASS (dotted Python names), got {spec!r}")
    return module, name


def resolve(spec: str, where: str = "--air"):
    """The object ``module:name`` names (``name`` may be dotted). Imports ``module``: call it only
    for a module whose code is trusted (the command line's own, or :func:`check_trusted`)."""
    module, name = _split(spec, where)
    try:
        obj = importlib.import_module(module)
    except ImportError as exc:
        raise CliError(f"{where} {spec}: cannot import {module!r} ({exc})") from None
    for part in name.split("."):
        if part.startswith("_") or not hasattr(obj, part):
            raise CliError(f"{where} {spec}: {module!r} has no public {name!r}")
        obj = getattr(obj, part)
    return obj


def trusted_modules(cli: list[str] | None = None) -> tuple[str, ...]:
    """The modules whose AIRs a statement file may name: ``jaxstark`` itself, every ``--trust
    MODULE`` and every name in ``JAXSTARK_TRUST`` (comma-separated); each with its submodules."""
    names = ["jaxstark", *(cli or []), *os.environ.get(TRUST_ENV, "").split(",")]
    out = []
    for n in (n.strip() for n in names):
        if not n:
            continue
        if not _MODULE.fullmatch(n):
            raise CliError(f"--trust / {TRUST_ENV}: {n!r} is not a module name")
        out.append(n)
    return tuple(dict.fromkeys(out))


def check_trusted(module: str, trusted: tuple[str, ...], where: str) -> None:
    """Refuse (before anything is imported) a module that is not one of ``trusted`` or below one."""
    if not any(module == t or module.startswith(t + ".") for t in trusted):
        top = module.split(".")[0]
        raise CliError(
            f"{where} names an AIR from module {module!r}, which is not trusted: a statement file may name only AIRs "
            f"from jaxstark or from modules you trust, because importing a module runs its code. If you trust its "
            f"code, add --trust {top} (or set {TRUST_ENV}={top}); nothing was imported"
        )


def air_class(spec: str, where: str, trusted: tuple[str, ...]):
    """The class ``module:Name`` names, checked to be a subclass of :class:`jaxstark.AIR`
    defined in a trusted module. ``Name`` is one identifier looked up in the module's namespace
    (no attribute walking: a module's ``__getattr__`` or a property could run code); nothing
    but the import of ``module`` runs."""
    module, name = _split(spec, where)
    if "." in name or name.startswith("_"):
        raise CliError(f"{where} {spec}: a statement file names a class as MODULE:Class (one public name)")
    try:
        mod = importlib.import_module(module)
    except ImportError as exc:
        raise CliError(f"{where} {spec}: cannot import {module!r} ({exc})") from None
    obj = vars(mod).get(name)
    if not isinstance(obj, type) or not issubclass(obj, AIR) or obj is AIR:
        raise CliError(f"{where} {spec}: is a {type(obj).__name__}, not a jaxstark.AIR subclass")
    check_trusted(obj.__module__, trusted, f"{where} {spec} (defined in {obj.__module__!r})")
    return obj


def construct(cls, spec: str, where: str, fields: dict) -> AIR:
    """``cls(**fields)`` for an AIR class and plain-data ``fields`` that name its own fields."""
    known = {f.name for f in dataclasses.fields(cls)}
    for name, value in fields.items():
        if not isinstance(name, str) or name not in known:
            raise CliError(f"{where} {spec}: {name!r} is not a field of {cls.__name__} (fields: {sorted(known)})")
        if not isinstance(value, (bool, int, float, str, type(None))):
            raise CliError(f"{where} {spec}: field {name!r} is a {type(value).__name__}, not plain data")
        if isinstance(value, int) and not -(2**64) < value < 2**64 or isinstance(value, str) and len(value) > 256:
            raise CliError(f"{where} {spec}: field {name!r} is out of bounds (ints below 2^64, strings of 256)")
        if isinstance(value, float) and not math.isfinite(value):
            raise CliError(f"{where} {spec}: field {name!r} is not a finite number")
    try:
        air = cls(**fields)
    except Exception as exc:  # noqa: BLE001 -- the AIR's constructor may raise anything
        raise CliError(f"{where} {spec}: constructing it failed: {type(exc).__name__}: {exc}") from None
    if not isinstance(air, AIR):
        raise CliError(f"{where} {spec}: gave a {type(air).__name__}, not a jaxstark.AIR")
    return air


def statement_air(spec: str, where: str, fields: dict, trusted: tuple[str, ...]) -> AIR:
    """An AIR named by a statement file (hostile input): a trusted module, a subclass of
    :class:`jaxstark.AIR` (no factories), plain-data fields it declares."""
    if not isinstance(spec, str):
        raise CliError(f"{where}: the AIR must be a 'module:Class' string, got {type(spec).__name__}")
    if not isinstance(fields, dict):
        raise CliError(f"{where}: the AIR's fields must be an object, got {type(fields).__name__}")
    module, _ = _split(spec, where)
    check_trusted(module, trusted, where)
    return construct(air_class(spec, where, trusted), spec, where, fields)


def load_air(spec: str, where: str = "--air") -> AIR:
    """``module:Class`` from the command line -> an AIR instance: an AIR subclass (checked before
    it is called) constructed with no arguments, or a factory function returning an AIR."""
    obj = resolve(spec, where)
    if isinstance(obj, type):
        if not issubclass(obj, AIR) or obj is AIR:
            raise CliError(f"{where} {spec}: is the class {obj.__name__}, not a jaxstark.AIR subclass")
        return construct(obj, spec, where, {})
    if not callable(obj):
        raise CliError(f"{where} {spec}: is a {type(obj).__name__}, not an AIR class or factory")
    try:
        air = obj()
    except Exception as exc:  # noqa: BLE001 -- the user's factory may raise anything
        raise CliError(f"{where} {spec}: calling it failed: {type(exc).__name__}: {exc}") from None
    if not isinstance(air, AIR):
        raise CliError(f"{where} {spec}: gave a {type(air).__name__}, not a jaxstark.AIR")
    return air


def load_trace(path: Path, air: AIR) -> np.ndarray:
    try:
        trace = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise CliError(f"trace file {str(path)!r} does not exist") from None
    except (OSError, ValueError) as exc:
        raise CliError(f"trace file {str(path)!r} is not a readable .npy array ({exc})") from None
    if trace.dtype != np.uint64:
        raise CliError(f"trace file {str(path)!r} holds {trace.dtype}; a uint64 (rows, {air.width}) array is needed")
    return trace


def parse_public(text: str, where: str) -> tuple[int, ...]:
    try:
        return tuple(int(x, 0) for x in text.split(",") if x.strip())
    except ValueError:
        raise CliError(f"{where}: public inputs must be comma-separated integers, got {text!r}") from None


def user_tables(args, ap, traces: bool):
    if args.example:
        ap.error("give either --example or --air, not both")
    n = len(args.air)
    if args.public and len(args.public) != n:
        ap.error(f"--public is given {len(args.public)} time(s) for {n} --air table(s); give it once per table")
    if traces and len(args.trace) != n:
        ap.error(f"--trace is given {len(args.trace)} time(s) for {n} --air table(s); give one .npy file per table")
    airs = [load_air(spec) for spec in args.air]
    publics = [parse_public(p, f"--public of table {i}") for i, p in enumerate(args.public)] or [()] * n
    return airs, publics


def tables_from(args, ap) -> list[tuple]:
    """``[(air, trace, public_inputs), ...]`` for ``prove``."""
    if not args.air:
        return example_tables(args.example or "fibonacci", args.log_rows)
    airs, publics = user_tables(args, ap, traces=True)
    return [(a, load_trace(t, a), p) for a, t, p in zip(airs, args.trace, publics, strict=True)]


def shapes_from(args, ap) -> list[tuple[AIR, int]]:
    """``[(air, log2 rows), ...]`` for ``plan`` (no traces are built)."""
    if not args.air:
        return example_shapes(args.example or "fibonacci", args.log_rows)
    airs, _ = user_tables(args, ap, traces=False)
    return [(a, args.log_rows) for a in airs]


def check_log_rows(args, ap, lowest: int = 1, highest: int = 30) -> None:
    if not lowest <= args.log_rows <= highest:
        ap.error(f"--log-rows must be in [{lowest}, {highest}], got {args.log_rows}")


def print_json(data) -> None:
    json.dump(data, sys.stdout, indent=1, sort_keys=False)
    sys.stdout.write("\n")
