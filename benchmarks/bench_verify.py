"""Verification time on the host CPU: each proof's first `jaxstark.verify` in a fresh process
(after `import jaxstark`), the warm median, the JAX compilations during the first call (there
must be none), and `jaxstark verify FILE` as a whole process.

    python benchmarks/bench_verify.py [PROOF ...]      (default: benchmarks/data/verify/*.proof)

The proofs (and their statement files, PROOF.json) come from `benchmarks/make_verify_proofs.sh`
on a GPU; each is verified against the statement in its file (`jaxstark.cli.statement.read`).
"""

import glob
import json
import subprocess
import sys
import time
from pathlib import Path

CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
import jax
import jaxstark as js
from jaxstark.cli import statement
t1 = time.perf_counter()
events = []
jax.monitoring.register_event_duration_secs_listener(
    lambda e, d, **kw: events.append(e) if e.startswith("/jax/core/compile") else None)
path = sys.argv[1]
from pathlib import Path
airs, heights, publics, config = statement.read(Path(path + ".json"), trusted=("jaxstark",))
raw = open(path, "rb").read()
tables = list(zip(airs, publics))
t2 = time.perf_counter()
js.verify(tables, raw, config=config, log_n=heights)
first = time.perf_counter() - t2
warm = []
for _ in range(5):
    t = time.perf_counter()
    js.verify(tables, raw, config=config, log_n=heights)
    warm.append(time.perf_counter() - t)
warm.sort()
print(json.dumps(dict(import_s=t1 - t0, first_s=first, warm_s=warm[2], compiles=len(events), bytes=len(raw),
                      hash=config.hash)))
"""


def main(paths):
    rows = []
    for path in paths:
        child = json.loads(subprocess.run([sys.executable, "-c", CHILD, path], check=True, capture_output=True,
                                          text=True).stdout.strip().splitlines()[-1])  # fmt: skip
        t = time.perf_counter()
        cli = subprocess.run([sys.executable, "-m", "jaxstark", "verify", path, "--min-security-bits", "0"],
                             capture_output=True, text=True)  # fmt: skip
        child["cli_s"] = time.perf_counter() - t
        child["cli_rc"] = cli.returncode
        rows.append((Path(path).name, child))
    print(f"{'proof':28} {'hash':10} {'bytes':>10} {'import':>8} {'first':>9} {'warm':>9} {'compiles':>8} {'CLI':>7}")
    for name, r in rows:
        fail = "" if r["cli_rc"] == 0 else " FAIL"
        print(f"{name:28} {r['hash']:10} {r['bytes']:>10,} {r['import_s']:>7.2f}s {r['first_s'] * 1e3:>7.1f}ms "
              f"{r['warm_s'] * 1e3:>7.1f}ms {r['compiles']:>8} {r['cli_s']:>6.2f}s{fail}")  # fmt: skip
    return rows


if __name__ == "__main__":
    main(sys.argv[1:] or sorted(glob.glob("benchmarks/data/verify/*.proof")))
