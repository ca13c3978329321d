"""Fiat-Shamir transcript as a pure JAX value.

A :class:`Transcript` is an ``equinox.Module`` whose only array is a 32-byte state; every
operation returns a new transcript (and its outputs), so a transcript passes through ``jit``,
``vmap`` (e.g. over forks) and ``lax`` control flow like any other PyTree. The verifier runs the
same code eagerly on the CPU and obtains identical values.

Construction (a duplex over the hash's 2-to-1 compression ``C``, any of the commitment hashes):

* every operation first absorbs a 32-byte *tag* ``C(state, tag)``; a tag holds the operation
  kind, the caller's label (at most 22 ASCII bytes) and a 64-bit count (number of items, or the
  fork index), so operation sequences are unambiguous and labels separate domains;
* absorbing data then chains ``state = C(state, block)`` over its 32-byte blocks (digests as
  they are; field elements as 8 little-endian bytes each, zero-padded to whole blocks -- the
  count in the tag fixes the length);
* squeezing ``k`` blocks returns ``C(state, ctr_j)`` for ``j < k`` while the state moves on to
  ``C(state, tag)`` -- one batched compression; a counter block carries its own kind byte, the
  label and ``j``, so no output is ever a state and outputs feed back only through later tags;
* ``fork(i)`` gives a child whose state is ``C(state, tag(FORK, i))``: tables and row chunks
  get independent transcripts, and ``i`` may be traced (``vmap`` over forks).

An operation's compressions -- its tag and then its blocks in turn, a squeeze's batch, or a
grinding batch's -- are one launch of :func:`jaxstark.kernels.sponge.chain` in a program lowered
for a CUDA device and a ``lax.scan`` of ``C`` elsewhere (:meth:`Transcript._chain`); the same
values either way.

Sampling without modulo bias worth mentioning:

* base-field challenge: 128 output bits ``hi * 2^64 + lo`` reduced mod p; the distance from
  uniform is below ``p / 2^128 < 2^-64``;
* extension challenge: three independent base challenges;
* query indices in a power-of-two domain ``2^k``: the low ``k`` bits of a 64-bit output word --
  exactly uniform.

A label is a ``str``, or the same label as data (:func:`encode_label`, ``uint8[23]``): a loop
whose steps carry different labels -- FRI's small layers, in one ``lax.scan`` -- passes them
in as an array of encoded labels, and every step absorbs exactly the tags the strings give.

:class:`HostTranscript` is the same construction on the host (numpy and the hashes of
:mod:`jaxstark.hash.host`, no JAX): the verifier replays with it and draws the same challenges,
bit for bit, without compiling anything.

Annotated mode (``annotated=True``) records a log of ``(label, kind, value)`` entries for every
absorb and squeeze; values are arrays and come out of ``jit``/``vmap`` like the state, so prover
and verifier logs can be compared entry by entry.
"""

from __future__ import annotations

import dataclasses
import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jaxtyping import Array, UInt8, UInt32, UInt64

from jaxstark import kernels
from jaxstark.field import goldilocks as gl
from jaxstark.hash.encoding import bytes_to_words, words_to_bytes
from jaxstark.hash.host import get_host_hash
from jaxstark.hash.interface import DIGEST_BYTES, get_hash
from jaxstark.kernels import sponge

__all__ = ["Transcript", "HostTranscript", "LogEntry", "grind_batch", "encode_label"]

MAX_LABEL = 22
_KINDS = {
    "init": 1,
    "digest": 2,
    "base": 3,
    "ext": 4,
    "challenge_base": 5,
    "challenge_ext": 6,
    "queries": 7,
    "fork": 8,
    "counter": 9,
    "pow": 10,
}


class LogEntry(eqx.Module):
    """One annotated transcript operation."""

    label: str = eqx.field(static=True)
    kind: str = eqx.field(static=True)
    value: Array


Label = str | UInt8[Array, " 23"]  # a label, or the same label as data (encode_label)


