"""``prove``: run rounds 1-5 for one table and assemble the proof.

Data flow (each round a jitted pure function in :mod:`jaxstark.rounds`)::

    trace ──r1──> TraceCommitment(lde, coeffs, tree) ── root ──> transcript
    lde ────r2──> Composition(parts coeffs, parts lde, tree) ── root ──> transcript
    coeffs, parts coeffs ──r3──> OutOfDomain(z, T(z), T(zw), H_j(z)) ──> transcript
    lde, parts lde, ood ──r4──> FriCommitment(layer leaves + trees, final poly) ──> transcript
    trees, ldes ──r5──> Openings(nonce, indices, rows + paths) ──> Proof

The transcript starts from the protocol label and absorbs, before anything else, the AIR's
fingerprint, the config's fingerprint, the trace shape and the public inputs, so a proof is bound
to all of them.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxstark.air import AIR, Val
from jaxstark.config import StarkConfig
from jaxstark.errors import AirViolation, ShapeError
from jaxstark.field import goldilocks as gl
from jaxstark.field._check import field_array
from jaxstark.hash.interface import get_hash
from jaxstark.ntt import log2_exact
from jaxstark.proof import Proof
from jaxstark.rounds.domain import make_domain
from jaxstark.rounds.r1_trace_commit import trace_commit
from jaxstark.rounds.r2_composition import composition
from jaxstark.rounds.r3_ood import out_of_domain
from jaxstark.rounds.r4_deep_fri import deep_fri
from jaxstark.rounds.r5_queries import queries
from jaxstark.transcript import Transcript

__all__ = ["prove", "check_trace", "initial_transcript", "public_array"]

PROTOCOL = "jaxstark v1"


def public_array(air: AIR, public_inputs: Sequence[int]) -> jax.Array:
    """Public inputs as canonical uint64, checked against the AIR's declared count."""
    public_inputs = tuple(public_inputs)
    if len(public_inputs) != air.num_public_inputs:
        raise ValueError(f"{air.name} takes {air.num_public_inputs} public input(s), got {len(public_inputs)}")
    for i, v in enumerate(public_inputs):
        if not isinstance(v, (int, np.integer)) or not 0 <= int(v) < gl.P:
            raise ValueError(f"public input {i} must be a canonical field element (int in [0, p)), got {v!r}")
    return jnp.asarray(np.array([int(v) for v in public_inputs], dtype=np.uint64).reshape(-1))


@functools.partial(jax.jit, static_argnames=("air", "config", "log_n"))
def initial_transcript(air: AIR, config: StarkConfig, log_n: int, public: jax.Array) -> Transcript:
    """The transcript every proof starts from: protocol label, AIR and config fingerprints (hashed),
    trace shape, public inputs."""
    h = get_hash(config.hash)
    tr = Transcript.new(PROTOCOL, config.hash)
    for label, text in (("air", air.fingerprint()), ("config", config.fingerprint())):
        msg = jnp.asarray(np.frombuffer(text.encode("utf-8"), np.uint8)[None, :])
        tr = tr.absorb_digest(label, h.digest_bytes(msg)[0])
    tr = tr.absorb_base("shape", jnp.asarray(np.array([log_n, air.width], np.uint64)))
    return tr.absorb_base("public inputs", public)


def check_trace(air: AIR, trace, public_inputs: Sequence[int] = ()) -> None:
    """Raise :class:`AirViolation` naming the first failing constraint and row, if any."""
    trace = np.asarray(trace)
    n = trace.shape[0]
    public = public_array(air, public_inputs)
    pub = [Val(public[i]) for i in range(public.shape[0])]
    rows = n if air.row_local else n - 1  # a row-local AIR constrains the last row too
    if rows:
        cur = [Val(jnp.asarray(trace[:rows, i])) for i in range(air.width)]
        nxt = [Val(jnp.asarray(np.roll(trace[:, i], -1)[:rows])) for i in range(air.width)]
        periodic = [Val(jnp.asarray(np.resize(col, n)[:rows])) for col in air.periodic_arrays()]
        values = air.transition(cur, nxt, periodic, pub)
        degrees = air.constraint_degrees()
        if len(values) != len(degrees):
            raise AirViolation(
                f"{air.name}.transition returned {len(values)} constraints, constraint_degrees() lists {len(degrees)}"
            )
        for i, v in enumerate(values):
            arr = np.broadcast_to(np.asarray(v.v), (rows,))
            bad = np.nonzero(arr)[0]
            if bad.size:
                raise AirViolation(
                    f"{air.name}: transition constraint {i} fails at row {int(bad[0])} (frame rows {int(bad[0])} -> "
                    f"{int(bad[0]) + 1}; value {int(arr[bad[0]])}); {bad.size} failing row(s) in all"
                )
    for j, (col, row, value) in enumerate(air.boundary(pub)):
        want = int(np.asarray(value.v)) if isinstance(value, Val) else int(value) % gl.P
        got = int(trace[row % n, col])
        if got != want:
            raise AirViolation(
                f"{air.name}: boundary constraint {j} fails: column {col} at row {row % n} is {got}, expected {want}"
            )


