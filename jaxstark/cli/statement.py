"""The statement file ``jaxstark prove`` writes beside a proof (``PROOF.json``) and ``jaxstark
verify`` reads: what was proven -- each table's AIR (class and fields), height and public inputs
-- and the proof parameters. The proof itself binds all of them (the verifier rejects a proof
against any other statement); the file only saves retyping them.

Format (JSON)::

    {"format": "jaxstark statement v1",
     "config": {"blowup": 2, "num_queries": 40, "grinding_bits": 16, "fri_final_degree": 64, "hash": "blake3"},
     "tables": [{"air": "jaxstark.examples.alu:Alu", "fields": {"width": 13, "bus": false},
                 "log_n": 20, "public_inputs": []}]}

Verifying imports the AIR classes the file names: verify statements whose AIR code you trust.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from jaxstark.air import AIR
from jaxstark.cli.common import CliError, load_air
from jaxstark.config import StarkConfig

FORMAT = "jaxstark statement v1"
CONFIG_FIELDS = ("blowup", "num_queries", "grinding_bits", "fri_final_degree", "hash")


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


def read(path: Path) -> tuple[list[AIR], list[int], list[tuple[int, ...]], StarkConfig]:
    """(AIRs, heights, public inputs, config) from a statement file; CliError naming the problem."""
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise CliError(f"statement file {str(path)!r} does not exist (give the statement with --statement, or "
                       "--example / --air and the proof parameters)") from None  # fmt: skip
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CliError(f"statement file {str(path)!r} is not readable JSON ({exc})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise CliError(f"statement file {str(path)!r} is not a {FORMAT!r} file")
    try:
        config = StarkConfig(**{f: data["config"][f] for f in CONFIG_FIELDS})
        airs, log_ns, publics = [], [], []
        for i, t in enumerate(data["tables"]):
            air = load_air(t["air"], f"statement table {i}", **t["fields"])
            airs.append(air)
            log_ns.append(int(t["log_n"]))
            publics.append(tuple(int(v) for v in t["public_inputs"]))
    except CliError:
        raise
    except (KeyError, TypeError, ValueError) as exc:
        raise CliError(f"statement file {str(path)!r} is malformed: {type(exc).__name__}: {exc}") from None
    if not airs:
        raise CliError(f"statement file {str(path)!r} lists no tables")
    return airs, log_ns, publics, config
