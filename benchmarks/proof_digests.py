"""The sha256 of the proofs of a few fixed statements, for checking that a change meant to
leave the protocol alone leaves proof bytes identical: run it before and after, compare.

    python benchmarks/proof_digests.py

Fibonacci 2^5 under BLAKE3, Keccak-256 and Poseidon2, the two-table bus statement of
``tests/attacks.py``, ALU 2^10 (on the CPU one FRI layer dispatched alone, then the scanned ones),
the three-table machine and the wide example. Deterministic: same code, same digests.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import numpy as np

import jaxstark as js
from jaxstark.examples import EXAMPLES
from jaxstark.examples.machine import machine_example

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests import attacks  # noqa: E402  (the honest statements the attack tests start from)


def statements():
    b3 = js.StarkConfig(blowup=2, num_queries=8, grinding_bits=2, fri_final_degree=4)
    kc = js.StarkConfig(blowup=4, num_queries=6, grinding_bits=0, fri_final_degree=2, hash="keccak256")
    p2 = js.StarkConfig(blowup=2, num_queries=5, grinding_bits=1, fri_final_degree=4, hash="poseidon2")
    air, trace, public = EXAMPLES["fibonacci"](5)
    trace = np.asarray(trace)
    for name, cfg in (("fibonacci 2^5 blake3", b3), ("fibonacci 2^5 keccak256", kc), ("fibonacci 2^5 poseidon2", p2)):
        yield name, lambda cfg=cfg: js.prove(air, trace, public, cfg)
    yield "bus 16 + 16 rows", lambda: js.prove([(a, t) for a, t, _ in attacks.bus_tables()], config=b3)
    alu, alu_trace, alu_public = EXAMPLES["alu"](10)
    yield "alu 2^10", lambda: js.prove(alu, np.asarray(alu_trace), alu_public, b3)
    machine = js.StarkConfig(blowup=2, num_queries=10, grinding_bits=2, fri_final_degree=4)
    yield "machine 2^6", lambda: js.prove(machine_example(6, bits=4), config=machine)
    wide, wide_trace, wide_public = EXAMPLES["wide"](3)
    yield "wide 2^3", lambda: js.prove(wide, np.asarray(wide_trace), wide_public, b3)


def main() -> None:
    for name, prove in statements():
        data = prove().to_bytes()
        print(f"{name:26} {len(data):7d} B  {hashlib.sha256(data).hexdigest()[:16]}", flush=True)


if __name__ == "__main__":
    main()
