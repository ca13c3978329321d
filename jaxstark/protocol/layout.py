"""The proof's layout: how many constraints, DEEP terms and FRI layers a table has, and the
shape and dtype of every field of its :class:`~jaxstark.proof.TableProof` for a given AIR, config
and trace height -- what the prover writes and the verifier demands."""

from __future__ import annotations

import numpy as np

__all__ = ["num_constraints", "num_deep_terms", "fri_num_layers", "table_shapes", "DIGEST_FIELDS"]

DIGEST_FIELDS = ("trace_root", "aux_root", "parts_root", "fri_roots", "trace_paths", "aux_paths", "parts_paths")


def num_constraints(air) -> int:
    """Transition, boundary and aux constraints: one composition challenge each."""
    boundary = air.boundary(tuple(range(air.num_public_inputs)))
    return len(air.constraint_degrees()) + len(boundary) + air.num_aux_columns


def num_deep_terms(c: int, parts: int, aux: int) -> int:
    """Powers of the DEEP challenge: main columns at ``z`` and ``zw``, parts at ``z``, aux
    columns at ``z`` and ``zw``."""
    return 2 * c + parts + 2 * aux


def fri_num_layers(log_n: int, final_degree: int) -> int:
    """Folds until the degree bound ``n / 2^K`` is at most ``final_degree``."""
    return max(0, log_n - (final_degree.bit_length() - 1))


def table_shapes(air, config, log_n: int) -> dict:
    """``name -> (shape, dtype)`` for every array field of a table's proof; ``fri_rows`` and
    ``fri_paths`` map to a list of one ``(shape, dtype)`` per FRI layer."""
    c, a, parts, q = air.width, air.num_aux_columns, air.composition_parts, config.num_queries
    buses = len({i.bus for i in air.interactions()})
    log_l = log_n + config.log_blowup
    layers = fri_num_layers(log_n, config.fri_final_degree)
    u8, u64 = np.dtype(np.uint8), np.dtype(np.uint64)
    return dict(
        trace_root=((32,), u8), aux_root=((1 if a else 0, 32), u8), bus_sums=((buses, 3), u64),
        parts_root=((32,), u8), fri_roots=((layers, 32), u8), trace_z=((c, 3), u64), trace_zg=((c, 3), u64),
        aux_z=((a, 3), u64), aux_zg=((a, 3), u64), parts_z=((parts, 3), u64),
        fri_final=(((1 << log_n) >> layers, 3), u64), nonce=((), u64), trace_rows=((q, c), u64),
        trace_paths=((q, log_l, 32), u8), aux_rows=((q, 3 * a), u64), aux_paths=((q, log_l if a else 0, 32), u8),
        parts_rows=((q, 3 * parts), u64), parts_paths=((q, log_l, 32), u8),
        fri_rows=[((q, 6), u64)] * layers, fri_paths=[((q, log_l - 1 - k, 32), u8) for k in range(layers)],
    )  # fmt: skip