def prove(
    air: AIR,
    trace,
    public_inputs: Sequence[int] = (),
    config: StarkConfig | None = None,
    *,
    debug: bool = False,
) -> Proof:
    """Prove that ``trace`` (``uint64[n, air.width]``, n a power of two >= 2) satisfies ``air``
    with ``public_inputs``. ``debug=True`` first checks every constraint on the trace and names
    the first failing one."""
    config = config or StarkConfig()
    if not isinstance(air, AIR):
        raise TypeError(f"prove: air must be an AIR instance, got {type(air).__name__}")
    trace = field_array(trace, "prove trace")
    if trace.ndim != 2 or trace.shape[1] != air.width:
        raise ShapeError(f"prove: trace must have shape (rows, {air.width}) for {air.name}, got {tuple(trace.shape)}")
    log_n = log2_exact(trace.shape[0], "prove: trace rows")
    if log_n < 1:
        raise ShapeError("prove: the trace needs at least 2 rows")
    if air.max_degree - 1 > config.blowup:
        raise ValueError(
            f"{air.name} has constraints of degree {air.max_degree}; blowup {config.blowup} supports at most "
            f"degree {config.blowup + 1}"
        )
    if log_n + config.log_blowup > 31:
        raise ShapeError(f"prove: an LDE of 2^{log_n} rows at blowup {config.blowup} exceeds 2^31 rows")
    air.check_height(log_n)
    public = public_array(air, public_inputs)
    if debug:
        check_trace(air, trace, public_inputs)

    domain = make_domain(log_n, config.blowup)
    tr = initial_transcript(air, config, log_n, public)
    r1, tr = trace_commit(trace, domain, tr, hash_name=config.hash)
    comp, tr = composition(air, domain, r1.lde, public, tr, hash_name=config.hash)
    if bool(comp.excess):
        message = (
            f"{air.name}: the composition polynomial is not of degree < {air.composition_parts} * n: the trace does "
            "not satisfy the AIR (prove with debug=True to name the constraint and row) or a constraint's declared "
            "degree is too low"
        )
        if debug:  # the trace passed check_trace, so a declared degree is wrong
            raise AirViolation(message)
        warnings.warn(message + "; the proof will not verify", stacklevel=2)
    ood, tr = out_of_domain(r1.coeffs, comp.parts_coeffs, tr, log_n=log_n)
    fri, tr = deep_fri(
        domain, r1.lde, comp.parts_lde, ood, tr, hash_name=config.hash, final_degree=config.fri_final_degree
    )
    op, _ = queries(
        r1, comp, fri, tr, grinding_bits=config.grinding_bits, num_queries=config.num_queries, log_size=domain.log_size
    )
    host = jax.device_get
    return Proof(
        air_id=air.fingerprint(),
        config_id=config.fingerprint(),
        log_n=log_n,
        trace_root=host(r1.root),
        parts_root=host(comp.root),
        fri_roots=host(jnp.stack([nodes[1] for nodes in fri.nodes]) if fri.nodes else jnp.zeros((0, 32), jnp.uint8)),
        trace_z=host(ood.trace_z),
        trace_zg=host(ood.trace_zg),
        parts_z=host(ood.parts_z),
        fri_final=host(fri.final),
        nonce=host(op.nonce),
        trace_rows=host(op.trace_rows),
        trace_paths=host(op.trace_paths),
        parts_rows=host(op.parts_rows),
        parts_paths=host(op.parts_paths),
        fri_rows=tuple(host(r) for r in op.fri_rows),
        fri_paths=tuple(host(p) for p in op.fri_paths),
    )
