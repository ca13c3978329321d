"""Little-endian packing between bytes and 32/64-bit words (traceable, batch axes leading)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, UInt8

__all__ = ["bytes_to_words", "words_to_bytes", "zero_past"]


def bytes_to_words(msgs: UInt8[Array, " *batch n"], dtype=jnp.uint32) -> Array:
    """Pack bytes into little-endian words of ``dtype`` (uint32 or uint64), zero-padding the
    last word."""
    k = np.dtype(dtype).itemsize
    pad = (-msgs.shape[-1]) % k
    if pad:
        msgs = jnp.concatenate([msgs, jnp.zeros((*msgs.shape[:-1], pad), jnp.uint8)], axis=-1)
    b = msgs.reshape(*msgs.shape[:-1], -1, k).astype(dtype)
    out = b[..., 0]
    for i in range(1, k):
        out = out | (b[..., i] << np.array(8 * i, dtype))
    return out


def words_to_bytes(words: Array) -> UInt8[Array, " *batch m"]:
    """Inverse of :func:`bytes_to_words` for uint32 or uint64 words."""
    k = words.dtype.itemsize
    parts = [(words >> np.array(8 * i, words.dtype)).astype(jnp.uint8) for i in range(k)]
    return jnp.stack(parts, axis=-1).reshape(*words.shape[:-1], -1)


def zero_past(msgs: UInt8[Array, " *batch n"], lengths) -> UInt8[Array, " *batch n"]:
    """Zero every byte of row ``i`` from ``lengths[i]`` on (messages of different lengths in one
    zero-padded batch); ``lengths=None`` leaves ``msgs`` as it is."""
    if lengths is None:
        return msgs
    keep = jnp.arange(msgs.shape[-1]) < jnp.asarray(lengths)[..., None]
    return jnp.where(keep, msgs, jnp.zeros((), jnp.uint8))
