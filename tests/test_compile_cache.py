"""Compiled rounds are kept across runs by default (JAX's persistent cache in a per-user
directory), a JAX cache the caller configured is left alone, and the cache can be switched off."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

PROBE = r"""
import json, sys
import jax
hits, misses = [], []
jax.monitoring.register_event_listener(lambda e, **kw: hits.append(e) if e.endswith("cache_hits") else None)
jax.monitoring.register_event_listener(lambda e, **kw: misses.append(e) if e.endswith("cache_misses") else None)
import jaxstark as js
out = dict(dir=jax.config.jax_compilation_cache_dir, min=jax.config.jax_persistent_cache_min_compile_time_secs)
if len(sys.argv) > 1:
    from jaxstark.examples import EXAMPLES
    air, trace, public = EXAMPLES["fibonacci"](5)
    cfg = js.StarkConfig(blowup=2, num_queries=4, grinding_bits=0, fri_final_degree=4)
    assert js.verify(air, js.prove(air, trace, public, cfg).to_bytes(), public, cfg)
out["hits"], out["misses"] = len(hits), len(misses)
print(json.dumps(out))
"""


def probe(env: dict, *args) -> dict:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("JAX_COMPILATION_CACHE", "JAXSTARK_CACHE"))}
    clean.update(env, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", PROBE, *args], env=clean, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_default_directory_the_knob_and_the_off_switch(tmp_path):
    got = probe({"XDG_CACHE_HOME": str(tmp_path)})
    assert got["dir"] == str(tmp_path / "jaxstark" / "xla") and got["min"] == 0.05
    assert probe({"JAXSTARK_CACHE_DIR": str(tmp_path / "mine")})["dir"] == str(tmp_path / "mine")
    assert probe({"JAXSTARK_CACHE_DIR": "off", "XDG_CACHE_HOME": str(tmp_path)})["dir"] is None
    theirs = probe({"JAX_COMPILATION_CACHE_DIR": str(tmp_path / "theirs"), "JAXSTARK_CACHE_DIR": str(tmp_path / "x")})
    assert theirs["dir"] == str(tmp_path / "theirs") and theirs["min"] == 1.0  # JAX's own settings, untouched


def test_an_unwritable_directory_warns_and_leaves_the_cache_off(tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JAX_COMPILATION_CACHE", "JAXSTARK_CACHE"))}
    env.update(JAXSTARK_CACHE_DIR=str(blocked / "xla"), PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1])["dir"] is None
    assert "not kept across runs" in out.stderr and "JAXSTARK_CACHE_DIR" in out.stderr


@pytest.mark.slow
def test_a_second_process_loads_the_rounds_the_first_compiled(tmp_path):
    env = {"JAXSTARK_CACHE_DIR": str(tmp_path)}
    first = probe(env, "prove")
    assert first["misses"] >= 5 and any(tmp_path.iterdir())  # the statement, the commits, composition, ...
    second = probe(env, "prove")
    assert second["hits"] >= first["hits"] + 5 and second["misses"] < first["misses"], (first, second)
