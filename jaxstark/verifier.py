"""``verify``: check a single-table proof on the host CPU.

Sections mirror the prover's rounds:

0. format and shape: the proof belongs to this AIR and config, every array has the shape the
   AIR, config and trace height imply, and every field element is canonical;
1.-4. transcript replay: the same absorbs and squeezes as the prover, giving the composition
   challenges, ``z``, ``gamma``, the FRI folding challenges;
2'. out-of-domain check: the constraints evaluated at ``z`` from the claimed ``T(z), T(zw)``,
   divided by their zerofiers and combined, equal ``sum_j z^(jn) H_j(z)``;
5. proof of work, query indices, Merkle paths of every opening, the DEEP value at each query
   from the opened rows equals the first FRI layer, every fold is consistent, and the last fold
   equals the final polynomial.

Every rejection raises :class:`~jaxstark.errors.InvalidProof` with a ``code`` and a sentence;
malformed input of any kind is a rejection, never a crash.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxstark.air import AIR, Val
from jaxstark.config import StarkConfig
from jaxstark.errors import InvalidProof, JaxstarkError, ShapeError
from jaxstark.field import extension as fext
from jaxstark.field import goldilocks as gl
from jaxstark.lde import DEFAULT_OFFSET
from jaxstark.merkle import _verify as _verify_paths_core
from jaxstark.ntt import intt
from jaxstark.poly import _evaluate
from jaxstark.proof import Proof
from jaxstark.prover import initial_transcript, public_array
from jaxstark.rounds.r2_composition import combine_constraints, num_constraints
from jaxstark.rounds.r3_ood import OutOfDomain
from jaxstark.rounds.r4_deep_fri import deep_combine, fold_pair, fri_num_layers

__all__ = ["verify"]

P = gl.P


def _reject(code: str, message: str):
    raise InvalidProof(code, message)


def _expect(name: str, value, shape: tuple, dtype) -> np.ndarray:
    a = np.asarray(value)
    if a.dtype != dtype or a.shape != shape:
        _reject("malformed", f"{name} has {a.dtype}{a.shape}, expected {np.dtype(dtype)}{shape}")
    if dtype == np.uint64 and a.size and int(a.max()) >= P:
        _reject("malformed", f"{name} holds a non-canonical field element")
    return a


def verify(
    air: AIR,
    proof: Proof | bytes,
    public_inputs: Sequence[int] = (),
    config: StarkConfig | None = None,
    *,
    log_n: int | None = None,
) -> bool:
    """Return True if ``proof`` is valid for ``air``, ``public_inputs`` and ``config``; otherwise
    raise :class:`InvalidProof` (``.code`` says which check failed).

    The trace height is the prover's choice and bound into the transcript; pass ``log_n`` when
    the statement fixes it (a proof of another height is then rejected with ``wrong-height``)."""
    config = config or StarkConfig()
    if not isinstance(air, AIR):
        raise TypeError(f"verify: air must be an AIR instance, got {type(air).__name__}")
    if not isinstance(config, StarkConfig):
        raise TypeError(f"verify: config must be a StarkConfig, got {type(config).__name__}")
    try:
        if isinstance(proof, (bytes, bytearray, memoryview)):
            proof = Proof.from_bytes(proof)
        if not isinstance(proof, Proof):
            _reject("malformed", f"expected a Proof or its bytes, got {type(proof).__name__}")
        with jax.default_device(jax.devices("cpu")[0]):
            _verify(air, proof, public_inputs, config, log_n)
    except JaxstarkError:
        raise
    except (ValueError, TypeError, IndexError, OverflowError, KeyError) as exc:
        raise InvalidProof("malformed", f"proof could not be checked: {type(exc).__name__}: {exc}") from exc
    return True


def _verify(air: AIR, proof: Proof, public_inputs: Sequence[int], config: StarkConfig, expected_log_n) -> None:
    # -- 0. identity and shapes ---------------------------------------------------------------
    if proof.air_id != air.fingerprint():
        _reject("wrong-air", f"the proof is for AIR '{proof.air_id}', not '{air.fingerprint()}'")
    if proof.config_id != config.fingerprint():
        _reject("wrong-config", f"the proof used config '{proof.config_id}', not '{config.fingerprint()}'")
    try:
        public = public_array(air, public_inputs)
    except ValueError as exc:
        _reject("public-inputs", str(exc))
    log_n = proof.log_n
    if not isinstance(log_n, int) or not 1 <= log_n <= 31 - config.log_blowup:
        _reject("malformed", f"trace height 2^{log_n} is out of range")
    if expected_log_n is not None and log_n != expected_log_n:
        _reject("wrong-height", f"the proof is for 2^{log_n} rows, the statement says 2^{expected_log_n}")
    try:
        air.check_height(log_n)
    except ShapeError as exc:
        _reject("wrong-height", str(exc))
    n, c, parts, q = 1 << log_n, air.width, air.composition_parts, config.num_queries
    log_l = log_n + config.log_blowup
    layers = fri_num_layers(log_n, config.fri_final_degree)
    u8, u64 = np.uint8, np.uint64
    trace_root = _expect("trace_root", proof.trace_root, (32,), u8)
    parts_root = _expect("parts_root", proof.parts_root, (32,), u8)
    fri_roots = _expect("fri_roots", proof.fri_roots, (layers, 32), u8)
    ood = OutOfDomain(
        z=jnp.zeros((3,), jnp.uint64),
        trace_z=jnp.asarray(_expect("trace_z", proof.trace_z, (c, 3), u64)),
        trace_zg=jnp.asarray(_expect("trace_zg", proof.trace_zg, (c, 3), u64)),
        parts_z=jnp.asarray(_expect("parts_z", proof.parts_z, (parts, 3), u64)),
    )
    final = _expect("fri_final", proof.fri_final, (n >> layers, 3), u64)
    nonce = _expect("nonce", proof.nonce, (), u64)
    trace_rows = _expect("trace_rows", proof.trace_rows, (q, c), u64)
    trace_paths = _expect("trace_paths", proof.trace_paths, (q, log_l, 32), u8)
    parts_rows = _expect("parts_rows", proof.parts_rows, (q, 3 * parts), u64)
    parts_paths = _expect("parts_paths", proof.parts_paths, (q, log_l, 32), u8)
    if len(proof.fri_rows) != layers or len(proof.fri_paths) != layers:
        _reject("malformed", f"expected {layers} FRI layers, got {len(proof.fri_rows)} / {len(proof.fri_paths)}")
    fri_rows = [_expect(f"fri_rows[{k}]", r, (q, 6), u64) for k, r in enumerate(proof.fri_rows)]
    fri_paths = [_expect(f"fri_paths[{k}]", p, (q, log_l - 1 - k, 32), u8) for k, p in enumerate(proof.fri_paths)]

    arrays = dict(
        trace_root=trace_root,
        parts_root=parts_root,
        fri_roots=fri_roots,
        trace_z=ood.trace_z,
        trace_zg=ood.trace_zg,
        parts_z=ood.parts_z,
        final=final,
        nonce=nonce,
        trace_rows=trace_rows,
        trace_paths=trace_paths,
        parts_rows=parts_rows,
        parts_paths=parts_paths,
        fri_rows=tuple(fri_rows),
        fri_paths=tuple(fri_paths),
    )
    out = jax.device_get(_verify_core(air, config, log_n, public, jax.tree.map(jnp.asarray, arrays)))
    ood = OutOfDomain(jnp.asarray(out["z"]), ood.trace_z, ood.trace_zg, ood.parts_z)
    _check_ood(air, ood, jnp.asarray(out["alphas"]), public, log_n)
    if not out["pow_ok"]:
        _reject("pow", f"the nonce does not satisfy the {config.grinding_bits}-bit proof of work")
    for key, code, what in (("trace_ok", "trace-path", "trace"), ("parts_ok", "composition-path", "composition")):
        _first_bad(out[key], code, f"the {what} opening does not match its Merkle root")
    for k, ok in enumerate(out["fri_ok"]):
        _first_bad(ok, "fri-path", f"the FRI layer {k} opening does not match its Merkle root")
    for k, ok in enumerate(out["layer_ok"]):
        what = "the DEEP composition of the opened rows" if k == 0 else f"the fold of FRI layer {k - 1}"
        _first_bad(ok, "deep" if k == 0 else "fri-fold", f"the opened FRI layer {k} value does not match {what}")
    code = "deep" if not layers else "fri-final"
    _first_bad(out["final_ok"], code, "the last FRI value does not lie on the final polynomial")


def _first_bad(ok, code: str, message: str) -> None:
    ok = np.asarray(ok)
    if not ok.all():
        j = int(np.nonzero(~ok)[0][0])
        _reject(code, f"query {j}: {message}")


def _pow_index(base: int, exps: jax.Array, bits: int) -> jax.Array:
    """base^exps for a Python-int base and uint exponent array (square-and-multiply)."""
    return gl._pow_bits(jnp.asarray(np.uint64(base % P)), exps.astype(jnp.uint64), max(bits, 1))


@functools.partial(jax.jit, static_argnames=("air", "config", "log_n"))
def _verify_core(air: AIR, config: StarkConfig, log_n: int, public, a) -> dict:
    """Every check after the shape checks except the out-of-domain one, as one compiled program
    (compiled once per AIR, config and trace height): transcript replay, proof of work, Merkle
    paths, DEEP values, folds and the final polynomial. Returns flags per query."""
    c, parts, q = air.width, air.composition_parts, config.num_queries
    log_l = log_n + config.log_blowup
    layers = fri_num_layers(log_n, config.fri_final_degree)

    tr = initial_transcript(air, config, log_n, public)
    tr = tr.absorb_digest("trace root", a["trace_root"])
    tr, alphas = tr.challenge_ext("composition alphas", num_constraints(air))
    tr = tr.absorb_digest("composition root", a["parts_root"])
    tr, z = tr.challenge_ext("ood point")
    tr = tr.absorb_ext("ood trace z", a["trace_z"]).absorb_ext("ood trace zg", a["trace_zg"])
    tr = tr.absorb_ext("ood parts z", a["parts_z"])
    tr, gamma = tr.challenge_ext("deep gamma")
    betas = []
    for k in range(layers):
        tr = tr.absorb_digest(f"fri layer {k}", a["fri_roots"][k])
        tr, beta = tr.challenge_ext(f"fri beta {k}")
        betas.append(beta)
    tr = tr.absorb_ext("fri final poly", a["final"])
    pow_ok = tr.pow_ok(a["nonce"], config.grinding_bits)
    tr = tr.absorb_base("pow nonce", a["nonce"][None])
    tr, idx = tr.query_indices("fri queries", q, 1 << log_l)

    trace_ok = _verify_paths_core(config.hash, log_l, a["trace_root"], idx, a["trace_rows"], a["trace_paths"])
    parts_ok = _verify_paths_core(config.hash, log_l, a["parts_root"], idx, a["parts_rows"], a["parts_paths"])
    fri_ok = []
    for k in range(layers):
        pos = idx & np.uint32((1 << (log_l - 1 - k)) - 1)
        fri_ok.append(
            _verify_paths_core(config.hash, log_l - 1 - k, a["fri_roots"][k], pos, a["fri_rows"][k], a["fri_paths"][k])
        )

    xs = gl._mul(_pow_index(gl.root_of_unity(log_l), idx, log_l), np.uint64(DEFAULT_OFFSET))
    ood = OutOfDomain(z, a["trace_z"], a["trace_zg"], a["parts_z"])
    zg = fext._mul_base(z, np.uint64(gl.root_of_unity(log_n)))
    g_pows = fext._powers(gamma, 2 * c + parts)
    current = deep_combine(xs, a["trace_rows"], a["parts_rows"].reshape(q, parts, 3), ood, g_pows, zg)
    layer_ok = []
    cur_idx = idx
    for k in range(layers):
        half = 1 << (log_l - 1 - k)
        pos = cur_idx & np.uint32(half - 1)
        upper = ((cur_idx & np.uint32(half)) != np.uint32(0))[:, None]
        lo, hi = a["fri_rows"][k][:, :3], a["fri_rows"][k][:, 3:]
        layer_ok.append(jnp.all(jnp.where(upper, hi, lo) == current, axis=-1))
        w_inv = pow(gl.root_of_unity(log_l - k), P - 2, P)
        s_inv = pow(pow(DEFAULT_OFFSET, 1 << k, P), P - 2, P)
        x_inv = gl._mul(_pow_index(w_inv, pos, log_l - k), np.uint64(s_inv))
        current = fold_pair(lo, hi, x_inv, betas[k])
        cur_idx = pos
    log_m = log_l - layers
    pts = gl._mul(_pow_index(gl.root_of_unity(log_m), cur_idx, log_m), np.uint64(pow(DEFAULT_OFFSET, 1 << layers, P)))
    on_final = jax.vmap(lambda x: _evaluate(a["final"], x, True))(pts)
    final_ok = jnp.all(on_final == current, axis=-1)
    return dict(
        alphas=alphas,
        z=z,
        pow_ok=pow_ok,
        trace_ok=trace_ok,
        parts_ok=parts_ok,
        fri_ok=fri_ok,
        layer_ok=layer_ok,
        final_ok=final_ok,
    )


def _check_ood(air: AIR, ood: OutOfDomain, alphas, public, log_n: int) -> None:
    n = 1 << log_n
    z = ood.z
    cur = [Val(ood.trace_z[i], True) for i in range(air.width)]
    nxt = [Val(ood.trace_zg[i], True) for i in range(air.width)]
    periodic = []
    for col in air.periodic_arrays():
        coeffs = intt(jnp.asarray(col)[:, None])
        y = fext.pow(z, n // len(col))
        periodic.append(Val(_evaluate(coeffs, y, False)[0], True))
    pub = [Val(public[i]) for i in range(public.shape[0])]
    zn = fext.pow(z, n)
    zn_minus_1 = fext._sub(zn, fext.ones(()))
    if not np.asarray(zn_minus_1).any():
        _reject("ood", "the out-of-domain point lies in the trace domain")
    acc = combine_constraints(
        air, log_n, Val(z, True), Val(fext.inv(zn_minus_1), True), lambda d: Val(fext.inv(d.v), True),
        cur, nxt, periodic, pub, alphas,
    )  # fmt: skip
    # sum_j z^(j n) H_j(z)
    total, zpow = fext.zeros(()), fext.ones(())
    for j in range(ood.parts_z.shape[0]):
        total = fext._add(total, fext._mul(zpow, ood.parts_z[j]))
        zpow = fext._mul(zpow, zn)
    if not np.array_equal(np.asarray(acc), np.asarray(total)):
        _reject("ood", "the composition polynomial's claimed value at z does not match the AIR's constraints there")
