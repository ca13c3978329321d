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
# # Memory shapes
#
# How much a proof holds on the device, by round, as the table grows taller and wider and the
# blowup rises; which cards it fits; how a tall table is split into row chunks to fit one.
#
# Most of this uses the closed-form model (`jaxstark.memory.model`): the held buffers,
# arguments and outputs are arithmetic on the shape (byte for byte what the planner finds), the
# XLA temporaries a linear form fitted per backend. It compiles nothing, so a sweep over
# thousands of shapes takes a second. The last section holds it against XLA's own figures:
# recorded on an H100, and planned live on this machine.
#
# Plots are written to `$JAXSTARK_NOTEBOOK_OUT` (default `notebooks/out/`).

# %%
import json
import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files, not windows: the test suite runs this notebook headless
import matplotlib.pyplot as plt

import jaxstark as js
from jaxstark.examples import Alu
from jaxstark.examples.shape import ShapeTable, shape_config
from jaxstark.memory import model
from jaxstark.memory.cards import CARDS, best_split, card_budget, frontier

OUT = Path(os.environ.get("JAXSTARK_NOTEBOOK_OUT", "out"))
OUT.mkdir(parents=True, exist_ok=True)
GIB = 2**30
BUDGETS = {name: card_budget(gib) for name, gib in CARDS.items()}
for name, b in BUDGETS.items():
    print(f"{name:20} budget {b / GIB:6.2f} GiB (75% pool x 0.9 headroom)")

# %% [markdown]
# ## The device set against rows, width and blowup
#
# The peak device set (the largest round) of one table, GPU temporaries, for three widths: the
# 13-column ALU, 62 columns (a typical zkVM main trace), 316 columns (the wide-rounds stress
# shape). Dashed: the budget of each card.

# %%
rows = list(range(14, 31))
fig, axes = plt.subplots(1, 2, figsize=(12, 4.5), sharey=True)
for ax, blowup in zip(axes, (2, 4), strict=True):
    config = js.StarkConfig(blowup=blowup)
    for width in (13, 62, 316):
        peaks = [model(None, r, config, width=width, backend="gpu").peak / GIB for r in rows]
        ax.plot(rows, peaks, marker=".", label=f"{width} columns")
    for name, b in BUDGETS.items():
        ax.axhline(b / GIB, ls="--", lw=0.8, color="gray")
        ax.text(rows[0], b / GIB * 1.1, name, fontsize=7, color="gray")
    ax.set_yscale("log")
    ax.set_xlabel("log2 rows")
    ax.set_title(f"blowup {blowup}")
axes[0].set_ylabel("peak device set (GiB)")
axes[0].legend()
fig.tight_layout()
fig.savefig(OUT / "memory_vs_rows.png", dpi=90)

# %% [markdown]
# Width at a fixed height (2^22 rows), and which round binds. The binding round moves from the
# DEEP round (narrow tables: the DEEP sums over the LDE dominate; at blowup 2 the out-of-domain
# round for 8-13 columns) to the composition round as the table widens (the constraint
# evaluation over the whole LDE).

# %%
widths = [2, 8, 13, 32, 62, 128, 316, 600]
fig, ax = plt.subplots(figsize=(7, 4))
for blowup in (2, 4, 8):
    config = js.StarkConfig(blowup=blowup)
    models = [model(None, 22, config, width=w, backend="gpu") for w in widths]
    ax.plot(widths, [m.peak / GIB for m in models], marker="o", label=f"blowup {blowup}")
    print(f"blowup {blowup}:", ", ".join(f"{w}: {m.binding.name}" for w, m in zip(widths, models, strict=True)))
for b in BUDGETS.values():
    ax.axhline(b / GIB, ls="--", lw=0.8, color="gray")
ax.set_xscale("log")
ax.set_yscale("log")
ax.set_xlabel("main columns")
ax.set_ylabel("peak device set (GiB)")
ax.set_title("2^22 rows")
ax.legend()
fig.tight_layout()
fig.savefig(OUT / "memory_vs_width.png", dpi=90)

# %% [markdown]
# One shape round by round, term by term: what is held, what the round takes and makes, and
# its temporaries.

# %%
m = model(None, 24, js.StarkConfig(blowup=2), width=62, backend="gpu")
print(m)
print("\nbinding round, term by term:")
for term, b in m.binding.terms().items():
    print(f"  {term:36} {b / GIB:8.3f} GiB")

# %% [markdown]
# ## The chunking frontier
#
# A row-local table too tall for a card is split into chunks of `2^h` rows, proven `k` at a
# time under `vmap` (`jaxstark.chunking`). For the ALU at 2^27 rows, blowup 2 (273 GiB whole
# by the model): for each card and chunk height, the largest group `k` that fits. The tallest
# chunk that fits is what `max_chunk_rows_log2="auto"` aims for; the planner then confirms
# the group with compiled plans.