def encode_label(label: str) -> np.ndarray:
    """``label`` as the 23 bytes its tags carry: its length, then its ASCII bytes zero-padded to
    22. A transcript takes this array wherever it takes the string, with the same result."""
    _check_label(label)
    raw = label.encode("ascii")
    out = np.zeros(1 + MAX_LABEL, np.uint8)
    out[0] = len(raw)
    out[1 : 1 + len(raw)] = np.frombuffer(raw, np.uint8)
    return out


def _tag(kind: str, label: Label, count) -> Array:
    """The 32-byte tag: kind, label length, label (zero-padded to 22 bytes), count (8 bytes LE)."""
    encoded = encode_label(label) if isinstance(label, str) else label
    head = jnp.concatenate([jnp.full((1,), _KINDS[kind], jnp.uint8), jnp.asarray(encoded)])
    count = jnp.asarray(count).astype(jnp.uint64)
    return jnp.concatenate([jnp.broadcast_to(head, (*count.shape, 24)), words_to_bytes(count[..., None])], -1)


def _check_label(label: Label) -> None:
    if isinstance(label, str):
        if not label.isascii() or len(label) > MAX_LABEL:
            raise ValueError(f"transcript labels are ASCII strings of at most {MAX_LABEL} bytes, got {label!r}")
        return
    if getattr(label, "dtype", None) != jnp.uint8 or getattr(label, "shape", None) != (1 + MAX_LABEL,):
        raise ValueError(
            f"transcript labels are ASCII strings of at most {MAX_LABEL} bytes or uint8[{1 + MAX_LABEL}] arrays "
            f"from encode_label, got {label!r}"
        )


def _checked_digests(d):
    """``d`` (a JAX or numpy array) if it is ``uint8[..., 32]`` digests, else ValueError."""
    if d.dtype != np.uint8 or d.ndim < 1 or d.shape[-1] != DIGEST_BYTES:
        raise ValueError(f"absorb_digest: expected uint8[..., 32], got {d.dtype}{tuple(d.shape)}")
    return d


def _checked_elements(x, ext: bool):
    """``x`` if it holds ``uint64`` base elements (extension: a trailing axis of 3), else ValueError."""
    if ext and (x.dtype != np.uint64 or x.ndim < 1 or x.shape[-1] != 3):
        raise ValueError(f"absorb_ext: expected uint64[..., 3], got {x.dtype}{tuple(x.shape)}")
    if not ext and x.dtype != np.uint64:
        raise ValueError(f"absorb_base: expected uint64 field elements, got {x.dtype}")
    return x


def _check_domain(size: int) -> None:
    if size < 1 or size & (size - 1) or size > 1 << 32:
        raise ValueError(f"query_indices: domain size must be a power of two <= 2^32, got {size}")


def _elements_to_blocks(x: Array) -> Array:
    flat = x.reshape(-1)
    if flat.shape[0] == 0:
        return jnp.zeros((0, DIGEST_BYTES), jnp.uint8)
    pad = (-flat.shape[0]) % 4
    if pad:
        flat = jnp.concatenate([flat, jnp.zeros((pad,), jnp.uint64)])
    return words_to_bytes(flat.reshape(-1, 4))


def grind_batch(bits: int, platform: str = "cpu") -> int:
    """Nonces :meth:`Transcript.grind` tries per step on ``platform`` (a ``jax.Device.platform``
    or a model backend): on the CPU ``2^14``, elsewhere ``2^18``, or eight (elsewhere four) times
    the expected number of tries when that is smaller. A step is one iteration of a
    ``while_loop``, which on a GPU costs tens of microseconds whatever its work, so there a batch
    holds about every nonce a search needs (16 bits: one step in 98% of searches, against four
    on average with ``2^14``); the CPU's work grows with the batch."""
    if platform == "cpu":
        return min(1 << 14, 1 << (bits + 3))
    return min(1 << 18, 1 << (bits + 2))


