"""The Fiat-Shamir schedule: every label, every absorb and every challenge, in order, once.

Each step is a function of a transcript -- the JAX :class:`~jaxstark.transcript.Transcript`
inside the prover's jitted rounds, the :class:`~jaxstark.transcript.HostTranscript` in the
verifier -- written with the methods both share, so prover and verifier cannot disagree on a
label or an order. The whole sequence of a proof::

    statement   init "jaxstark v2"; digest "config" (hash of the config fingerprint);
                base "tables" (count); per table: digest "air" (hash of its fingerprint),
                base "shape" (log n, width), [base "chunks" (log2 of its row chunks, when
                split)], base "public inputs"
    round 1     per unit (table or row chunk) in statement order: digest "trace root"
                if any table has interactions: challenge_ext "logup challenges" (beta, gamma);
                per unit with interactions: digest "aux root", ext "bus sums"
    fork        per unit ``i``: fork(i) -- its own transcript for rounds 2-5
    round 2     challenge_ext "composition alphas" (one per constraint); digest "composition root"
    round 3     challenge_ext "ood point" (z); ext "ood trace z", "ood trace zg", "ood parts z",
                [ext "ood aux z", "ood aux zg"]
    round 4     challenge_ext "deep gamma"; per FRI layer k: digest "fri layer k",
                challenge_ext "fri beta k"; ext "fri final poly"
    round 5     proof of work on the state; base "pow nonce"; queries "fri queries" (positions
                in the LDE domain)

:func:`replay_table` is rounds 2-5 as the verifier replays them from a table's proof.
"""

from __future__ import annotations

import numpy as np

from jaxstark.protocol.layout import fri_num_layers, num_constraints

__all__ = [
    "PROTOCOL",
    "LABELS",
    "bind_statement",
    "absorb_trace",
    "logup_challenges",
    "absorb_aux",
    "fork_table",
    "composition_alphas",
    "absorb_composition",
    "ood_point",
    "absorb_ood",
    "deep_gamma",
    "fri_labels",
    "fri_layer",
    "absorb_fri_final",
    "absorb_nonce",
    "query_positions",
    "replay_table",
]

PROTOCOL = "jaxstark v2"

CONFIG, TABLES, AIR_ID, SHAPE, CHUNKS, PUBLIC = "config", "tables", "air", "shape", "chunks", "public inputs"
TRACE_ROOT, LOGUP, AUX_ROOT, BUS_SUMS = "trace root", "logup challenges", "aux root", "bus sums"
ALPHAS, COMPOSITION_ROOT, OOD_POINT = "composition alphas", "composition root", "ood point"
OOD_TRACE_Z, OOD_TRACE_ZG, OOD_PARTS_Z = "ood trace z", "ood trace zg", "ood parts z"
OOD_AUX_Z, OOD_AUX_ZG = "ood aux z", "ood aux zg"
DEEP_GAMMA, FRI_FINAL, POW_NONCE, QUERIES = "deep gamma", "fri final poly", "pow nonce", "fri queries"

LABELS = (
    PROTOCOL, CONFIG, TABLES, AIR_ID, SHAPE, CHUNKS, PUBLIC, TRACE_ROOT, LOGUP, AUX_ROOT, BUS_SUMS, ALPHAS,
    COMPOSITION_ROOT, OOD_POINT, OOD_TRACE_Z, OOD_TRACE_ZG, OOD_PARTS_Z, OOD_AUX_Z, OOD_AUX_ZG, DEEP_GAMMA, FRI_FINAL,
    POW_NONCE, QUERIES,
)  # fmt: skip


def _u64(*values) -> np.ndarray:
    return np.array(values, np.uint64)


