"""The command-line arguments that name a proof's shape and config, shared by the benchmarks
(standard library only: a benchmark may set environment variables before JAX is imported)."""

from __future__ import annotations

import argparse


def add_proof_args(ap: argparse.ArgumentParser) -> None:
    """``--example --log-rows --blowup --queries --grinding --hash --device``."""
    ap.add_argument("--example", default="alu")
    ap.add_argument("--log-rows", type=int, default=12)
    ap.add_argument("--blowup", type=int, default=2)
    ap.add_argument("--queries", type=int, default=40)
    ap.add_argument("--grinding", type=int, default=16)
    ap.add_argument("--hash", default="blake3")
    ap.add_argument("--device", default="cpu", choices=("cpu", "gpu"))
