"""Warm verification time of the wide and ALU examples (host CPU), median of 5 after one call.

python benchmarks/bench_verify.py LABEL
"""

import sys
import time

import jaxstark as js
from jaxstark.examples import EXAMPLES

cfg = js.StarkConfig(blowup=2, num_queries=40, grinding_bits=16, fri_final_degree=64)
for name, log_n in (("wide", 10), ("alu", 12)):
    air, tr, pub = EXAMPLES[name](log_n)
    p = js.prove(air, tr, pub, cfg)
    js.verify(air, p, pub, cfg)
    ts = []
    for _ in range(5):
        t = time.perf_counter()
        js.verify(air, p, pub, cfg)
        ts.append(time.perf_counter() - t)
    ts.sort()
    label = sys.argv[1] if len(sys.argv) > 1 else ""
    print(label, name, log_n, f"verify warm median {ts[2] * 1e3:.1f} ms", flush=True)
