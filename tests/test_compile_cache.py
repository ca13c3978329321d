"""Compiled rounds are kept across runs by default (JAX's persistent cache in a per-user
directory), a JAX cache the caller configured is left alone, and the cache can be switched off."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
OURS = ("JAX_COMPILATION_CACHE", "JAXSTARK_CACHE", "JAXSTARK_PROGRAM_CACHE")  # settings a probe starts without

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
    proof = js.prove(air, trace, public, cfg).to_bytes()
    assert js.verify(air, proof, public, cfg)
    import hashlib
    from jaxstark.memory import executor
    out["sha"] = hashlib.sha256(proof).hexdigest()
    out["sources"] = sorted({r.source for r in executor.compile_log()})
    out["rounds"] = len(executor.compile_log())
out["hits"], out["misses"] = len(hits), len(misses)
print(json.dumps(out))
"""


def probe(env: dict, *args) -> dict:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(OURS)}
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
    env = {k: v for k, v in os.environ.items() if not k.startswith(OURS)}
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
    # every round was kept lowered by the first process and read back, untraced, by the second
    assert first["sources"] == ["exported"] and second["sources"] == ["program cache"], (first, second)
    assert first["sha"] == second["sha"] and second["rounds"] == first["rounds"] >= 7


@pytest.mark.slow
def test_damaged_or_switched_off_programs_are_traced_again_with_the_same_proof(tmp_path):
    env = {"JAXSTARK_CACHE_DIR": str(tmp_path)}
    first = probe(env, "prove")
    kept = sorted((tmp_path / "jaxstark-programs").glob("*.bin"))
    assert len(kept) == first["rounds"]
    for i, path in enumerate(kept):  # truncated, a flipped byte, a wrong magic, ...
        data = bytearray(path.read_bytes())
        if i % 3 == 0:
            data = data[: len(data) // 2]
        elif i % 3 == 1:
            data[-100] ^= 0x40
        else:
            data[:8] = b"XXXXXXXX"
        path.write_bytes(bytes(data))
    again = probe(env, "prove")
    assert again["sha"] == first["sha"] and "program cache" not in again["sources"], again
    off = probe({**env, "JAXSTARK_PROGRAM_CACHE": "off"}, "prove")
    assert off["sources"] == ["traced"] and off["sha"] == first["sha"]


def test_the_output_tree_is_written_as_data_and_read_back_equal():
    import jax
    import jax.numpy as jnp

    from jaxstark import compile_cache as cc
    from jaxstark.merkle import MerkleTree
    from jaxstark.rounds.domain import make_domain
    from jaxstark.transcript import Transcript

    tree = (make_domain(3, 2), None, [1, {"a": 2, "b": (3,)}], MerkleTree("blake3", 3, jnp.zeros((16, 32), jnp.uint8)),
            Transcript.new("test", "blake3"))  # fmt: skip
    treedef = jax.tree.structure(tree)
    data = json.loads(json.dumps(cc.encode_tree(treedef)))
    assert cc.decode_tree(data) == treedef


def test_only_jaxstark_code_is_kept_lowered():

    import equinox as eqx
    import jax

    from jaxstark import compile_cache as cc
    from jaxstark.examples.fibonacci import Fibonacci
    from tests.attacks import Cube

    assert "Fibonacci" in cc._static_text(Fibonacci())
    with pytest.raises(cc.Uncacheable):  # a user's AIR is code jaxstark cannot fingerprint
        cc._static_text(Cube())
    with pytest.raises(cc.Uncacheable):
        cc._static_text(lambda x: x)

    class Outside(eqx.Module):
        x: object

    with pytest.raises(cc.Uncacheable):
        cc.encode_tree(jax.tree.structure(Outside(1)))
    forged = {"node": "os.system", "aux": None, "children": []}
    with pytest.raises(ValueError, match="unknown output node"):
        cc.decode_tree(forged)


@pytest.mark.slow
def test_the_compile_benchmark_runs_at_a_small_size():
    """``benchmarks/bench_compile.py``: trace, lower and compile time per program, a few proofs,
    and the cold and second-process figures of whole ``jaxstark prove`` processes."""
    cmd = [sys.executable, str(ROOT / "benchmarks" / "bench_compile.py"), "--example", "fibonacci", "--log-rows", "4",
           "--queries", "4", "--grinding", "0", "--prove", "2", "--cold-start"]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k != "JAXSTARK_PROGRAM_CACHE"}  # it reports rounds kept lowered
    out = subprocess.run(cmd, capture_output=True, text=True, env={**env, "PYTHONPATH": str(ROOT)}, timeout=900)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-3000:]
    text = out.stdout
    for name in ("trace commit", "composition", "out-of-domain", "DEEP", "FRI final", "queries"):
        assert f"  {name} " in text
    assert "exported" in text and "prove (device trace)" in text
    for label in ("cold (empty cache)", "second process"):
        line = next(x for x in text.splitlines() if label in x)
        assert "start-up" in line and "plan" in line and "proof" in line and "the rest" in line, line


