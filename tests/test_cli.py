"""The ``jaxstark`` command: every subcommand run in a subprocess (as installed by the README's
install command), its output and its exit code; bad arguments and unreadable files."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import jaxstark as js
from jaxstark.cli import main
from jaxstark.examples import Fibonacci, fibonacci_trace
from jaxstark.memory.cards import CARDS, best_split, card_budget, frontier
from jaxstark.memory.model import model

ROOT = Path(__file__).resolve().parents[1]
SMALL = ["--blowup", "2", "--queries", "8", "--grinding", "2"]  # the shapes other tests compile too


def jaxstark(*args: str, cwd: Path = ROOT, timeout: int = 600) -> subprocess.CompletedProcess:
    """Run the installed console script (``python -m jaxstark`` where it is not on PATH)."""
    exe = shutil.which("jaxstark")
    cmd = [exe] if exe and Path(exe).parent == Path(sys.executable).parent else [sys.executable, "-m", "jaxstark"]
    return subprocess.run([*cmd, *args], capture_output=True, text=True, cwd=cwd, timeout=timeout)


def test_console_script_is_installed():
    exe = shutil.which("jaxstark", path=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
    assert exe is not None, "pip install -e . should install the jaxstark console script"
    out = jaxstark("--help")
    assert out.returncode == 0
    for word in ("plan", "prove", "verify", "bench", "exit codes", "JAXSTARK_VRAM_BUDGET_MB"):
        assert word in out.stdout, word


def test_plan_json_parses_and_matches_the_library():
    out = jaxstark("plan", "--example", "fibonacci", "--log-rows", "4", *SMALL, "--json", "--quiet")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    config = js.StarkConfig(blowup=2, num_queries=8, grinding_bits=2)
    import jax

    want = js.plan(Fibonacci(), 4, config, device=jax.devices("cpu")[0]).to_dict()
    assert data["mode"] == "compiled" and data["split"] is None
    assert data["plan"] == json.loads(json.dumps(want))  # the same figures, term by term
    assert data["plan"]["fits"] and data["plan"]["peak_bytes"] == max(r["total"] for r in data["plan"]["rounds"])
    binding = data["plan"]["binding"]
    assert any(
        r["round"] == binding["round"] and r["total"] == data["plan"]["peak_bytes"] for r in data["plan"]["rounds"]
    )
    for r in data["plan"]["rounds"]:
        assert sum(r["terms"].values()) == r["total"], r["round"]


def test_plan_over_budget_names_the_split_and_exits_3():
    """A budget the whole ALU table misses: verdict, binding round term by term, the planner's split."""
    out = jaxstark("plan", "--example", "alu", "--log-rows", "8", *SMALL, "--budget-mb", "0.35")
    assert out.returncode == 3, out.stdout + out.stderr
    assert "verdict: DOES NOT FIT" in out.stdout and "term by term" in out.stdout
    assert "with --chunk-rows auto the planner splits: Alu:" in out.stdout and "-> fits" in out.stdout
    assert "planning: compiled" in out.stderr  # compile progress


def test_plan_model_for_a_card_in_process(capsys):
    """--model compiles nothing: a 2^27-row table against an 80 GB card, text and JSON."""
    args = ["plan", "--columns", "13", "--row-local", "--log-rows", "27", "--blowup", "2", "--card", "80", "--model"]
    assert main(args) == 3
    text = capsys.readouterr().out
    assert "model (gpu): 2^27 rows x 13 main @ blowup 2" in text and "the model's split:" in text
    assert main([*args, "--json"]) == 3
    data = json.loads(capsys.readouterr().out)
    budget = card_budget(80)
    config = js.StarkConfig(blowup=2)
    assert data["budget"]["bytes"] == budget and data["backend"] == "gpu" and not data["fits"]
    assert data["tables"][0]["peak_bytes"] == model(None, 27, config, width=13, backend="gpu").peak
    split = data["split"][0]
    assert split["peak"] <= budget and split["group"] >= 1
    want = best_split(frontier(None, 27, config, budget, width=13, backend="gpu"))
    assert (split["chunk_rows_log2"], split["group"]) == (want.chunk_rows_log2, want.group)


