"""The proof byte format's version field: this build writes version 4 and refuses any other,
naming the version it found (version 3 proofs hash Merkle nodes like leaves)."""

import struct

import numpy as np
import pytest

import jaxstark as js
from jaxstark.examples import EXAMPLES
from jaxstark.proof import MAGIC, VERSION, Proof, TableProof

RNG = np.random.default_rng(4)


def _field_value(name: str, kind: str):
    """A small value of the right kind for every field: digests and paths as bytes, the rest as
    field elements."""
    if kind == "s":
        return "fibonacci"
    if kind == "i":
        return 3
    if kind == "t":
        return tuple(RNG.integers(0, 256, (2, k, 32), dtype=np.uint8) for k in (3, 2))
    if name.endswith(("root", "roots", "paths", "nonce")):
        return RNG.integers(0, 256, (2, 32), dtype=np.uint8)
    return RNG.integers(0, 2**63, (2, 3), dtype=np.uint64)


def _proof_bytes() -> bytes:
    table = TableProof(**{name: _field_value(name, kind) for name, kind in TableProof.FIELDS})
    return Proof("a config", (table,), (0,)).to_bytes()


def _with_version(data: bytes, version: int) -> bytes:
    return data[: len(MAGIC)] + struct.pack("<H", version) + data[len(MAGIC) + 2 :]


def test_this_build_writes_and_reads_version_4():
    assert VERSION == 4
    data = _proof_bytes()
    assert data[: len(MAGIC) + 2] == MAGIC + b"\x04\x00"
    back = Proof.from_bytes(data)
    assert back.to_bytes() == data and back.config_id == "a config" and back.layout == (0,)


def test_a_version_3_proof_is_refused_naming_its_version():
    data = _with_version(_proof_bytes(), 3)
    with pytest.raises(js.ProofFormatError, match="proof format version 3 is not supported") as info:
        Proof.from_bytes(data)
    message = str(info.value)
    assert "reads version 4" in message and "domain-separated" in message


@pytest.mark.parametrize("version", [0, 1, 2, 5, 0xFFFF])
def test_every_other_version_is_refused_by_number(version):
    with pytest.raises(js.ProofFormatError, match=f"proof format version {version} is not supported"):
        Proof.from_bytes(_with_version(_proof_bytes(), version))


def test_verify_refuses_version_3_bytes_before_checking_anything_else():
    """Through the public entry point: the version is read before the proof's contents."""
    air, _, public = EXAMPLES["fibonacci"](3)
    cfg = js.StarkConfig(blowup=2, num_queries=4, grinding_bits=0, fri_final_degree=4)
    with pytest.raises(js.ProofFormatError, match="version 3"):
        js.verify(air, _with_version(_proof_bytes(), 3), public, cfg)
