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
            "Transcript",
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


def test_main_job_runs_and_checks_itself():
    out = subprocess.run(
        [sys.executable, "-m", "jaxstark", "--log-rows", "4", "--blowup", "2", "--queries", "8", "--grinding", "2"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    assert "verified   OK" in out.stdout and "trace paths" in out.stdout


def test_main_job_rejects_bad_arguments():
    out = subprocess.run(
        [sys.executable, "-m", "jaxstark", "--blowup", "3"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert out.returncode != 0
    assert "blowup must be a power of two" in out.stderr


def test_ntt_benchmark_quick_mode_runs(tmp_path):
    out = subprocess.run(
        [
            sys.executable,
            "benchmarks/bench_ntt.py",
            "--quick",
            "--repeats",
            "2",
            "--json",
            str(tmp_path / "b.json"),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    assert "cpu-exact" in out.stdout and (tmp_path / "b.json").exists()


def test_merkle_benchmark_quick_mode_runs(tmp_path):
    out = subprocess.run(
        [sys.executable, "benchmarks/bench_merkle.py", "--quick", "--repeats", "1", "--json", str(tmp_path / "m.json")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("cpu-exact") == 12 and (tmp_path / "m.json").exists()


def test_stark_benchmark_quick_mode_runs(tmp_path):
    cmd = [sys.executable, "benchmarks/bench_stark.py", "--sizes", "3", "--alu-sizes", "", "--blowups", "2"]
    cmd += ["--examples", "fibonacci", "--quick", "--repeats", "1", "--json", str(tmp_path / "s.json")]
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert out.returncode == 0, out.stderr
    assert "fibonacci 2^3 x 2 b2" in out.stdout and (tmp_path / "s.json").exists()