def test_plan_model_names_the_held_buffer_strategies_it_would_take(capsys):
    """Over budget, --model runs the planner's held-buffer search on its own figures: a table
    that cannot be split fits by parking and recomputing; --keep-held forbids it."""
    args = [
        "plan",
        "--example",
        "fibonacci",
        "--log-rows",
        "14",
        "--blowup",
        "4",
        "--model",
        "cpu",
        "--budget-mb",
        "12.3",
    ]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "the model's held-buffer strategies (park, recompute, blocks allowed): parked" in text
    assert "recomputed" in text and "fits" in text and "verdict: fits" in text
    assert main([*args, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    held, kept = data["held_strategies"][0], data["tables"][0]
    assert data["fits"] and held["peak_bytes"] <= int(12.3 * 2**20) < kept["peak_bytes"]
    assert held["parked"] and held["recomputed"]
    assert f"parked {', '.join(held['parked'])}; recomputed {', '.join(held['recomputed'])}" in text
    assert main([*args, "--keep-held"]) == 3
    assert "held buffers kept on the device (no strategy allowed)" in capsys.readouterr().out


def test_card_budget_matches_the_h200_measurement():
    assert abs(card_budget(CARDS["141 GB (H200)"]) / 2**30 - 94.37) < 0.01  # benchmarks/RESULTS.md
    with pytest.raises(ValueError, match="positive"):
        card_budget(0)


def test_frontier_groups_grow_as_chunks_shrink():
    config = js.StarkConfig(blowup=2)
    points = frontier(None, 26, config, card_budget(32), width=13, backend="gpu", lowest=18)
    assert [p.chunk_rows_log2 for p in points] == list(range(26, 17, -1))
    fitting = [p for p in points if p.fits]
    assert fitting and not points[0].fits  # 2^26 x 13 whole is far over a 32 GB card
    for p in fitting:  # the reported group fits and twice it does not (or is all the chunks)
        m = model(None, 26, config, width=13, backend="gpu", chunk_rows_log2=p.chunk_rows_log2, group=p.group)
        assert m.peak == p.peak <= card_budget(32)
        if p.group < p.chunks:
            twice = model(None, 26, config, width=13, backend="gpu", chunk_rows_log2=p.chunk_rows_log2,
                          group=2 * p.group)  # fmt: skip
            assert twice.peak > card_budget(32)


def test_prove_shows_progress_writes_files_and_verify_accepts(tmp_path):
    out = jaxstark("prove", "--example", "alu", "--log-rows", "8", *SMALL, "--chunk-rows", "6", "--chunk-group", "2",
                   "--out", str(tmp_path / "alu.proof"))  # fmt: skip
    assert out.returncode == 0, out.stderr
    # progress per table, round and chunk group, in plan order, on stderr
    assert "[ 1/22] Alu chunks 0-1 of 4: trace commit" in out.stderr
    assert "Alu chunks 0-1 of 4: composition" in out.stderr and "Alu chunks 2-3 of 4: queries" in out.stderr
    assert "[22/22] Alu chunks 2-3 of 4: openings FRI" in out.stderr
    assert "Alu: 4 chunks of 2^6 rows, 2 at a time" in out.stdout and "times per round" in out.stdout
    size = (tmp_path / "alu.proof").stat().st_size
    assert f"proof: {size:,} B" in out.stdout
    statement = json.loads((tmp_path / "alu.proof.json").read_text())
    assert statement["tables"][0]["air"] == "jaxstark.examples.alu:Alu" and statement["config"]["blowup"] == 2

    ok = jaxstark("verify", str(tmp_path / "alu.proof"), "--min-security-bits", "0")
    assert ok.returncode == 0, ok.stderr
    assert "verified: OK" in ok.stdout
    assert (
        "table 0: jaxstark.examples.alu:Alu(width=13, bus=False) (Alu/w13/" in ok.stdout
        and "at 2^8 rows in 4 row chunks" in ok.stdout
    )
    assert "blowup 2, 8 queries, 2 grinding bits" in ok.stdout and "10 bits conjectured (floor 0)" in ok.stdout

    data = bytearray((tmp_path / "alu.proof").read_bytes())
    data[len(data) // 2] ^= 1
    (tmp_path / "bad.proof").write_bytes(bytes(data))
    floor = ["--min-security-bits", "0"]
    bad = jaxstark("verify", str(tmp_path / "bad.proof"), "--statement", str(tmp_path / "alu.proof.json"), *floor)
    assert bad.returncode == 1 and "REJECTED (" in bad.stderr and "rejected" in bad.stdout

    (tmp_path / "short.proof").write_bytes(bytes(data[:100]))
    short = jaxstark("verify", str(tmp_path / "short.proof"), "--statement", str(tmp_path / "alu.proof.json"), *floor)
    assert short.returncode == 1 and "REJECTED (format)" in short.stderr

    other = jaxstark("verify", str(tmp_path / "alu.proof"), "--example", "alu", "--log-rows", "8", "--blowup", "4",
                     "--queries", "8", "--grinding", "2", *floor)  # fmt: skip
    assert other.returncode == 1 and "wrong-config" in other.stderr


def test_prove_a_user_air_from_a_trace_file(tmp_path):
    trace, public = fibonacci_trace(4)
    np.save(tmp_path / "fib.npy", np.asarray(trace))
    tiny = ["--blowup", "2", "--queries", "1", "--grinding", "0"]  # a 1-bit security level
    out = jaxstark("prove", "--air", "jaxstark.examples:Fibonacci", "--trace", str(tmp_path / "fib.npy"), "--public",
                   str(public[0]), *tiny, "--out", str(tmp_path / "fib.proof"), "--no-progress")  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stderr == ""  # --no-progress
    # the verifier's floor, not the statement file, sets the level
    low = jaxstark("verify", str(tmp_path / "fib.proof"))
    assert low.returncode == 1 and "REJECTED (security)" in low.stderr
    assert "b2/q1/g0/f64/blake3 give 1.0 conjectured bits" in low.stderr and "floor of 100 bits" in low.stderr
    ok = jaxstark("verify", str(tmp_path / "fib.proof"), "--min-security-bits", "0")
    assert ok.returncode == 0, ok.stderr
    assert f"at 2^4 rows; public inputs: {public[0]}" in ok.stdout
    assert "security: 1 bits conjectured (floor 0), 0 bits proven" in ok.stdout
    # the same proof against another public input, or another height (--log-rows pins it): rejected
    air = ["--air", "jaxstark.examples:Fibonacci", *tiny, "--min-security-bits", "0"]
    wrong = jaxstark("verify", str(tmp_path / "fib.proof"), *air, "--public", str(public[0] + 1))
    assert wrong.returncode == 1 and "REJECTED (" in wrong.stderr, wrong.stdout + wrong.stderr
    taller = jaxstark("verify", str(tmp_path / "fib.proof"), *air, "--public", str(public[0]), "--log-rows", "5")
    assert taller.returncode == 1 and "REJECTED (wrong-height)" in taller.stderr, taller.stderr


def _statement(tmp_path, air: str, fields=None) -> Path:
    path = tmp_path / "p.proof.json"
    config = {"blowup": 2, "num_queries": 8, "grinding_bits": 2, "fri_final_degree": 64, "hash": "blake3"}
    table = {"air": air, "fields": fields or {}, "log_n": 4, "public_inputs": []}
    path.write_text(json.dumps({"format": "jaxstark statement v1", "config": config, "tables": [table]}))
    (tmp_path / "p.proof").write_bytes(b"not a proof")
    return path


@pytest.mark.parametrize(
    "air, fields, message",
    [
        ("os:system", {"command": "touch MARKER"}, "module 'os', which is not trusted"),
        ("builtins:eval", {}, "module 'builtins', which is not trusted"),
        ("jaxstark.cli.common:load_air", {}, "not a jaxstark.AIR subclass"),
        ("jaxstark.examples:EXAMPLES", {}, "not a jaxstark.AIR subclass"),
        ("jaxstark:AIR", {}, "not a jaxstark.AIR subclass"),
        ("jaxstark.examples:Fibonacci", {"width": [2]}, "not plain data"),
        ("jaxstark.examples:Fibonacci", {"__class__": 1}, "not a field of Fibonacci"),
        ("jaxstark.examples:__builtins__", {}, "one public name"),
        ("jaxstark.cli.common:np.f2py", {}, "one public name"),
        ("jaxstark.examples.machine:RangeTable", {"bits": -1}, "RangeTable.bits must be an int in [1, 30]"),
        ("jaxstark.examples:WideRounds", {"width": 10**9}, "width must be an int in [1, 65536]"),
        ("jaxstark.examples:WideRounds", {"width": 10**30}, "out of bounds"),
        ("os.path:join; rm", {}, "must be MODULE:CLASS"),
    ],
)
def test_a_statement_file_runs_nothing_it_names(tmp_path, air, fields, message, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _statement(tmp_path, air, fields)
    before = set(sys.modules)
    assert main(["verify", str(tmp_path / "p.proof")]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "MARKER").exists()
    assert not {m for m in set(sys.modules) - before if not m.startswith("jaxstark")}  # nothing else imported


def test_a_statement_file_may_name_airs_of_trusted_modules(tmp_path, capsys, monkeypatch):
    (tmp_path / "myairs.py").write_text(
        "import pathlib\npathlib.Path('IMPORTED').touch()\nfrom jaxstark.examples import Fibonacci\n\n\n"
        "class MyFib(Fibonacci):\n    pass\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    _statement(tmp_path, "myairs:MyFib")
    assert main(["verify", str(tmp_path / "p.proof")]) == 2
    err = capsys.readouterr().err
    assert "'myairs', which is not trusted" in err and "--trust myairs" in err and "nothing was imported" in err
    assert not (tmp_path / "IMPORTED").exists()
    monkeypatch.setenv("JAXSTARK_TRUST", "otherpkg, myairs")
    assert main(["verify", str(tmp_path / "p.proof"), "--min-security-bits", "0"]) == 1  # read, then rejected
    assert (tmp_path / "IMPORTED").exists()
    assert "REJECTED (format)" in capsys.readouterr().err
    monkeypatch.delenv("JAXSTARK_TRUST")
    assert main(["verify", str(tmp_path / "p.proof"), "--trust", "myairs", "--min-security-bits", "0"]) == 1


@pytest.mark.parametrize(
    "args, message",
    [
        (["prove", "--blowup", "3"], "blowup must be a power of two"),
        (["plan", "--example", "alu", "--log-rows", "40"], "--log-rows must be in"),
        (["plan", "--columns", "0"], "--columns must be a positive int"),
        (["plan", "--card", "nonsense", "--model"], "--card 'nonsense'"),
        (["prove", "--air", "no_such_module:X", "--trace", "x.npy"], "cannot import 'no_such_module'"),
        (["prove", "--air", "jaxstark.examples:Fibonacci"], "--trace is given 0 time(s) for 1 --air table(s)"),
        (["prove", "--air", "jaxstark.config:StarkConfig", "--trace", "x.npy"], "not a jaxstark.AIR"),
        (["prove", "--air", "jaxstark.examples:EXAMPLES", "--trace", "x.npy"], "not an AIR class or factory"),
        (["prove", "--air", "jaxstark.examples:Fibonacci", "--trace", "missing.npy"], "does not exist"),
        (["verify", "missing.proof"], "cannot read the proof file"),
        (["verify", "README.md", "--statement", "pyproject.toml"], "is not readable JSON"),
        (["bench", "--only", "nonsense"], "unknown benchmark"),
        (["nonsense"], "unrecognized arguments"),
    ],
)
def test_bad_arguments_and_files_exit_2_with_a_clear_message(args, message, capsys):
    with pytest.raises(SystemExit) as exc:  # argparse errors exit 2 themselves
        code = main(args)
        raise SystemExit(code)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_a_trace_file_of_the_wrong_dtype_is_refused(tmp_path, capsys):
    np.save(tmp_path / "f.npy", np.zeros((16, 2), np.float64))
    code = main(["prove", "--air", "jaxstark.examples:Fibonacci", "--trace", str(tmp_path / "f.npy"), "--public", "1"])
    assert code == 2 and "holds float64" in capsys.readouterr().err


def test_a_trace_that_violates_its_air_is_refused_without_a_proof(tmp_path):
    trace, public = fibonacci_trace(4)
    bad = np.asarray(trace).copy()
    bad[5, 0] += np.uint64(1)
    np.save(tmp_path / "bad.npy", bad)
    out = jaxstark("prove", "--air", "jaxstark.examples:Fibonacci", "--trace", str(tmp_path / "bad.npy"), "--public",
                   str(public[0]), *SMALL, "--debug", "--out", str(tmp_path / "bad.proof"))  # fmt: skip
    assert out.returncode == 2
    assert "the trace violates its AIR" in out.stderr and "row 4" in out.stderr
    assert not (tmp_path / "bad.proof").exists()


def test_bench_runs_the_suite_quickly():
    out = jaxstark("bench", "--quick")  # speed, ntt, merkle, stark at tiny sizes (JSON to benchmarks/out/)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    for name in ("speed", "ntt", "merkle", "stark"):
        assert f"== {name}" in out.stdout
    assert "Speed suite" in out.stdout and "commit" in out.stdout
    assert out.stdout.count("cpu-exact") >= 12  # the merkle table: every hash, every size
    assert "fibonacci 2^3 x 2 b2" in out.stdout
    assert out.stdout.count(" ok ") == 4 and "FAILED" not in out.stdout


def test_demo_is_the_default_and_checks_itself():
    out = jaxstark("--log-rows", "4", *SMALL)
    assert out.returncode == 0, out.stderr
    assert "verified   OK" in out.stdout and "trace paths" in out.stdout


@pytest.mark.parametrize("command", ["plan", "prove"])
def test_keep_held_forbids_parking(command):
    from jaxstark.cli import parser
    from jaxstark.cli.common import config_from

    ap = parser()
    args = ap.parse_args([command, "--example", "fibonacci", "--keep-held"])
    assert config_from(args, ap).held_strategies == ()
    args = ap.parse_args([command, "--example", "fibonacci"])
    assert config_from(args, ap).held_strategies == js.StarkConfig().held_strategies == ("park", "recompute", "blocks")
    given = {"recompute": ("recompute",), "park": ("park",), "none": (), "recompute,park": ("recompute", "park")}
    for text, want in given.items():
        args = ap.parse_args([command, "--example", "fibonacci", "--held-strategies", text])
        assert config_from(args, ap).held_strategies == want
    for bad in (["--held-strategies", "spill"], ["--held-strategies", "park,park"],
                ["--keep-held", "--held-strategies", "park"]):  # fmt: skip
        with pytest.raises(SystemExit):
            config_from(ap.parse_args([command, "--example", "fibonacci", *bad]), ap)


@pytest.mark.parametrize("why", [None, "distributed", "profiled", "interactive"])
def test_the_command_ends_without_the_runtime_teardown_unless_something_must_run_at_exit(monkeypatch, why):
    """``jaxstark.cli.run``: ``main``'s exit code, the output flushed, compiles in flight waited
    for, then ``os._exit`` (JAX's exit handlers skipped); in a ``jax.distributed`` run, under a
    profiler and in an interactive session, ``sys.exit`` (the run's shutdown barrier left, the
    profile written, the session going on)."""
    import jax

    import jaxstark.cli as cli
    from jaxstark.memory import executor

    ended, waited = [], []
    monkeypatch.setattr(cli, "main", lambda: 3)
    monkeypatch.setattr(cli.os, "_exit", lambda code: ended.append(code))
    monkeypatch.setattr(jax.distributed, "is_initialized", lambda: why == "distributed")
    monkeypatch.setattr(cli, "_observed", lambda: why == "profiled")
    monkeypatch.setattr(cli, "_interactive", lambda: why == "interactive")
    monkeypatch.setattr(executor, "wait_for_compiles", lambda: waited.append(1) or 0)
    if why is not None:
        with pytest.raises(SystemExit) as exc:
            cli.run()
        assert exc.value.code == 3 and ended == []
    else:
        cli.run()
        assert ended == [3]
    assert waited == [1]


def test_compiles_in_flight_are_waited_for():
    """A plan cut short leaves programs compiling; the command waits for them before it ends."""
    import concurrent.futures
    import threading

    from jaxstark.memory import executor

    release = threading.Event()
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        future = pool.submit(release.wait, 30)
        job = executor._Compiling(("a test job",), future, None, None)
        executor._COMPILE_LOG.append(job)
        try:
            threading.Timer(0.2, release.set).start()
            assert executor.wait_for_compiles() == 1 and future.done()
            assert executor.wait_for_compiles() == 0
        finally:
            executor._COMPILE_LOG.remove(job)


def test_a_profiler_tracer_or_monitoring_tool_is_seen(monkeypatch):
    import types

    import jaxstark.cli as cli

    monkeypatch.setattr(cli.sys, "getprofile", lambda: None)
    monkeypatch.setattr(cli.sys, "gettrace", lambda: None)
    tools = {}
    monkeypatch.setattr(cli.sys, "monitoring", types.SimpleNamespace(get_tool=tools.get), raising=False)
    assert not cli._observed()
    tools[1] = "coverage"  # sys.monitoring.COVERAGE_ID
    assert cli._observed()
    tools.clear()
    monkeypatch.setattr(cli.sys, "getprofile", lambda: print)
    assert cli._observed()
    monkeypatch.setattr(cli.sys, "getprofile", lambda: None)
    monkeypatch.setattr(cli.sys, "gettrace", lambda: print)
    assert cli._observed()


@pytest.mark.parametrize("where", ["main", "flush"])
def test_a_reader_that_goes_away_ends_the_command_quietly(monkeypatch, where):
    """The output's reader gone (``jaxstark verify F | head -1``), whether ``main``'s own print
    or the last flush meets it: exit code 141, no traceback, nothing written at exit."""
    import jaxstark.cli as cli

    read, write = os.pipe()

    class Gone:  # stdout whose reader has gone (its file number a real one, for the redirect)
        def fileno(self):
            return write

        def flush(self):
            raise BrokenPipeError(32, "Broken pipe")

    def main():
        if where == "main":
            raise BrokenPipeError(32, "Broken pipe")
        return 0

    ended = []
    monkeypatch.setattr(cli, "main", main)
    monkeypatch.setattr(cli, "_observed", lambda: False)
    monkeypatch.setattr(cli, "_interactive", lambda: False)
    monkeypatch.setattr(cli.os, "_exit", ended.append)
    if where == "flush":
        monkeypatch.setattr(cli.sys, "stdout", Gone())
    try:
        cli.run()
        if where == "flush":  # what is left to write at exit goes nowhere
            assert os.path.samestat(os.fstat(write), os.stat(os.devnull))
    finally:
        os.close(read)
        os.close(write)
    assert ended == [141]


@pytest.mark.parametrize("stream", ["closed", "disk full"])
def test_a_closed_stream_or_a_failed_write_is_not_a_crash(monkeypatch, capfd, stream):
    """A standard stream closed by the caller (``>&-``: Python sets it to None) leaves the exit
    code as ``main`` gave it; any other failure to write the output is exit code 120, said on
    the original standard error."""
    import errno

    import jaxstark.cli as cli

    class Full:
        def fileno(self):
            raise OSError("no file descriptor")

        def flush(self):
            raise OSError(errno.ENOSPC, "No space left on device")

    ended = []
    monkeypatch.setattr(cli, "main", lambda: 0)
    monkeypatch.setattr(cli, "_observed", lambda: False)
    monkeypatch.setattr(cli, "_interactive", lambda: False)
    monkeypatch.setattr(cli.os, "_exit", ended.append)
    monkeypatch.setattr(cli.sys, "stdout", None if stream == "closed" else Full())
    cli.run()
    assert ended == ([0] if stream == "closed" else [120])
    if stream == "disk full":
        assert "cannot write the output" in capfd.readouterr().err
