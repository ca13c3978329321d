"""Round 4b: one layer of the FRI commit phase (binary folding).

Layer ``k`` holds ``f`` on the coset ``s^(2^k) <w_m>`` (natural order, ``m = L / 2^k``); its
Merkle leaves are the pairs ``(f[t], f[t + m/2])`` for ``t < m/2`` (6 base elements each), and
after absorbing its root a challenge ``beta_k`` folds it:

    f'[t] = (f[t] + f[t + m/2]) / 2 + beta_k (f[t] - f[t + m/2]) / (2 x_t),  x_t = s^(2^k) w_m^t.

Each layer of more than :func:`scan_layers_below` evaluations is a dispatch of its own (the
smaller ones and the final polynomial are :mod:`jaxstark.rounds.r4_fri_final`). What tells one
layer from another -- its two transcript labels and ``1 / s^(2^k)`` -- is an argument
(:class:`FriStep`), not part of the program: the program depends only on ``m`` and the hash, so
one executable serves the layer of that size of every table, height and proof.

Keeps: the layer's leaves and tree (openings) and the folded values (the next layer).
"""

from __future__ import annotations

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, UInt8, UInt64

from jaxstark import kernels
from jaxstark.field import goldilocks as gl
from jaxstark.field.val import Val
from jaxstark.merkle import _build
from jaxstark.protocol import fiat_shamir as fs
from jaxstark.protocol.algebra import fold_pair
from jaxstark.transcript import Transcript, encode_label

__all__ = [
    "FriLayer", "FriStep", "fri_layer", "fri_step", "large_layers", "scan_layers_below", "scan_threshold_name",
    "SCAN_LAYERS_BELOW",
    "SCAN_LAYERS_BELOW_JNP",
    "SCAN_LAYERS_BELOW_CPU",
]  # fmt: skip

# FRI layers of at most this many evaluations share one scanned step. A layer of its own is one
# more program (5-7 s of compile on an H100/H200 whatever its size: its tree kernels; 0.5-1 s of
# serial tracing) and one more dispatch; a scanned one runs over the first scanned layer's size.
# On a GPU the Merkle kernels skip the padding (r4_fri_final), so a scanned layer costs about
# what a layer of its own does: 2^21 rather than 2^16 cut ALU 2^22's plan from 23.6 to 15.9 s
# on an H100 and its rounds from 86.6 to 83.8 ms (RESULTS.md, 2026-12-06). On the CPU the jnp
# tree hashes the padding (2^16 made proofs 2.4x slower), while a layer of its own costs 0.4-0.7
# s of a CPU plan: 2^11 rather than 2^10 cut the plans of Fibonacci 2^10 and 2^14 by that and
# cost 2% of the 2^14 proof (benchmarks/RESULTS.md, 2026-12-03, 2026-12-05). An accelerator whose
# trees are the jnp ones (JAXSTARK_KERNELS=jnp, the kernels' baseline) hashes the padding too and
# keeps the threshold measured before the kernels skipped it.
SCAN_LAYERS_BELOW = 1 << 21  # on an accelerator, the Merkle kernels building the trees
SCAN_LAYERS_BELOW_JNP = 1 << 16  # on an accelerator, the jnp trees (the padding hashed)
SCAN_LAYERS_BELOW_CPU = 1 << 11  # on the CPU


class FriStep(eqx.Module):
    """What a layer's program reads about which layer it is (a leading axis: several layers):
    its root's and its challenge's labels (:func:`~jaxstark.transcript.encode_label` of
    :func:`~jaxstark.protocol.fiat_shamir.fri_labels`) and ``1 / s^(2^k)``."""

    labels: UInt8[Array, "*k 2 23"]
    s_inv: UInt64[Array, "*k"]


class FriLayer(eqx.Module):
    leaves: UInt64[Array, " h 6"]
    nodes: UInt8[Array, " two_h 32"]
    folded: UInt64[Array, " h 3"]


def scan_threshold_name(platform: str) -> str:
    """The name of the module constant that holds the scan threshold on ``platform`` (a
    ``jax.Device.platform``, or a model backend) under the kernel posture
    (:data:`jaxstark.kernels.MODE`): what a benchmark or a test sets."""
    if platform == "cpu":
        return "SCAN_LAYERS_BELOW_CPU"
    return "SCAN_LAYERS_BELOW_JNP" if kernels.MODE == "jnp" else "SCAN_LAYERS_BELOW"


