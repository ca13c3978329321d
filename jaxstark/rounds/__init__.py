"""Proving rounds, one module per round (numbering as in docs/design.md): the statement's
transcript (computed on the host, :func:`~jaxstark.rounds.r0_statement.initial_transcript`) and
each unit's fork, trace commit (main, then aux), composition, out-of-domain evaluation, DEEP,
each large FRI layer, FRI's small layers and final polynomial, queries, and the openings of each
commitment. Each round but the statement is a jitted pure function from PyTree to PyTree, so the
memory planner can lower and compile it on abstract shapes; each is jitted with
``keep_unused=True``, so XLA's argument figure counts every buffer the round is handed (the
planner checks this).

The registry: every step the prover dispatches (:func:`jaxstark.schedule.schedule`) as a
:class:`Round` in :data:`ROUNDS`, under the name that plans, progress events, diagnostics and
fault sites use (:data:`TRACE_COMMIT`, :data:`FORK`, ...), with the jitted function, its
static arguments, what it returns for later rounds, and the stages its executable runs
(:data:`STAGES`). A FRI layer is dispatched under its layer's name (:func:`fri_layer_name`,
``"FRI layer 3"``), which :func:`registered` maps to the one :data:`FRI_LAYER` round; the
openings of a commitment likewise under :func:`openings_name` (``"openings trace"``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from jaxstark.config import StarkConfig
from jaxstark.rounds.r0_statement import fork_table
from jaxstark.rounds.r1_aux_commit import AuxCommitment, aux_commit, aux_commit_group, logup_challenges
from jaxstark.rounds.r1_trace_commit import TraceCommitment, trace_commit, trace_commit_group
from jaxstark.rounds.r2_composition import Composition, composition, composition_tree
from jaxstark.rounds.r3_ood import OutOfDomain, out_of_domain
from jaxstark.rounds.r4_deep import deep
from jaxstark.rounds.r4_fri_final import FriCommitment, fri_final
from jaxstark.rounds.r4_fri_layer import FriLayer, fri_layer
from jaxstark.rounds.r5_openings import Opened, openings
from jaxstark.rounds.r5_queries import Queries, queries

__all__ = [
    "Round", "ROUNDS", "STAGES", "CONFIG_STATICS", "TRACE_COMMIT", "TRACE_COMMIT_AGAIN",
    "LOGUP_CHALLENGES", "AUX_COMMIT", "AUX_COMMIT_AGAIN", "FORK", "COMPOSITION", "COMPOSITION_TREE", "OUT_OF_DOMAIN",
    "DEEP", "FRI_LAYER", "FRI_FINAL", "QUERIES", "OPENINGS", "OPENED", "FriCommitment", "fri_layer_name",
    "openings_name", "registered",
]  # fmt: skip

TRACE_COMMIT = "trace commit"
TRACE_COMMIT_AGAIN = "trace commit again"
LOGUP_CHALLENGES = "logup challenges"
AUX_COMMIT = "aux commit"
AUX_COMMIT_AGAIN = "aux commit again"
FORK = "fork"
COMPOSITION = "composition"
COMPOSITION_TREE = "composition tree"
OUT_OF_DOMAIN = "out-of-domain"
DEEP = "DEEP"
FRI_LAYER = "FRI layer"
FRI_FINAL = "FRI final"
QUERIES = "queries"
OPENINGS = "openings"
# the commitments a unit's openings are dispatched for, in order (aux only with interactions)
OPENED = ("trace", "aux", "composition", "FRI")

# the stages inside the rounds' executables (one call per stage a dispatch runs)
STAGES: dict[str, str] = {
    "LDE": "a coset low-degree extension: the main and aux traces, the composition parts",
    "tree build": "a Merkle tree: main, aux, composition parts, each FRI layer",
    "aux build": "the LogUp aux columns from the trace and the challenges",
    "FRI fold": "one FRI fold (a call per layer)",
    "grinding": "the proof-of-work search",
    "query gather": "the opened rows and their Merkle paths",
}

# a round's static argument -> the StarkConfig field it is read from
CONFIG_STATICS: dict[str, str] = {
    "hash_name": "hash",
    "grinding_bits": "grinding_bits",
    "num_queries": "num_queries",
}


@dataclasses.dataclass(frozen=True)
class Round:
    """One step the prover dispatches. ``fn`` is jitted; ``group_fn``, when set, proves a group of
    row chunks itself (a leading group axis on the trace) instead of being run under ``vmap``."""

    name: str
    fn: Callable
    statics: tuple[str, ...]  # its static keyword arguments
    outputs: tuple[str, ...]  # what it returns besides the transcript, for later rounds or the proof
    description: str
    stages: tuple[str, ...] = ()  # the stages its executable runs, in order
    layer_stages: tuple[str, ...] = ()  # ... then these, once per FRI layer
    layers: Callable[[tuple, dict], int] | None = None  # a dispatch's FRI layers, from its arguments and statics
    group_fn: Callable | None = None
    # outputs (fields of its first result) that are Merkle node arrays the openings can build
    # again from their matrix: what the planner may recompute instead of holding
    trees: tuple[str, ...] = ()
    opened: str | None = None  # the commitment (OPENED) whose openings build such a tree again
    tree_round: str | None = None  # the round that builds the tree apart when it is recomputed
    # a round computed in blocks of rows one after another (static "blocks"): the most blocks
    # its arguments allow; the planner may raise the platform's default up to it
    blocked: Callable[[tuple], int] | None = None

    def __post_init__(self) -> None:
        unknown = [s for s in (*self.stages, *self.layer_stages) if s not in STAGES]
        if unknown:
            raise ValueError(f"round {self.name!r}: unknown stages {unknown}; the stages are {list(STAGES)}")

    def static(self, config: StarkConfig, /, **given) -> dict:
        """The round's static arguments: ``given``, and the rest read from ``config``
        (:data:`CONFIG_STATICS`)."""
        unknown = sorted(set(given) - set(self.statics))
        if unknown:
            raise TypeError(f"round {self.name!r} takes the statics {list(self.statics)}, not {unknown}")
        out = {}
        for name in self.statics:
            if name in given:
                out[name] = given[name]
            elif name in CONFIG_STATICS:
                out[name] = getattr(config, CONFIG_STATICS[name])
            else:
                raise TypeError(f"round {self.name!r} needs the static {name!r}")
        return out

    def fri_layers(self, args: tuple, static: dict) -> int:
        """The FRI layers a dispatch with these arguments and statics runs (0 outside FRI final)."""
        return 0 if self.layers is None else self.layers(args, static)

    def stage_sites(self, fri_layers: int = 0) -> tuple[str, ...]:
        """The stages a dispatch runs, in order (``fri_layers``: its FRI folds, each with its tree)."""
        return (*self.stages, *self.layer_stages * fri_layers)


def _fields(module_type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(module_type))


def _small_layers(args: tuple, static: dict) -> int:
    return args[2].s_inv.shape[-1]  # args[2]: the small layers' FriStep (a group axis first, under vmap)


MIN_BLOCK_ROWS = 1 << 12  # a round the planner runs in more blocks of rows keeps at least this many per block


def _ood_blocks(args: tuple) -> int:
    return max(1, args[0].shape[0] // MIN_BLOCK_ROWS)  # args[0]: the trace coefficients (n rows)


def _lde_blocks(args: tuple) -> int:  # DEEP's and the composition's
    return max(1, args[1].shape[0] // MIN_BLOCK_ROWS)  # args[1]: the trace LDE (L rows)


def fri_layer_name(k: int) -> str:
    """The name FRI layer ``k`` of a unit is dispatched, planned and reported under."""
    return f"{FRI_LAYER} {k}"


def openings_name(what: str) -> str:
    """The name the openings of commitment ``what`` (:data:`OPENED`) are dispatched under."""
    if what not in OPENED:
        raise ValueError(f"openings of {what!r}: the commitments opened are {list(OPENED)}")
    return f"{OPENINGS} {what}"


def registered(name: str) -> Round | None:
    """The round a dispatch named ``name`` is (:data:`ROUNDS`; a FRI layer's name, such as
    ``"FRI layer 3"``, is the :data:`FRI_LAYER` round, and ``"openings trace"`` the
    :data:`OPENINGS` round); None for a name of no round."""
    r = ROUNDS.get(name)
    if r is None and name.startswith(FRI_LAYER + " ") and name[len(FRI_LAYER) + 1 :].isdigit():
        r = ROUNDS[FRI_LAYER]
    if r is None and name.startswith(OPENINGS + " ") and name[len(OPENINGS) + 1 :] in OPENED:
        r = ROUNDS[OPENINGS]
    return r


_COMMIT_STAGES = ("LDE", "tree build")
_AUX_STAGES = ("aux build", "LDE", "tree build")

ROUNDS: dict[str, Round] = {
    r.name: r
    for r in (
        Round(TRACE_COMMIT, trace_commit, ("hash_name",), _fields(TraceCommitment),
              "LDE of the main trace and its Merkle tree", _COMMIT_STAGES, group_fn=trace_commit_group,
              trees=("nodes",), opened="trace"),
        Round(TRACE_COMMIT_AGAIN, trace_commit_group, ("hash_name",), _fields(TraceCommitment),
              "the same, recomputed for a group of row chunks before its rounds 2-5", _COMMIT_STAGES,
              group_fn=trace_commit_group),
        Round(LOGUP_CHALLENGES, logup_challenges, (), ("challenges",), "the LogUp challenges drawn"),
        Round(AUX_COMMIT, aux_commit, ("air", "hash_name"), _fields(AuxCommitment),
              "LogUp aux columns built, their LDE and Merkle tree", _AUX_STAGES, group_fn=aux_commit_group,
              trees=("nodes",), opened="aux"),
        Round(AUX_COMMIT_AGAIN, aux_commit_group, ("air", "hash_name"), _fields(AuxCommitment),
              "the same, recomputed for a group of row chunks", _AUX_STAGES, group_fn=aux_commit_group),
        Round(FORK, fork_table, (), (), "a table's (or chunk's) transcript forked"),
        Round(COMPOSITION, composition, ("air", "hash_name", "tree", "blocks"), _fields(Composition),
              "the constraints over the LDE, the composition parts and their tree", _COMMIT_STAGES,
              trees=("nodes",), opened="composition", tree_round=COMPOSITION_TREE, blocked=_lde_blocks),
        Round(COMPOSITION_TREE, composition_tree, ("hash_name",), ("nodes",),
              "the composition parts' tree built apart, only its root kept (its tree recomputed)", ("tree build",)),
        Round(OUT_OF_DOMAIN, out_of_domain, ("log_n", "blocks"), _fields(OutOfDomain),
              "every polynomial evaluated at the out-of-domain point", blocked=_ood_blocks),
        Round(DEEP, deep, ("blocks",), ("values",), "the DEEP sum over the LDE: FRI's first layer",
              blocked=_lde_blocks),
        Round(FRI_LAYER, fri_layer, ("hash_name", "names"), _fields(FriLayer),
              "one large FRI layer: its tree, and its fold", ("tree build", "FRI fold"), trees=("nodes",),
              opened="FRI"),
        Round(FRI_FINAL, fri_final, ("hash_name", "degree"), _fields(FriCommitment),
              "FRI's small layers (each a tree and a fold) and the final polynomial", (),
              ("tree build", "FRI fold"), _small_layers),
        Round(QUERIES, queries, ("grinding_bits", "num_queries", "log_size", "batch"), _fields(Queries),
              "grinding and the query indices", ("grinding",)),
        Round(OPENINGS, openings, ("hash_name",), _fields(Opened),
              "one commitment's opened rows, their Merkle paths and its roots (a recomputed tree built again "
              "first)", ("query gather",)),
    )
}  # fmt: skip
