"""``jaxstark bench``: run the benchmark scripts of ``benchmarks/`` on the current device."""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

from jaxstark.cli.common import OK, REJECTED, CliError, subcommand

# script, what it measures, its arguments for --quick (tiny sizes: a smoke test of the suite)
SUITE: dict[str, tuple[str, list[str]]] = {
    "speed": ("NTT, LDE, Merkle trees and the trace commit: time, bandwidth, targets", ["--quick", "--repeats", "2"]),
    "ntt": ("NTT and coset LDE against the device's copy bandwidth", ["--quick", "--repeats", "2"]),
    "merkle": ("leaf hashing and Merkle trees, per hash", ["--quick", "--repeats", "1"]),
    "stark": ("prove and verify the examples", ["--sizes", "3", "--alu-sizes", "", "--blowups", "2",
                                                "--examples", "fibonacci", "--quick", "--repeats", "1"]),
    "verify": ("warm verification time (host CPU)", []),
    "compile": ("compile time of each round", []),
    "memory": ("planned against measured peak memory, a fresh process per shape (GPU)", []),
    "chunks": ("a tall ALU table through chunk groups on 1 and 2 devices (GPU)", []),
    "row_floor": ("where the accelerator overtakes the host CPU (GPU)", []),
}  # fmt: skip
DEFAULT = ("speed", "ntt", "merkle", "stark")

HELP = """Run the benchmark suite: each script of benchmarks/ prints a table and writes JSON to
benchmarks/out/ (recorded results, with date, device and command: benchmarks/RESULTS.md).
Arguments after `--` go to every script run. The suite ships with the source tree (a git
clone, installed with `pip install -e .`)."""


def add_parser(sub) -> None:
    lines = "\n".join(f"  {name:10} {what}" for name, (what, _) in SUITE.items())
    epilog = "benchmarks:\n" + lines + f"\n(default: {', '.join(DEFAULT)})"
    ap = subcommand(sub, "bench", run, "run the benchmark suite on the current device", HELP, epilog)
    ap.add_argument("--only", help="comma-separated benchmarks to run (default: " + ",".join(DEFAULT) + ")")
    ap.add_argument("--quick", action="store_true", help="tiny sizes: check that the suite runs")
    ap.add_argument("--dir", type=Path, help="the benchmarks folder (default: the source tree's)")
    ap.add_argument("extra", nargs=argparse.REMAINDER, help="after --: arguments for every script")


def benchmarks_dir(given: Path | None) -> Path:
    import jaxstark

    path = given or Path(jaxstark.__file__).resolve().parents[1] / "benchmarks"
    if not (path / "common.py").is_file():
        raise CliError(
            f"no benchmark suite at {path}: it ships with the source tree (git clone, pip install -e .); "
            "point --dir at a checkout's benchmarks/ folder"
        )
    return path


def run(args, ap) -> int:
    names = args.only.split(",") if args.only else list(DEFAULT)
    unknown = [n for n in names if n not in SUITE]
    if unknown:
        ap.error(f"unknown benchmark(s) {unknown}; choose from {list(SUITE)}")
    where = benchmarks_dir(args.dir)
    extra = args.extra[1:] if args.extra[:1] == ["--"] else args.extra
    results = []
    for name in names:
        cmd = [sys.executable, str(where / f"bench_{name}.py"), *(SUITE[name][1] if args.quick else []), *extra]
        print(f"== {name}: {SUITE[name][0]}\n$ {' '.join(cmd)}", flush=True)
        start = time.perf_counter()
        code = subprocess.call(cmd, cwd=where.parent)
        results.append((name, code, time.perf_counter() - start))
    print("\n== summary")
    for name, code, seconds in results:
        print(f"  {name:10} {'ok' if code == 0 else f'FAILED (exit {code})':18} {seconds:7.1f} s")
    return OK if all(code == 0 for _, code, _ in results) else REJECTED