class Transcript(eqx.Module):
    """Fiat-Shamir state; see the module docstring for the construction."""

    hash_name: str = eqx.field(static=True)
    annotated: bool = eqx.field(static=True)
    state: UInt8[Array, " 32"]
    log: tuple[LogEntry, ...] = ()

    @classmethod
    def new(cls, label: str, hash: str = "blake3", annotated: bool = False) -> Transcript:
        """A fresh transcript for the protocol instance named ``label``."""
        _check_label(label)
        h = get_hash(hash)
        t = cls(h.name, annotated, jnp.zeros((DIGEST_BYTES,), jnp.uint8), ())
        return t._absorb_tag("init", label, 0)

    # -- internals ------------------------------------------------------------------------------

    def _compress(self, left: Array, right: Array) -> Array:
        return get_hash(self.hash_name).compress(left, right)

    def _chain(self, state: Array, blocks: Array) -> Array:
        """``state`` (``*batch`` digests) compressed with ``blocks`` (``count, *batch``) in turn:
        one launch on a CUDA device (:func:`jaxstark.kernels.sponge.chain`), else a ``lax.scan``
        of :meth:`_compress` (a single compression without the loop)."""

        def reference(s, b):
            if b.shape[0] == 1:
                return self._compress(s, b[0])
            return lax.scan(lambda s, b: (self._compress(s, b), None), s, b)[0]

        kernel = functools.partial(sponge.chain, hash_name=self.hash_name, interpret=kernels.interpret())
        return kernels.switch(reference, kernel, state, blocks)

    def text_digest(self, text: str) -> Array:
        """The hash of ``text`` (UTF-8), a 32-byte digest to absorb (e.g. a fingerprint)."""
        raw = jnp.asarray(np.frombuffer(text.encode("utf-8"), np.uint8)[None])
        return get_hash(self.hash_name).digest_bytes(raw)[0]

    def _absorb_tag(self, kind: str, label: Label, count) -> Transcript:
        return dataclasses.replace(self, state=self._chain(self.state, _tag(kind, label, count)[None]))

    def _logged(self, label: Label, kind: str, value: Array) -> Transcript:
        if not self.annotated:
            return self
        if not isinstance(label, str):
            raise ValueError("an annotated transcript logs its labels by name: pass them as strings")
        return dataclasses.replace(self, log=(*self.log, LogEntry(label, kind, value)))

    def _absorb_blocks(self, kind: str, label: Label, count: int, blocks: Array, logged: Array) -> Transcript:
        _check_label(label)
        blocks = jnp.concatenate([_tag(kind, label, count)[None], blocks])  # the tag first, then the data
        return dataclasses.replace(self, state=self._chain(self.state, blocks))._logged(label, kind, logged)

    def _squeeze(self, kind: str, label: Label, count: int, n_blocks: int) -> tuple[Transcript, Array]:
        """One batched compression from the current state: of the tag (the next state) and of
        ``n_blocks`` counter blocks carrying the same label (the outputs)."""
        _check_label(label)
        blocks = jnp.concatenate(
            [_tag(kind, label, count)[None], _tag("counter", label, jnp.arange(n_blocks, dtype=jnp.uint64))]
        )
        out = self._chain(jnp.broadcast_to(self.state, (n_blocks + 1, DIGEST_BYTES)), blocks[None])
        return dataclasses.replace(self, state=out[0]), out[1:]

    # -- absorbing ------------------------------------------------------------------------------

    def absorb_digest(self, label: Label, digest: UInt8[Array, " *k 32"]) -> Transcript:
        """Absorb one or more 32-byte digests (e.g. Merkle roots)."""
        d = _checked_digests(jnp.asarray(digest))
        blocks = d.reshape(-1, DIGEST_BYTES)
        return self._absorb_blocks("digest", label, blocks.shape[0], blocks, d)

    def absorb_base(self, label: Label, x: UInt64[Array, " *k"]) -> Transcript:
        """Absorb base-field elements (any shape, flattened in row-major order)."""
        x = _checked_elements(jnp.asarray(x), ext=False)
        return self._absorb_blocks("base", label, x.size, _elements_to_blocks(x), x)

    def absorb_ext(self, label: Label, x: UInt64[Array, " *k 3"]) -> Transcript:
        """Absorb extension elements (trailing axis 3)."""
        x = _checked_elements(jnp.asarray(x), ext=True)
        return self._absorb_blocks("ext", label, x.size // 3, _elements_to_blocks(x), x)

    # -- squeezing ------------------------------------------------------------------------------

    def _challenge(self, kind: str, label: Label, n: int | None, coords: int) -> tuple[Transcript, Array]:
        """``n`` field elements of ``coords`` base coordinates each, 128 output bits per
        coordinate reduced mod p (a scalar element when ``n`` is None)."""
        k = 1 if n is None else int(n)
        t, out = self._squeeze(kind, label, k, -(-coords * k // 2))
        words = bytes_to_words(out, jnp.uint64).reshape(-1, 2)[: coords * k]
        vals = gl._reduce128(words[:, 0], words[:, 1]).reshape((k, coords) if coords > 1 else (k,))
        vals = vals[0] if n is None else vals
        return t._logged(label, kind, vals), vals

    def challenge_base(self, label: Label, n: int | None = None) -> tuple[Transcript, UInt64[Array, " *n"]]:
        """``n`` base-field challenges (a scalar when ``n`` is None)."""
        return self._challenge("challenge_base", label, n, 1)

    def challenge_ext(self, label: Label, n: int | None = None) -> tuple[Transcript, UInt64[Array, " *n 3"]]:
        """``n`` extension-field challenges, shape ``(n, 3)`` (``(3,)`` when ``n`` is None)."""
        return self._challenge("challenge_ext", label, n, 3)

    def query_indices(self, label: str, count: int, domain_size: int) -> tuple[Transcript, UInt32[Array, " count"]]:
        """``count`` uniformly random indices in ``[0, domain_size)``, a power of two <= 2^32."""
        _check_domain(domain_size)
        t, out = self._squeeze("queries", label, count, max(1, -(-count // 4)))
        words = bytes_to_words(out, jnp.uint64).reshape(-1)[:count]
        idx = (words & np.uint64(domain_size - 1)).astype(jnp.uint32)
        return t._logged(label, "queries", idx), idx

    # -- proof of work -------------------------------------------------------------------------

    def pow_word(self, nonce) -> UInt64[Array, " *k"]:
        """The 64-bit word a grinding nonce must make zero in its low bits: the first 8 bytes of
        ``C(state, tag(POW, nonce))``. Vectorised over ``nonce``."""
        nonce = jnp.asarray(nonce).astype(jnp.uint64)
        tags = _tag("pow", "", nonce)
        state = jnp.broadcast_to(self.state, (*nonce.shape, DIGEST_BYTES))
        return bytes_to_words(self._chain(state, tags[None])[..., :8], jnp.uint64)[..., 0]

    def pow_ok(self, nonce, bits: int) -> Array:
        """Whether ``nonce`` satisfies a ``bits``-bit proof of work (vectorised over ``nonce``)."""
        return (self.pow_word(nonce) & np.uint64((1 << bits) - 1)) == np.uint64(0)

    def grind(self, bits: int, batch: int | None = None) -> UInt64[Array, ""]:
        """The smallest nonce whose :meth:`pow_word` has ``bits`` low zero bits, searched
        ``batch`` nonces at a time (default :func:`grind_batch`) inside a ``lax.while_loop``
        (expected ``2^bits`` tries). The nonce does not depend on the batch."""
        if bits == 0:
            return jnp.zeros((), jnp.uint64)
        batch = batch or grind_batch(bits)

        def cond(c):
            return ~c[1]

        def body(c):
            start, _, _ = c
            nonces = start + jnp.arange(batch, dtype=jnp.uint64)
            ok = self.pow_ok(nonces, bits)
            return start + np.uint64(batch), jnp.any(ok), nonces[jnp.argmax(ok)]

        init = (jnp.zeros((), jnp.uint64), jnp.zeros((), bool), jnp.zeros((), jnp.uint64))
        return lax.while_loop(cond, body, init)[2]

    # -- batches ---------------------------------------------------------------------------------

    def absorb_each(self, absorb, xs) -> Transcript:
        """``absorb(tr, x)`` for each ``x`` along the leading axis of the PyTree ``xs``, in order:
        the transcript of a group of row chunks equals that of the chunks one after another (a
        ``lax.scan``; unrolled in annotated mode, whose log grows)."""
        n = jax.tree.leaves(xs)[0].shape[0]
        if self.annotated:
            t = self
            for j in range(n):
                t = absorb(t, jax.tree.map(lambda x, j=j: x[j], xs))
            return t
        return lax.scan(lambda t, x: (absorb(t, x), None), self, xs)[0]

    # -- forking --------------------------------------------------------------------------------

    def fork(self, index) -> Transcript:
        """An independent child transcript for table/chunk ``index`` (an int or a traced
        integer, so forks can be made under ``vmap``). The child starts with an empty log."""
        t = self._absorb_tag("fork", "", index)
        return dataclasses.replace(t, log=())._logged("fork", "fork", jnp.asarray(index).astype(jnp.uint64))


# -- the host twin -----------------------------------------------------------------------------------


def _host_tag(kind: str, label: str, count: int) -> bytes:
    return bytes([_KINDS[kind]]) + encode_label(label).tobytes() + int(count).to_bytes(8, "little")


def _host_blocks(x: np.ndarray) -> list[bytes]:
    """Field elements as 32-byte blocks (8 little-endian bytes each, zero-padded)."""
    flat = np.ascontiguousarray(np.asarray(x, np.uint64).reshape(-1)).astype("<u8").tobytes()
    flat += bytes(-len(flat) % DIGEST_BYTES)
    return [flat[i : i + DIGEST_BYTES] for i in range(0, len(flat), DIGEST_BYTES)]


def _compress1(h, left: bytes, right: bytes) -> bytes:
    return bytes(h.compress(np.frombuffer(left, np.uint8)[None], np.frombuffer(right, np.uint8)[None])[0])


@dataclasses.dataclass(frozen=True)
class HostTranscript:
    """:class:`Transcript` on the host: the same methods (with host values in and out: numpy
    arrays, Python ints), the same bytes. Immutable like its twin: every operation returns a new
    transcript. A fork, an absorb or a squeeze is a handful of host hash calls."""

    hash_name: str
    annotated: bool
    state: bytes
    log: tuple = ()

    @classmethod
    def new(cls, label: str, hash: str = "blake3", annotated: bool = False) -> HostTranscript:
        _check_label(label)
        get_hash(hash)  # the name is checked like the JAX transcript's
        return cls(hash, annotated, bytes(DIGEST_BYTES))._absorb_tag("init", label, 0)

    def _compress_many(self, rights: list[bytes]) -> list[bytes]:
        h = get_host_hash(self.hash_name)
        left = np.frombuffer(self.state * len(rights), np.uint8).reshape(-1, DIGEST_BYTES)
        right = np.frombuffer(b"".join(rights), np.uint8).reshape(-1, DIGEST_BYTES)
        return [bytes(r) for r in h.compress(left, right)]

    def _chain(self, blocks: list[bytes]) -> bytes:
        h, state = get_host_hash(self.hash_name), self.state
        for b in blocks:
            state = _compress1(h, state, b)
        return state

    def _absorb_tag(self, kind: str, label: str, count: int) -> HostTranscript:
        return dataclasses.replace(self, state=self._chain([_host_tag(kind, label, count)]))

    def _logged(self, label: str, kind: str, value) -> HostTranscript:
        if not self.annotated:
            return self
        return dataclasses.replace(self, log=(*self.log, LogEntry(label, kind, np.asarray(value))))

    def _absorb(self, kind: str, label: str, count: int, blocks: list[bytes], logged) -> HostTranscript:
        _check_label(label)
        state = self._chain([_host_tag(kind, label, count), *blocks])
        return dataclasses.replace(self, state=state)._logged(label, kind, logged)

    def _squeeze(self, kind: str, label: str, count: int, n_blocks: int) -> tuple[HostTranscript, bytes]:
        _check_label(label)
        tags = [_host_tag(kind, label, count)] + [_host_tag("counter", label, j) for j in range(n_blocks)]
        out = self._compress_many(tags)
        return dataclasses.replace(self, state=out[0]), b"".join(out[1:])

    def text_digest(self, text: str) -> np.ndarray:
        return np.frombuffer(get_host_hash(self.hash_name).digest_bytes(text.encode("utf-8")), np.uint8)

    def absorb_digest(self, label: str, digest) -> HostTranscript:
        d = _checked_digests(np.asarray(digest))
        raw = np.ascontiguousarray(d).tobytes()
        blocks = [raw[i : i + DIGEST_BYTES] for i in range(0, len(raw), DIGEST_BYTES)]
        return self._absorb("digest", label, len(blocks), blocks, d)

    def absorb_base(self, label: str, x) -> HostTranscript:
        x = _checked_elements(np.asarray(x), ext=False)
        return self._absorb("base", label, x.size, _host_blocks(x), x)

    def absorb_ext(self, label: str, x) -> HostTranscript:
        x = _checked_elements(np.asarray(x), ext=True)
        return self._absorb("ext", label, x.size // 3, _host_blocks(x), x)

    def _challenge(self, kind: str, label: str, n: int | None, coords: int) -> tuple[HostTranscript, np.ndarray]:
        k = 1 if n is None else int(n)
        t, out = self._squeeze(kind, label, k, -(-coords * k // 2))
        words = np.frombuffer(out, "<u8").reshape(-1, 2)[: coords * k].tolist()
        vals = np.array([(hi << 64 | lo) % gl.P for lo, hi in words], np.uint64)
        vals = vals.reshape((k, coords) if coords > 1 else (k,))
        vals = vals[0] if n is None else vals
        return t._logged(label, kind, vals), vals

    def challenge_base(self, label: str, n: int | None = None) -> tuple[HostTranscript, np.ndarray]:
        return self._challenge("challenge_base", label, n, 1)

    def challenge_ext(self, label: str, n: int | None = None) -> tuple[HostTranscript, np.ndarray]:
        return self._challenge("challenge_ext", label, n, 3)

    def query_indices(self, label: str, count: int, domain_size: int) -> tuple[HostTranscript, np.ndarray]:
        _check_domain(domain_size)
        t, out = self._squeeze("queries", label, count, max(1, -(-count // 4)))
        words = np.frombuffer(out, "<u8")[:count]
        idx = (words & np.uint64(domain_size - 1)).astype(np.uint32)
        return t._logged(label, "queries", idx), idx

    def pow_word(self, nonce: int) -> int:
        (out,) = self._compress_many([_host_tag("pow", "", int(nonce))])
        return int.from_bytes(out[:8], "little")

    def pow_ok(self, nonce, bits: int) -> bool:
        return self.pow_word(int(nonce)) & ((1 << bits) - 1) == 0

    def fork(self, index: int) -> HostTranscript:
        t = self._absorb_tag("fork", "", int(index))
        return dataclasses.replace(t, log=())._logged("fork", "fork", np.uint64(index))

    def as_transcript(self) -> Transcript:
        """The same transcript as a :class:`Transcript` (its state and logged values numpy
        arrays), to carry on in JAX."""
        state = np.frombuffer(self.state, np.uint8).copy()
        return Transcript(get_hash(self.hash_name).name, self.annotated, state, tuple(self.log))
