# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Prove and inspect
#
# Prove an example, look inside the proof -- its plan, its size by part, the Fiat-Shamir
# transcript the verifier replays -- and watch the verifier reject tampered proofs, each with
# the check that failed.
#
# Plots are written to `$JAXSTARK_NOTEBOOK_OUT` (default `notebooks/out/`).

# %%
import os
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files, not windows: the test suite runs this notebook headless
import dataclasses

import equinox as eqx
import matplotlib.pyplot as plt
import numpy as np

import jaxstark as js
from jaxstark.examples import EXAMPLES
from jaxstark.progress import RoundTimes, TerminalProgress, combine
from jaxstark.verifier import annotated_transcript

OUT = Path(os.environ.get("JAXSTARK_NOTEBOOK_OUT", "out"))
OUT.mkdir(parents=True, exist_ok=True)

# %% [markdown]
# ## Plan, then prove
#
# The ALU example (13 columns, row-local) at 2^8 rows, split into chunks of 2^6 rows proven two
# at a time under `vmap` -- small enough for a laptop CPU, with every mechanism of a large proof.
# The plan comes first: every round compiled for this device, its device set known before
# anything runs.

# %%
air, trace, public = EXAMPLES["alu"](8)
config = js.StarkConfig(blowup=2, num_queries=8, grinding_bits=2, max_chunk_rows_log2=6, chunk_group=2)
plan = js.plan(air, trace, config)
print(plan)
print(plan.chunking(0))

# %% [markdown]
# Proving reports each round as it runs (table or chunk group, round, the plan's device set for
# it); `RoundTimes` keeps the time per round.

# %%
times = RoundTimes()
proof = js.prove(air, trace, public, config, progress=combine(TerminalProgress(sys.stdout, tty=False), times))
print(times.table())

# %% [markdown]
# ## What the proof is made of
#
# `size_breakdown()` sorts the proof's bytes by part: roots, out-of-domain values, the opened
# rows and their Merkle paths per commitment, FRI, the proof of work, framing.

# %%
data = proof.to_bytes()
parts = {k: v for k, v in proof.size_breakdown().items() if v}
print(f"{len(data):,} bytes, {len(proof.tables)} chunk proofs")
for k, v in parts.items():
    print(f"  {k:28} {v:8,} B  {100 * v / len(data):5.1f}%")
assert sum(proof.size_breakdown().values()) == len(data)
fig, ax = plt.subplots(figsize=(7, 4))
ax.barh(list(parts), list(parts.values()))
ax.invert_yaxis()
ax.set_xlabel("bytes")
ax.set_title(f"ALU 2^8 rows in 4 chunks: {len(data) / 1024:.1f} KiB")
fig.tight_layout()
fig.savefig(OUT / "proof_size.png", dpi=90)

fig, ax = plt.subplots(figsize=(7, 3.5))
ax.bar(list(times.seconds), [1e3 * s for s in times.seconds.values()])
ax.set_ylabel("ms")
ax.set_title("time per round (warm executables)")
ax.tick_params(axis="x", rotation=30)
fig.tight_layout()
fig.savefig(OUT / "round_times.png", dpi=90)

# %% [markdown]
# ## The annotated transcript
#
# The verifier replays the Fiat-Shamir transcript from the statement and the proof. With
# `annotated_transcript` it keeps the log: every value absorbed (roots, out-of-domain values,
# the final FRI polynomial, the nonce) and every challenge squeezed, first the shared part
# (statement, every chunk's trace root), then each chunk on its own fork.

# %%
log = annotated_transcript(air, data, public, config)
for where, label, kind, value in log:
    flat = value.reshape(-1)
    shown = " ".join(str(x) for x in flat[:3]) + (" ..." if flat.size > 3 else "")
    print(f"{where:24} {kind:14} {label:20} {str(value.shape):9} {shown}")

# %% [markdown]
# The trace roots in the shared part are the proof's own, chunk by chunk:

# %%
roots = [value for where, label, _, value in log if label == "trace root"]
assert len(roots) == 4
for j, (root, table) in enumerate(zip(roots, proof.tables, strict=True)):
    assert (root == table.trace_root).all()
    print(f"chunk {j}: trace root {bytes(root).hex()[:16]}...")

# %% [markdown]
# ## The verifier rejects tampered proofs
#
# Each rejection is an `InvalidProof` whose `.code` names the check that failed and whose
# message names the table and chunk.

# %%
assert js.verify(air, data, public, config)


def rejection(candidate, public_inputs=public, cfg=config):
    try:
        js.verify(air, candidate, public_inputs, cfg)
    except js.InvalidProof as exc:
        return exc.code, str(exc)
    return "accepted", ""


flipped = bytearray(data)
flipped[len(flipped) // 2] ^= 1
t0 = proof.tables[0]
cases = {
    "one bit flipped in the middle": bytes(flipped),
    "truncated": data[:-7],
    "another nonce": dataclasses.replace(
        proof, tables=(eqx.tree_at(lambda t: t.nonce, t0, t0.nonce + np.uint64(1)), *proof.tables[1:])
    ),
    "an opened trace value changed": dataclasses.replace(
        proof, tables=(eqx.tree_at(lambda t: t.trace_rows, t0, t0.trace_rows ^ np.uint64(1)), *proof.tables[1:])
    ),
    "chunks 0 and 1 swapped": dataclasses.replace(proof, tables=(proof.tables[1], proof.tables[0], *proof.tables[2:])),
}
for what, candidate in cases.items():
    code, message = rejection(candidate)
    assert code != "accepted", what
    print(f"{what:32} -> {code:12} {message[:110]}")
code, message = rejection(data, cfg=dataclasses.replace(config, blowup=4))
print(f"{'verified under another blowup':32} -> {code:12} {message[:110]}")
assert code == "wrong-config"
