"""The statement file ``jaxstark prove`` writes beside a proof (``PROOF.json``) and ``jaxstark
verify`` reads: what was proven -- each table's AIR (class and fields), height and public inputs
-- and the proof parameters. The proof itself binds all of them (the verifier rejects a proof
against any other statement); the file only saves retyping them.

Format (JSON)::

    {"format": "jaxstark statement v1",
     "config": {"blowup": 2, "num_queries": 40, "grinding_bits": 16, "fri_final_degree": 64, "hash": "blake3"},
     "tables": [{"air": "jaxstark.examples.alu:Alu", "fields": {"width": 13, "bus": false},
                 "log_n": 20, "public_inputs": []}]}

The file comes from the prover and is read as hostile input: an ``air`` entry must name a
subclass of :class:`jaxstark.AIR` (never a function, never anything else) in ``jaxstark`` or in a
module the verifying user trusts (``--trust MODULE`` or ``JAXSTARK_TRUST``), checked before
anything is imported; its ``fields`` must be plain data naming the class's own fields. The
proof parameters it carries are the prover's choice, so ``jaxstark verify`` holds them to its own
minimum security level; the heights it names are pinned (a proof of another height is rejected).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from jaxstark.air import AIR
from jaxstark.cli.common import CliError, statement_air
from jaxstark.config import StarkConfig

FORMAT = "jaxstark statement v1"
CONFIG_FIELDS = ("blowup", "num_queries", "grinding_bits", "fri_final_degree", "hash")
MAX_BYTES = 16 << 20  # a statement file is a few hundred bytes per table
MAX_TABLES = 4096


def describe_air(air: AIR) -> dict:
    """The AIR's class and fields, or a CliError when a field is not plain data."""
    cls = type(air)
    fields = {f.name: getattr(air, f.name) for f in dataclasses.fields(air)}
    for name, value in fields.items():
        if not isinstance(value, (bool, int, float, str, type(None))):
            raise CliError(
                f"{cls.__name__}.{name} is a {type(value).__name__}, not plain data: the statement file cannot name "
                "this AIR; verify with --air instead"
            )
    return {"air": f"{cls.__module__}:{cls.__qualname__}", "fields": fields}


def write(path: Path, airs, log_ns, publics, config: StarkConfig) -> None:
    tables = [
        dict(describe_air(air), log_n=int(log_n), public_inputs=[int(v) for v in public])
        for air, log_n, public in zip(airs, log_ns, publics, strict=True)
    ]
    data = {"format": FORMAT, "config": {f: getattr(config, f) for f in CONFIG_FIELDS}, "tables": tables}
    path.write_text(json.dumps(data, indent=1) + "\n")


def read(path: Path, trusted: tuple[str, ...]) -> tuple[list[AIR], list[int], list[tuple[int, ...]], StarkConfig]:
    """(AIRs, heights, public inputs, config) from a statement file; CliError naming the problem.
    AIRs only from ``trusted`` modules (:func:`~jaxstark.cli.common.trusted_modules`)."""
    name = repr(str(path))
    try:
        with path.open("rb") as f:
            raw = f.read(MAX_BYTES + 1)
    except FileNotFoundError:
        raise CliError(f"statement file {name} does not exist (give the statement with --statement, or "
                       "--example / --air and the proof parameters)") from None  # fmt: skip
    except OSError as exc:
        raise CliError(f"statement file {name} is not readable ({exc})") from None
    if len(raw) > MAX_BYTES:
        raise CliError(f"statement file {name} is larger than {MAX_BYTES >> 20} MiB")
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise CliError(f"statement file {name} is not readable JSON ({exc})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise CliError(f"statement file {name} is not a {FORMAT!r} file")
    bad = lambda what: CliError(f"statement file {name} is malformed: {what}")  # noqa: E731
    cfg, tables = data.get("config"), data.get("tables")
    if not isinstance(cfg, dict) or set(cfg) != set(CONFIG_FIELDS):
        raise bad(f"'config' must be an object with exactly the keys {list(CONFIG_FIELDS)}")
    try:
        config = StarkConfig(**{f: cfg[f] for f in CONFIG_FIELDS})
    except (TypeError, ValueError) as exc:
        raise bad(f"config: {exc}") from None
    if not isinstance(tables, list) or not 1 <= len(tables) <= MAX_TABLES:
        raise bad(f"'tables' must be a list of 1 ... {MAX_TABLES} tables")
    airs, log_ns, publics = [], [], []
    for i, t in enumerate(tables):
        where = f"statement table {i}"
        if not isinstance(t, dict) or set(t) != {"air", "fields", "log_n", "public_inputs"}:
            raise bad(f"table {i} must be an object with the keys air, fields, log_n, public_inputs")
        log_n, public = t["log_n"], t["public_inputs"]
        if not _is_int(log_n) or not 1 <= log_n <= 31:
            raise bad(f"table {i}: log_n must be an int in [1, 31], got {log_n!r:.40}")
        if not isinstance(public, list) or len(public) > 1 << 16 or not all(_is_int(v) for v in public):
            raise bad(f"table {i}: public_inputs must be a list of ints")
        airs.append(statement_air(t["air"], where, t["fields"], trusted))
        log_ns.append(log_n)
        publics.append(tuple(public))
    return airs, log_ns, publics, config


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)