def test_the_cuda_trace_benchmark_runs_without_a_gpu():
    """``benchmarks/bench_cuda_trace.py``: a plan's programs traced and exported for CUDA on the
    CPU, with the Triton kernels in them."""
    cmd = [sys.executable, str(ROOT / "benchmarks" / "bench_cuda_trace.py"), "--example", "fibonacci", "--log-rows",
           "5", "--queries", "4", "--grinding", "0"]  # fmt: skip
    out = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=600)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-3000:]
    lines = out.stdout.splitlines()
    assert "traced and exported for CUDA" in lines[0]
    for name in ("trace commit", "composition", "DEEP", "FRI final", "queries"):
        assert any(x.startswith(f"  {name} ") for x in lines), name
    assert lines[-1].startswith("  sum ")


def test_changed_source_or_tunables_are_never_stored_under_the_old_key(monkeypatch):
    from jaxstark import compile_cache as cc
    from jaxstark.rounds import r4_fri_layer

    monkeypatch.setattr(cc, "_TUNABLES", [])  # this test's first key (a module run before may have changed one)
    cc.program_key("probe", {}, [], None, "cpu", "cpu")
    assert not cc.tunables_changed()
    monkeypatch.setattr(r4_fri_layer, "SCAN_LAYERS_BELOW", r4_fri_layer.SCAN_LAYERS_BELOW * 2)
    assert cc.tunables_changed()  # a trace JAX reuses may hold the old value: used, not kept
    monkeypatch.undo()
    digest, files = cc._SOURCE
    path, mtime, size = files[0]
    monkeypatch.setattr(cc, "_SOURCE", [digest, [(path, mtime - 1, size), *files[1:]]])  # "edited since import"
    with pytest.raises(cc.Uncacheable, match="source changed"):
        cc.program_key("probe", {}, [], None, "cpu", "cpu")


def test_cpu_rounds_are_compiled_with_the_elemental_emitters_unless_xla_flags_say_otherwise(monkeypatch):
    import jax

    import jaxstark as js
    from jaxstark import compile_cache as cc
    from jaxstark.examples import EXAMPLES

    cpu = jax.devices("cpu")
    monkeypatch.setenv("XLA_FLAGS", "--xla_backend_optimization_level=0")
    known = cc.cpu_option_known("xla_cpu_use_fusion_emitters", False)  # this XLA's (jax 0.11's has none)
    want = {"xla_cpu_use_fusion_emitters": False} if known else None
    assert cc.compiler_options(cpu) == want
    # an option this XLA does not know is left out, not handed to every compile to fail it
    assert not cc.cpu_option_known("xla_cpu_no_such_option", False)
    monkeypatch.setattr(cc, "CPU_COMPILER_OPTIONS", {**cc.CPU_COMPILER_OPTIONS, "xla_cpu_no_such_option": False})
    assert cc.compiler_options(cpu) == want
    monkeypatch.undo()
    monkeypatch.setenv("XLA_FLAGS", "--xla_backend_optimization_level=0")

    class Accelerator:
        platform = "gpu"

    assert cc.compiler_options([Accelerator()]) is None and cc.compiler_options([*cpu, Accelerator()]) is None
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_use_fusion_emitters=true --xla_backend_optimization_level=0")
    assert cc.compiler_options(cpu) is None  # the caller's setting wins

    # the executor hands the options to every program it compiles
    monkeypatch.setenv("XLA_FLAGS", "--xla_backend_optimization_level=0")
    seen, original = [], jax.stages.Lowered.compile

    def spy(self, compiler_options=None, **kw):
        seen.append(compiler_options)
        return original(self, compiler_options, **kw)

    monkeypatch.setattr(jax.stages.Lowered, "compile", spy)
    monkeypatch.setenv("JAXSTARK_PROGRAM_CACHE", "off")
    js.clear_caches()
    air, trace, _ = EXAMPLES["fibonacci"](3)
    js.plan(air, trace, js.StarkConfig(blowup=2, num_queries=3, grinding_bits=0, fri_final_degree=4))
    js.clear_caches()
    assert seen and all(o == want for o in seen), seen