# %%
config = js.StarkConfig(blowup=2)
fig, ax = plt.subplots(figsize=(7, 4))
for name, b in BUDGETS.items():
    points = frontier(Alu(), 27, config, b, backend="gpu", lowest=16)
    fits = [p for p in points if p.fits]
    ax.plot([p.chunk_rows_log2 for p in fits], [p.group for p in fits], marker="o", label=name)
    best = best_split(points)
    print(f"{name:20} tallest chunk 2^{best.chunk_rows_log2} rows, k = {best.group} of {best.chunks} "
          f"(group peak {best.peak / GIB:.1f} GiB of {b / GIB:.1f})")  # fmt: skip
ax.set_yscale("log", base=2)
ax.set_xlabel("chunk height (log2 rows)")
ax.set_ylabel("chunks per group k")
ax.set_title("ALU, 2^27 rows, blowup 2: largest group that fits")
ax.legend()
fig.tight_layout()
fig.savefig(OUT / "chunking_frontier.png", dpi=90)

# %% [markdown]
# ## The model against XLA's figures
#
# On an H100 (recorded by `benchmarks/fit_memory_model.py record --grid gpu`; no GPU needed
# here): XLA's peak device set of 32 shapes against the model's. The GPU fit is within 0.7% on the
# held-out shapes (`jaxstark.memory.model.FIT_QUALITY`); admission always uses the compiled plan.

# %%
data_dir = Path("../benchmarks/data") if Path("../benchmarks/data").is_dir() else Path("benchmarks/data")
blob = json.loads((data_dir / "memory_gpu.json").read_text())
floor, card = blob["meta"]["device_row_floor_log2"], blob["meta"]["device"]
xla, mine, kinds = [], [], []
for entry in blob["data"]:
    log_n, c, a, b, d = entry["shape"]
    if log_n < floor:
        continue  # ran on the host by policy
    xla.append(max(r["total"] for r in entry["rounds"]) / GIB)
    mine.append(model(ShapeTable(width=c, aux_columns=a, degree=d), log_n, shape_config(b), backend="gpu").peak / GIB)
    kinds.append(entry["kind"])
fig, ax = plt.subplots(figsize=(5, 5))
for kind, marker in (("fit", "o"), ("check", "x")):
    pts = [(x, y) for x, y, k in zip(xla, mine, kinds, strict=True) if k == kind]
    ax.scatter([p[0] for p in pts], [p[1] for p in pts], marker=marker, label=f"{kind} shapes")
lo, hi = min(xla) / 2, max(xla) * 2
ax.plot([lo, hi], [lo, hi], color="gray", lw=0.8)
ax.set_xscale("log")
ax.set_yscale("log")
ax.set_xlabel(f"XLA ({card}), GiB")
ax.set_ylabel("model, GiB")
ax.legend()
fig.tight_layout()
fig.savefig(OUT / "model_vs_xla_gpu.png", dpi=90)
ratios = [y / x for x, y in zip(xla, mine, strict=True)]
print(f"{len(ratios)} shapes on the {card}: model / XLA from {min(ratios):.3f} to {max(ratios):.3f}")

# %% [markdown]
# And live, on this machine: the planner compiles every round of the ALU at 2^10 rows for this
# device and reads XLA's figures; the model gives them in closed form. Held, arguments and
# outputs agree byte for byte; the temporaries are the fitted part.

# %%
air, config = Alu(), js.StarkConfig(blowup=2, num_queries=8, grinding_bits=2)
plan = js.plan(air, 10, config)
backend = "cpu" if plan.binding.device.startswith("cpu") else "gpu"
m = model(air, 10, config, backend=backend)
names = [r.name for r in plan.rounds]
fig, ax = plt.subplots(figsize=(8, 4))
xs = range(len(names))
ax.bar([x - 0.2 for x in xs], [r.total / 2**20 for r in plan.rounds], width=0.4, label="plan (XLA)")
ax.bar([x + 0.2 for x in xs], [r.total / 2**20 for r in m.rounds], width=0.4, label=f"model ({backend})")
ax.set_xticks(list(xs), names, rotation=30, ha="right")
ax.set_ylabel("device set (MiB)")
ax.set_title(f"ALU 2^10 rows, blowup 2, on {plan.binding.device}")
ax.legend()
fig.tight_layout()
fig.savefig(OUT / "model_vs_plan_live.png", dpi=90)
for r, mr in zip(plan.rounds, m.rounds, strict=True):
    exact = (r.resident_bytes, r.arguments, r.outputs) == (mr.held_bytes, mr.argument_bytes, mr.output_bytes)
    print(f"{r.name:18} plan {r.total / 2**20:7.2f} MiB  model {mr.total / 2**20:7.2f} MiB  "
          f"held/arguments/outputs {'exact' if exact else 'DIFFER'}")  # fmt: skip
