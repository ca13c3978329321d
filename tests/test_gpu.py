"""GPU-only checks (skipped without a CUDA device): the accelerator computes bit-identical
results to the CPU backend, so a proof does not depend on where it was made."""

import jax
import numpy as np
import pytest

import jaxstark as js
from jaxstark import gl, lde, merkle
from jaxstark.examples import EXAMPLES

pytestmark = pytest.mark.gpu


def _on(kind: str):
    return jax.devices(kind)[0]


def test_lde_and_tree_match_the_cpu_bit_for_bit():
    x = np.asarray(gl.random(jax.random.PRNGKey(0), (1 << 12, 17)))
    out = {}
    for kind in ("cpu", "gpu"):
        with jax.default_device(_on(kind)):
            ev = lde.coset_lde(jax.device_put(x, _on(kind)), 4)
            out[kind] = (np.asarray(ev), np.asarray(merkle.commit(ev, "poseidon2").nodes))
    for a, b in zip(out["cpu"], out["gpu"], strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", ["fibonacci", "alu"])
def test_gpu_and_cpu_proofs_are_identical(name):
    air, trace, public = EXAMPLES[name](10)
    cfg = js.StarkConfig(blowup=4, num_queries=20, grinding_bits=8, device_row_floor_log2=0)  # no CPU policy
    proofs = {}
    for kind in ("cpu", "gpu"):
        with jax.default_device(_on(kind)):
            assert js.plan(air, trace, cfg).tables[0].device.startswith(kind)
            proofs[kind] = js.prove(air, jax.device_put(np.asarray(trace), _on(kind)), public, cfg).to_bytes()
    assert proofs["cpu"] == proofs["gpu"]
    assert js.verify(air, proofs["gpu"], public, cfg)