def scan_layers_below(platform: str) -> int:
    """The scan threshold on ``platform``, read when called."""
    return globals()[scan_threshold_name(platform)]


def large_layers(size: int, layers: int, platform: str) -> int:
    """How many of the ``layers`` FRI layers of an LDE of ``size`` evaluations are dispatched one
    by one on ``platform`` (those of more than :func:`scan_layers_below` evaluations); the rest
    are the final round's."""
    below = scan_layers_below(platform)
    return sum(1 for k in range(layers) if size >> k > below)


def fri_step(offset: int, ks) -> FriStep:
    """Layer ``ks``'s :class:`FriStep` (an int), or layers ``ks``' stacked (a sequence), on the host."""
    one = lambda k: (np.stack([encode_label(x) for x in fs.fri_labels(k)]), _s_inv(offset, k))  # noqa: E731
    if isinstance(ks, int):
        labels, s_inv = one(ks)
        return FriStep(labels, np.asarray(s_inv))
    pairs = [one(k) for k in ks]
    return FriStep(np.zeros((0, 2, 23), np.uint8) if not pairs else np.stack([p[0] for p in pairs]),
                   np.array([p[1] for p in pairs], np.uint64))  # fmt: skip


def _w_inv(m: int) -> np.uint64:
    """1 / w_m, the inverse of the size-``m`` root of unity."""
    return np.uint64(pow(gl.root_of_unity(m.bit_length() - 1), gl.P - 2, gl.P))


def _s_inv(offset: int, k: int) -> np.uint64:
    """1 / s^(2^k): the inverse of layer ``k``'s coset offset."""
    return np.uint64(pow(pow(offset, 1 << k, gl.P), gl.P - 2, gl.P))


def _fold(a: Array, b: Array, x_inv: Array, beta: Array) -> Array:
    """:func:`~jaxstark.protocol.algebra.fold_pair` on arrays."""
    return fold_pair(Val(a, True), Val(b, True), Val(x_inv), Val(beta, True)).v


def _x_inv(w_inv, s_inv, h: int) -> Array:
    """``1 / x_t = s^-(2^k) w_m^-t`` for ``t < h`` (``w_inv = 1 / w_m``, ``s_inv = 1 / s^(2^k)``)."""
    return gl._mul(gl._powers(jnp.asarray(w_inv), h), s_inv)


def _commit(tr: Transcript, leaf, labels, hash_name: str, live_shift=None):
    """Commit to a layer's leaves ``leaf`` (rows ``(f[t], f[t + h])``): their tree (its root node
    1, or ``2^live_shift`` where that is given: the real tree is that node's subtree, the only
    part the kernels build), absorb the root, draw ``beta``. Returns the transcript, tree, beta."""
    tree = _build(leaf, hash_name, live_shift)
    root_node = 1 if live_shift is None else jnp.left_shift(np.int32(1), live_shift)
    tr, beta = fs.fri_layer(tr, labels, tree[root_node])
    return tr, tree, beta


@functools.partial(jax.jit, static_argnames=("hash_name", "names"), keep_unused=True)
def fri_layer(
    f: UInt64[Array, " m 3"], tr: Transcript, step: FriStep, *, hash_name: str, names: tuple[str, str] | None = None
) -> tuple[FriLayer, Transcript]:
    """Commit to ``f`` (one layer) and fold it. ``names``: the layer's labels as strings, for an
    annotated transcript (which logs them by name); otherwise ``step.labels`` are used."""
    m = f.shape[0]
    labels = names if names is not None else (step.labels[0], step.labels[1])
    x_inv = _x_inv(_w_inv(m), step.s_inv, m // 2)
    first, second = f[: m // 2], f[m // 2 :]
    leaf = jnp.concatenate([first, second], axis=-1)  # (h, 6)
    tr, tree, beta = _commit(tr, leaf, labels, hash_name)
    return FriLayer(leaf, tree, _fold(first, second, x_inv, beta)), tr