def bind_statement(tr, airs, config, log_ns, chunks, publics):
    """The statement, before anything else (``tr`` a fresh transcript for :data:`PROTOCOL`):
    config, number of tables, per table its AIR, shape, chunks (``chunks``: per table log2 of its
    row chunks, or ``()`` when none is split) and public inputs."""
    tr = tr.absorb_digest(CONFIG, tr.text_digest(config.fingerprint()))
    tr = tr.absorb_base(TABLES, _u64(len(airs)))
    for t, (air, log_n, public) in enumerate(zip(airs, log_ns, publics, strict=True)):
        tr = tr.absorb_digest(AIR_ID, tr.text_digest(air.fingerprint()))
        tr = tr.absorb_base(SHAPE, _u64(log_n, air.width))
        if chunks and chunks[t]:
            tr = tr.absorb_base(CHUNKS, _u64(chunks[t]))
        tr = tr.absorb_base(PUBLIC, public)
    return tr


def absorb_trace(tr, root):
    return tr.absorb_digest(TRACE_ROOT, root)


def logup_challenges(tr):
    """``(tr, (beta, gamma))``, drawn once after every main commitment."""
    return tr.challenge_ext(LOGUP, 2)


def absorb_aux(tr, root, sums):
    return tr.absorb_digest(AUX_ROOT, root).absorb_ext(BUS_SUMS, sums)


def fork_table(tr, index):
    """Unit ``index``'s own transcript for rounds 2-5."""
    return tr.fork(index)


def composition_alphas(tr, air):
    return tr.challenge_ext(ALPHAS, num_constraints(air))


def absorb_composition(tr, root):
    return tr.absorb_digest(COMPOSITION_ROOT, root)


def ood_point(tr):
    return tr.challenge_ext(OOD_POINT)


def absorb_ood(tr, trace_z, trace_zg, parts_z, aux_z, aux_zg):
    tr = tr.absorb_ext(OOD_TRACE_Z, trace_z).absorb_ext(OOD_TRACE_ZG, trace_zg).absorb_ext(OOD_PARTS_Z, parts_z)
    if aux_z.shape[0]:
        tr = tr.absorb_ext(OOD_AUX_Z, aux_z).absorb_ext(OOD_AUX_ZG, aux_zg)
    return tr


def deep_gamma(tr):
    return tr.challenge_ext(DEEP_GAMMA)


def fri_labels(k: int) -> tuple[str, str]:
    """FRI layer ``k``'s two labels: its root's and its folding challenge's."""
    return f"fri layer {k}", f"fri beta {k}"


def fri_layer(tr, labels, root):
    """Absorb a FRI layer's root and draw its folding challenge (``labels`` from
    :func:`fri_labels`, as strings or as encoded data). Returns ``(tr, beta)``."""
    return tr.absorb_digest(labels[0], root).challenge_ext(labels[1])


def absorb_fri_final(tr, final):
    return tr.absorb_ext(FRI_FINAL, final)


def absorb_nonce(tr, nonce):
    return tr.absorb_base(POW_NONCE, nonce[None])


def query_positions(tr, num_queries: int, log_size: int):
    return tr.query_indices(QUERIES, num_queries, 1 << log_size)


def replay_table(tr, air, config, log_n: int, a: dict) -> dict:
    """Rounds 2-5 of one unit's fork from its proof's fields ``a``: the composition challenges,
    ``z``, ``gamma``, the FRI folding challenges, whether the nonce passes the proof of work, and
    the query positions; ``log``: the fork's annotated entries."""
    tr, alphas = composition_alphas(tr, air)
    tr = absorb_composition(tr, a["parts_root"])
    tr, z = ood_point(tr)
    tr = absorb_ood(tr, a["trace_z"], a["trace_zg"], a["parts_z"], a["aux_z"], a["aux_zg"])
    tr, gamma = deep_gamma(tr)
    betas = []
    for k in range(fri_num_layers(log_n, config.fri_final_degree)):
        tr, beta = fri_layer(tr, fri_labels(k), a["fri_roots"][k])
        betas.append(beta)
    tr = absorb_fri_final(tr, a["fri_final"])
    pow_ok = tr.pow_ok(a["nonce"], config.grinding_bits)
    tr = absorb_nonce(tr, a["nonce"])
    tr, idx = query_positions(tr, config.num_queries, log_n + config.log_blowup)
    return dict(alphas=alphas, z=z, gamma=gamma, betas=betas, pow_ok=pow_ok, idx=idx, log=tr.log)
