"""Package-level guarantees: 64-bit mode, the public surface, the layout."""

import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxstark
from jaxstark import gl
from jaxstark.errors import X64DisabledError

ROOT = Path(__file__).resolve().parents[1]


def test_import_enables_x64_and_elements_stay_uint64():
    assert jax.config.jax_enable_x64
    big = gl.from_int([gl.P - 1, 2**40])
    assert big.dtype == jnp.uint64
    assert int(big[0]) == gl.P - 1  # would be truncated in 32-bit mode
    out = gl.mul(big, big)
    assert out.dtype == jnp.uint64
    assert jax.jit(lambda x: gl.add(x, x))(big).dtype == jnp.uint64


def test_field_ops_refuse_to_run_if_x64_is_switched_off():
    jax.config.update("jax_enable_x64", False)
    try:
        with pytest.raises(X64DisabledError, match="jax_enable_x64 is off"):
            gl.add(np.uint64(1), np.uint64(2))
        with pytest.raises(X64DisabledError):
            gl.from_int([1])
    finally:
        jax.config.update("jax_enable_x64", True)


def test_x64_is_on_in_a_fresh_process_after_import():
    code = "import jaxstark, jax; print(jax.config.jax_enable_x64, jaxstark.gl.from_int([2**63]).dtype)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "uint64"]


def test_public_surface_is_pinned():
    assert sorted(jaxstark.__all__) == sorted(
        [
            # modules
            "errors", "field", "gl", "ext", "ntt", "lde", "poly", "hash", "merkle", "transcript",
            # proving
            "AIR", "Val", "Interaction", "StarkConfig", "Proof", "TableProof", "prove", "verify", "plan", "Plan",
            "Transcript", "clear_caches",
            # errors
            "JaxstarkError", "NonCanonicalError", "FieldDtypeError", "ShapeError", "X64DisabledError",
            "AirViolation", "BusImbalance", "InvalidProof", "ProofFormatError", "DeviceBudgetExceeded",
            "DeviceFailure",
        ]
    )  # fmt: skip
    for name in jaxstark.__all__:
        assert hasattr(jaxstark, name), name


def test_layout_reads_like_the_architecture():
    for path in ["jaxstark/rounds", "jaxstark/memory", "tests", "notebooks", "benchmarks", ".ci/run"]:
        assert (ROOT / path).exists(), path
