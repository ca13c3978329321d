"""What a plan's ways of fitting cost a proof in time: an estimate, from bytes the plan already knows.

A plan that keeps every buffer on the device and proves each table whole does no extra work.
Every other way of fitting a budget does some, and the planner compares them with this estimate
(:func:`jaxstark.memory.plan.plan_checked`: a row-local table over the budget is split into row
chunks *or* proven whole with held buffers recomputed, parked or its rounds in more row blocks,
whichever is estimated cheaper). Per plan, seconds of extra work per proof:

* **parked** buffer: copied out once and back in for each round that takes it --
  ``bytes x (1 + copies back) / park_rate``;
* **recomputed** tree: built once more where it is opened -- ``tree bytes / tree_rate[hash]``;
* **row blocks**: each block beyond the first is one more pass over the round's loop --
  ``(blocks - 1) x block_seconds`` (on the CPU, where some rounds run in blocks by default, this
  counts those too; its ``block_seconds`` is small);
* **row chunks in several groups**: each group's commitments are computed again before its
  rounds 2-5 (the plan's ``... again`` rounds) -- ``their outputs' bytes / commit_rate`` -- and
  each group beyond the first grinds for its own queries -- ``2^grinding_bits / grind_rate``
  (the BLAKE3 rate, scaled by the hash's tree rate). Chunks
  proven under ``vmap`` otherwise cost what the whole table costs (RESULTS.md, "Where a chunked
  proof's time went": four chunks of 2^20 rows in one group, 0.35 s of rounds as the whole
  2^22-row table), so one group is estimated at no extra time -- but a chunked proof is a
  different, larger proof (each chunk has its own openings and FRI), which is why a tie goes to
  the whole table.

The rates are measured figures (``benchmarks/RESULTS.md``), per platform; an accelerator other
than a GPU takes the GPU's. They are for choosing between plans, not promises: a plan prints
its estimate beside what it chose.
"""

from __future__ import annotations

import dataclasses

__all__ = ["Rates", "RATES", "rates", "item_seconds", "extra_seconds", "table_work"]


@dataclasses.dataclass(frozen=True)
class Rates:
    park: float  # bytes per second of a parked buffer's copies out and back, together
    tree: dict  # hash name -> bytes of Merkle tree nodes built per second
    commit: float  # bytes of a commit round's outputs (LDE, coefficients, tree) per second
    block: float  # seconds per extra block of rows of a blocked round
    grind: float  # grinding nonces tried per second (BLAKE3)


RATES = {
    # one H200, jax 0.11.2: parking Fibonacci and ALU 2^22 cost 0.83 s for 2 GiB and 1.9 s for
    # 6.6 GiB of copies ("Parking held buffers in host memory"); trees 2^23 x 62 (2^24 nodes of
    # 32 B) in 3.74 / 13.0 / 147 ms (BLAKE3 / Keccak / Poseidon2); the ALU 2^22 trace commit
    # (1.6 GB of outputs) in 13.8 ms; DEEP in 8 row blocks ~4x its one-piece time (~3-4 ms a block);
    # the queries round (16 grinding bits) in 2.7 ms
    "gpu": Rates(
        park=3.0e9,
        tree={"blake3": 1.4e11, "keccak256": 4.1e10, "poseidon2": 3.7e9},
        commit=1.1e11,
        block=3.5e-3,
        grind=2.4e7,
    ),
    # 2-core CPU, jax 0.10.2, `bench_warm.py --example alu --log-rows 16`: the trace commit
    # (29 MB of outputs) in 162 ms, FRI layer 0 (a 2^17-node tree and a fold) in 35 ms; a parked
    # buffer is a host-memory copy; blocks are the CPU's default way of running those rounds; the
    # queries round (16 grinding bits) in 35 ms
    "cpu": Rates(
        park=4.0e9,
        tree={"blake3": 1.2e8, "keccak256": 6.0e7, "poseidon2": 1.5e7},
        commit=1.8e8,
        block=1.0e-4,
        grind=1.9e6,
    ),
}


def rates(platform: str) -> Rates:
    """The rates of a platform (an accelerator other than a GPU: the GPU's)."""
    return RATES.get(platform, RATES["gpu"])


def _tree_rate(r: Rates, hash_name: str) -> float:
    """Tree bytes built per second with ``hash_name`` (an unknown hash: the slowest known)."""
    return r.tree.get(hash_name, min(r.tree.values()))


def item_seconds(plan, config) -> dict[str, float]:
    """Estimated seconds of extra work per proof of each buffer ``plan`` parks or recomputes
    and each round it runs in more row blocks, by name (for ``config``'s hash)."""
    r = rates(plan.default_device.platform)
    out = {n: b * (1 + k) / r.park for n, b, k in plan.parked}
    out.update({n: b / _tree_rate(r, config.hash) for n, b, _ in plan.recomputed})
    out.update({n: (k - 1) * r.block for n, k in plan.row_blocks})
    return out


def extra_seconds(plan, config) -> dict[str, float]:
    """Estimated seconds of extra work per proof of ``plan`` (for ``config``: its hash and
    grinding) against keeping every buffer on the device and proving every table whole, per way
    ("park", "recompute", "blocks", "chunks"; only those the plan uses)."""
    r, items = rates(plan.default_device.platform), item_seconds(plan, config)
    ways = dict(park=plan.parked, recompute=plan.recomputed, blocks=plan.row_blocks)  # entries named first
    out = {way: sum(items[entry[0]] for entry in entries) for way, entries in ways.items() if entries}
    again = [x for x in plan.rounds if x.name.endswith(" again")]
    if again:
        # the groups past each split table's first (a table's groups are consecutive units)
        more = sum(u.table == v.table for u, v in zip(plan.tables, plan.tables[1:], strict=False))
        grind = r.grind * _tree_rate(r, config.hash) / r.tree["blake3"]
        out["chunks"] = sum(x.outputs for x in again) / r.commit + more * 2**config.grinding_bits / grind
    return out


def table_work(air, log_rows: int, blowup: int) -> int:
    """A table's proof work, for balancing tables over devices: the bytes of its low-degree
    extensions (main columns, aux and composition parts as extension columns). Every heavy round
    -- the NTTs, the trees, DEEP, the composition -- scales with them."""
    size = (1 << log_rows) * blowup
    return size * 8 * (air.width + 3 * (air.num_aux_columns + air.composition_parts))
