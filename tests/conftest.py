"""Test-wide settings.

* Strict dtype promotion: a silent uint32 -> int64 (or any other implicit) promotion inside
  jaxstark raises instead of quietly changing field elements.
* ``gpu`` marker: such tests are skipped unless JAX sees a CUDA device.
* One persistent compilation cache per test run (``JAX_COMPILATION_CACHE_DIR``, unless the
  caller set one), shared by the xdist workers and the processes the tests start: a round
  compiled by one of them is loaded by the others instead of compiled again.
* Compiled programs are dropped after each test module (:func:`jaxstark.clear_caches`): a
  worker runs many modules, and every executable each one compiled would otherwise stay
  resident to the end of the run (the persistent cache above still serves a program asked for
  again).
* The suite's time is mostly XLA compiling small programs, so the tests compile with LLVM's
  optimisation off (``--xla_backend_optimization_level=0`` in ``XLA_FLAGS``, unless the caller
  chose a level; inherited by the processes the tests start). It changes how fast the compiled
  code runs, not what it computes: 37 -> 29 s and 47 -> 41 s for two proof tests on a 2-core CPU.
* Every program the tests compile, not only jaxstark's rounds, uses XLA:CPU's elemental fusion
  emitters (``--xla_cpu_use_fusion_emitters=false``, as :data:`jaxstark.compile_cache.CPU_COMPILER_OPTIONS`
  asks for the rounds), unless the caller named that flag or this XLA does not know it.
"""

import gc
import os
import tempfile

if "xla_backend_optimization_level" not in os.environ.get("XLA_FLAGS", ""):  # before JAX's backend starts
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_backend_optimization_level=0").strip()
_EMITTERS = "--xla_cpu_use_fusion_emitters=false"


def _xla_knows(flag: str) -> bool:
    """Whether this jaxlib's XLA parses ``flag`` (an unknown flag in ``XLA_FLAGS`` aborts the
    process when the backend starts; jax 0.11's XLA has no fusion-emitter flag): asked once, in
    a child process, by the controller; the workers inherit the answer."""
    import subprocess
    import sys

    env = {**os.environ, "XLA_FLAGS": flag, "JAX_PLATFORMS": "cpu"}
    probe = subprocess.run([sys.executable, "-c", "import jax; jax.devices()"], env=env, capture_output=True)
    return probe.returncode == 0


if "xla_cpu_use_fusion_emitters" not in os.environ.get("XLA_FLAGS", ""):
    if "JAXSTARK_TESTS_EMITTER_FLAG" not in os.environ:  # the controller asks; the workers inherit
        os.environ["JAXSTARK_TESTS_EMITTER_FLAG"] = "1" if _xla_knows(_EMITTERS) else "0"
    if os.environ["JAXSTARK_TESTS_EMITTER_FLAG"] == "1":
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + _EMITTERS).strip()

import jax  # noqa: E402  (after XLA_FLAGS is settled)
import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

import jaxstark  # noqa: E402  (turns on 64-bit mode)

jax.config.update("jax_numpy_dtype_promotion", "strict")

if not os.environ.get("JAX_COMPILATION_CACHE_DIR"):  # set in the controller, inherited by the workers
    os.environ["JAX_COMPILATION_CACHE_DIR"] = tempfile.mkdtemp(prefix="jaxstark-tests-xla-")
jax.config.update("jax_compilation_cache_dir", os.environ["JAX_COMPILATION_CACHE_DIR"])
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)

settings.register_profile("jaxstark", deadline=None, max_examples=100, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("jaxstark")


@pytest.fixture(autouse=True, scope="module")
def _drop_compiled_programs():
    yield
    jaxstark.clear_caches()
    gc.collect()


def _has_gpu() -> bool:
    try:
        return len(jax.devices("gpu")) > 0
    except RuntimeError:
        return False


def pytest_collection_modifyitems(config, items):
    if _has_gpu():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
