"""Proof parameters and the security they give."""

from __future__ import annotations

import math
import os
from collections.abc import Callable

import equinox as eqx

from jaxstark.hash.interface import HASHES

__all__ = ["StarkConfig", "env_knob"]

FIELD_BITS = 64 * 3  # challenges live in the cubic extension, |F| ~ 2^192
LOG2_FIELD = 3 * math.log2(2**64 - 2**32 + 1)  # log2 |F| of the cubic extension
# Cap on the claimed level: the field size less 64 bits of slack for the out-of-domain and
# constraint-combination terms, whose error grows with the polynomial degrees (< 2^64).
FIELD_CAP_BITS = FIELD_BITS - 64
HELD_STRATEGIES = ("park", "recompute", "blocks")  # what StarkConfig.held_strategies may name (jaxstark.memory.plan)


class StarkConfig(eqx.Module):
    """Every choice that changes a proof. Validated on construction.

    * ``blowup``: LDE expansion factor, a power of two >= 2; the composition polynomial needs
      ``max constraint degree - 1 <= blowup``.
    * ``num_queries``: FRI query repetitions (1 ... 256); the default 42 gives, with the default
      blowup and grinding, 100 conjectured bits -- the floor ``jaxstark verify`` applies.
    * ``grinding_bits``: proof-of-work bits before queries are drawn (0 ... 32).
    * ``fri_final_degree``: FRI stops folding when the polynomial's degree bound is at most
      this (a power of two >= 1); the final polynomial's coefficients are sent in clear.
    * ``hash``: ``"blake3"`` (default), ``"keccak256"`` or ``"poseidon2"``.

    Memory knobs (they change where and whether a proof runs, never the proof itself, so they
    are not part of the fingerprint; see :mod:`jaxstark.memory`):

    * ``vram_budget_mb``: the device budget in MiB (``JAXSTARK_VRAM_BUDGET_MB`` overrides it;
      default: XLA's allocator limit times the headroom);
    * ``device_row_floor_log2``: tables of fewer than ``2^k`` rows run on the CPU device when the
      target is an accelerator (default 8: on an H200 and its 16-core host, the accelerator
      proved the ALU table at least as fast as the host from 2^8 rows up,
      ``benchmarks/bench_row_floor.py``; smaller tables were not measured);
    * ``max_chunk_rows_log2``: split taller row-local tables into chunks of ``2^k`` rows, proven
      as separate units on the same buses; ``"auto"``: split a row-local table only when its
      whole device set is over the budget, into the tallest chunks that fit
      (``JAXSTARK_MAX_CHUNK_ROWS_LOG2`` overrides it; see :mod:`jaxstark.chunking`; default None:
      no split);
    * ``chunk_group``: how many chunks of a split table are proven at once under ``vmap``, a
      power of two (``JAXSTARK_CHUNK_GROUP`` overrides it; default None: the planner's choice,
      the largest group whose device set fits the budget);
    * ``held_strategies``: what the planner may do with a buffer held between rounds (an LDE, a
      tree, a FRI layer) when keeping them all on the device does not fit: ``"recompute"`` -- a
      Merkle tree is not kept after the round that built it (only its root) and is built again
      from its matrix where it is opened; ``"park"`` -- copy it to host memory after the round
      that made it and back for each round that takes it; ``"blocks"`` -- a round that works row by
      row (out-of-domain, DEEP, the composition's constraints) runs in more blocks of rows one
      after another, so that its temporaries are a block's (default all three); ``()`` keeps everything as it is and
      refuses what does not fit.
    """

    blowup: int = eqx.field(static=True, default=4)
    num_queries: int = eqx.field(static=True, default=42)
    grinding_bits: int = eqx.field(static=True, default=16)
    fri_final_degree: int = eqx.field(static=True, default=64)
    hash: str = eqx.field(static=True, default="blake3")
    vram_budget_mb: float | None = eqx.field(static=True, default=None)
    device_row_floor_log2: int = eqx.field(static=True, default=8)
    max_chunk_rows_log2: int | str | None = eqx.field(static=True, default=None)
    chunk_group: int | None = eqx.field(static=True, default=None)
    held_strategies: tuple[str, ...] = eqx.field(static=True, default=("park", "recompute", "blocks"))

    def __check_init__(self) -> None:
        b = self.blowup
        if not isinstance(b, int) or b < 2 or b & (b - 1) or b > 1 << 10:
            raise ValueError(f"StarkConfig.blowup must be a power of two in [2, 1024], got {b!r}")
        if not isinstance(self.num_queries, int) or not 1 <= self.num_queries <= 256:
            raise ValueError(f"StarkConfig.num_queries must be an int in [1, 256], got {self.num_queries!r}")
        if not isinstance(self.grinding_bits, int) or not 0 <= self.grinding_bits <= 32:
            raise ValueError(f"StarkConfig.grinding_bits must be an int in [0, 32], got {self.grinding_bits!r}")
        f = self.fri_final_degree
        if not isinstance(f, int) or f < 1 or f & (f - 1):
            raise ValueError(f"StarkConfig.fri_final_degree must be a power of two >= 1, got {f!r}")
        mb = self.vram_budget_mb
        if mb is not None and (isinstance(mb, bool) or not isinstance(mb, (int, float)) or not mb > 0):
            raise ValueError(f"StarkConfig.vram_budget_mb must be a positive number of MiB or None, got {mb!r}")
        floor = self.device_row_floor_log2
        if isinstance(floor, bool) or not isinstance(floor, int) or not 0 <= floor <= 31:
            raise ValueError(f"StarkConfig.device_row_floor_log2 must be an int in [0, 31], got {floor!r}")
        cap = self.max_chunk_rows_log2
        bad_int = isinstance(cap, bool) or not isinstance(cap, int) or not 1 <= cap <= 31
        if cap is not None and cap != "auto" and bad_int:
            raise ValueError(f"StarkConfig.max_chunk_rows_log2 must be None, 'auto' or an int in [1, 31], got {cap!r}")
        g = self.chunk_group
        if g is not None and (isinstance(g, bool) or not isinstance(g, int) or g < 1 or g & (g - 1)):
            raise ValueError(f"StarkConfig.chunk_group must be None or a power of two >= 1, got {g!r}")
        hs = self.held_strategies
        if not isinstance(hs, tuple) or not set(hs) <= set(HELD_STRATEGIES) or len(set(hs)) != len(hs):
            raise ValueError(
                f"StarkConfig.held_strategies must be a tuple of distinct names from {HELD_STRATEGIES} (() keeps "
                f"every held buffer on the device), got {hs!r}"
            )
        if self.hash not in HASHES:
            raise ValueError(f"StarkConfig.hash must be one of {sorted(HASHES)}, got {self.hash!r}")

    @property
    def log_blowup(self) -> int:
        return self.blowup.bit_length() - 1

    def security_bits(self) -> float:
        """Conjectured soundness in bits (not a proven bound):
        ``min(num_queries * log2(blowup) + grinding_bits, 128)``.

        The query term is the standard conjectured FRI bound (ethSTARK documentation,
        eprint 2021/582, section 5.10.1: each query catches a word far from the code with
        probability ``1 - 1/blowup``); the cap is the extension field's size less 64 bits of slack
        for the out-of-domain and constraint-combination terms. See
        :meth:`proven_security_bits` for a bound that is proven."""
        query = self.num_queries * math.log2(self.blowup) + self.grinding_bits
        return min(query, FIELD_CAP_BITS)

    def proven_security_bits(self, log_n: int, batched: int = 1) -> float:
        """Proven soundness in bits for a trace of ``2^log_n`` rows, in the Johnson regime of FRI
        (ethSTARK documentation, eprint 2021/582, Theorem 2, with the proximity gaps of Ben-Sasson,
        Carmon, Ishai, Kopparty and Saraf, eprint 2020/654). With rate ``rho = 1/blowup``, LDE
        domain ``D`` of ``2^(log_n + log2 blowup)`` points, the extension field ``F`` (``|F| ~
        2^192``), ``k`` binary FRI folds (arities summing to ``2k``), ``t = batched`` functions
        combined into the DEEP word with powers of one challenge (the correlated-agreement
        factor ``t - 1`` of BCIKS20 for curves, at least 1) and any ``m >= 3``:

            eps_commit = max(t - 1, 1) (m + 1/2)^7 / (3 rho^(3/2)) * |D|^2 / |F|
                         + (2m + 1)(|D| + 1) 2k / (sqrt(rho) |F|)
            eps_query  = (sqrt(rho) (1 + 1/(2m)))^num_queries * 2^-grinding_bits
            bits       = min(-log2(eps_commit + eps_query) maximised over m in [3, 4096], 128).

        The query term is about half the conjectured one (``sqrt(rho)`` instead of ``rho`` per
        query). Not included: the DEEP and constraint-combination terms, each below
        ``2^-(192 - 2 * log2 |D| - 10)`` at the heights this prover supports, and the hash's
        collision resistance (128 bits for the 256-bit hashes, hence the cap). For 128 queries at
        blowup 2 without grinding this gives 64 bits, within a bit of the Johnson-regime query-phase
        figure published soundness calculators give for those parameters."""
        if isinstance(log_n, bool) or not isinstance(log_n, int) or not 1 <= log_n <= 31:
            raise ValueError(f"proven_security_bits: log_n must be an int in [1, 31], got {log_n!r}")
        if isinstance(batched, bool) or not isinstance(batched, int) or batched < 1:
            raise ValueError(f"proven_security_bits: batched must be a positive int, got {batched!r}")
        rho = 1.0 / self.blowup
        log_d = log_n + self.log_blowup
        folds = max(0, log_n - (self.fri_final_degree.bit_length() - 1))
        best = 0.0
        for m in range(3, 4097):
            log_c1 = (
                math.log2(max(batched - 1, 1)) + 7 * math.log2(m + 0.5) - math.log2(3) - 1.5 * math.log2(rho)
                + 2 * log_d - LOG2_FIELD
            )  # fmt: skip
            log_c2 = math.log2((2 * m + 1) * ((1 << log_d) + 1) * 2 * max(folds, 1)) - 0.5 * math.log2(rho) - LOG2_FIELD
            log_q = self.num_queries * math.log2(math.sqrt(rho) * (1 + 1 / (2 * m))) - self.grinding_bits
            total = 2.0**log_c1 + 2.0**log_c2 + 2.0**log_q
            best = max(best, -math.log2(total))
        return min(best, FIELD_CAP_BITS)

    def security_report(self, log_n: int | None = None) -> str:
        """The conjectured level and its formula; with ``log_n``, also the proven level."""
        q = self.num_queries * math.log2(self.blowup)
        text = (
            f"conjectured security {self.security_bits():.0f} bits = min({self.num_queries} queries x "
            f"log2({self.blowup}) = {q:.0f} + {self.grinding_bits} grinding bits, field cap "
            f"{FIELD_CAP_BITS} bits); this is the conjectured (not the proven) FRI soundness bound"
        )
        if log_n is not None:
            text += f"; proven (Johnson regime) {self.proven_security_bits(log_n):.0f} bits at 2^{log_n} rows"
        return text

    def fingerprint(self) -> str:
        return f"b{self.blowup}/q{self.num_queries}/g{self.grinding_bits}/f{self.fri_final_degree}/{self.hash}"


def env_knob(
    name: str, convert: Callable[[str], object], valid: Callable, meaning: str, keywords: tuple[str, ...] = ()
):
    """The value of environment knob ``name``: None when unset or blank, one of ``keywords`` as
    given, else ``convert(text)`` checked by ``valid``; a bad value raises ValueError naming the
    variable and ``meaning`` (what a good value is)."""
    text = os.environ.get(name)
    if text is None or not text.strip():
        return None
    if text.strip() in keywords:
        return text.strip()
    try:
        value = convert(text)
    except ValueError:
        raise ValueError(f"{name}={text!r} is not {meaning}") from None
    if not valid(value):
        raise ValueError(f"{name}={text!r} must be {meaning}")
    return value
