"""Host twins of the commitment hashes: numpy and plain Python, no JAX, nothing compiled.

Each :class:`HostHash` gives the same bytes as the hash of the same name in
:mod:`jaxstark.hash.interface` (``hash_rows``, ``compress``, ``digest_bytes``), so a verifier can
check openings and replay the transcript on the CPU in milliseconds:

* BLAKE3 (the ``blake3`` package): a leaf is the plain hash of the row's ``8 * width``
  little-endian bytes, a node the keyed hash of ``left || right`` under
  ``NODE_KEY = blake3(b"jaxstark merkle node")``;
* Keccak-256 (pycryptodome, through its one-shot entry point when it has one): a leaf is the hash
  of the row's bytes, a node the hash of the 65 bytes ``left || right || 0x01``;
* Poseidon2 over Goldilocks: the sponge (rate 8, capacity 4, ``state[8]`` = element count,
  ``state[9]`` = 1 for byte messages) and the node ``permute(left || right || (0, 2, 0, 0))[0:4]``,
  with :func:`permute` in numpy for batches and on Python integers for a few states.

:func:`verify_paths` checks the openings of several trees at once. For Poseidon2 every tree's
queries at one step share one permutation call; trees are lined up so that they all finish at
the last step (a tree of depth ``d`` whose rows take ``c`` absorptions starts ``c + d`` steps
before the end), so the number of permutation calls is the longest tree's ``c + d``. Each tree's
queries go in index order, and neighbours with the same permutation input (two queries under one
node near the root, or one leaf opened twice) share one permutation; for BLAKE3 and Keccak a query
whose path joins its predecessor's, with the same node and the same siblings from there on, takes
its predecessor's result.

Poseidon2 in numpy: states are ``(12, N)`` arrays, one row per state word, at most :data:`BLOCK`
columns per pass. In the full rounds a word is any ``uint64`` congruent to its value mod p (made
canonical at the end): a product comes from 32-bit limbs and is folded with ``2^64 = 2^32 - 1``
and ``2^96 = -1 (mod p)``; the external layer runs on the 32-bit halves of the words, whose small
integer combinations cannot overflow, and is folded once. The 22 partial rounds are linear apart
from their 22 S-boxes, so every S-box input and the state after them are fixed linear maps of the
state before them and of the earlier S-box outputs. There a value is four ``float64`` limbs
(``z0 + z1 2^16 + z2 2^32 + z3 2^48`` mod p, exact integers of either sign): the linear maps and
the S-box products are matrix products, carries keep the limbs near 16 bits, and every partial sum
is an integer below 2^53, so exact. A pass allocates no large arrays: its buffers (about 5 MB for
:data:`BLOCK` columns) stay with the thread.
"""

from __future__ import annotations

import functools
import math
import threading
from collections.abc import Callable, Sequence

import numpy as np

from jaxstark.errors import FieldDtypeError, NonCanonicalError, ShapeError
from jaxstark.hash import poseidon2_constants as _c

__all__ = ["HostHash", "Blake3HostHash", "Keccak256HostHash", "Poseidon2HostHash", "get_host_hash", "permute"]
__all__ += ["verify_paths", "DIGEST_BYTES", "NODE_LABEL"]

DIGEST_BYTES = 32
NODE_LABEL = b"jaxstark merkle node"  # BLAKE3 nodes are keyed with blake3(NODE_LABEL)
KECCAK_NODE_TAG = b"\x01"
POSEIDON2_NODE_KIND = 2

P = (1 << 64) - (1 << 32) + 1
WIDTH = _c.WIDTH
RATE = 8

Opening = tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


class HostHash:
    """A 32-byte hash on the host: the twin of :class:`jaxstark.hash.interface.Hash` of the same name."""

    name: str

    def hash_rows(self, rows: np.ndarray) -> np.ndarray:
        """Leaf digests ``uint8[..., 32]`` of rows ``uint64[..., width]`` of canonical field elements."""
        rows = _rows_array(rows)
        flat = rows.reshape(int(np.prod(rows.shape[:-1])), rows.shape[-1])
        return self._hash_rows(flat).reshape(*rows.shape[:-1], DIGEST_BYTES)

    def compress(self, left: np.ndarray, right: np.ndarray) -> np.ndarray:
        """Node digests ``uint8[..., 32]`` of two digest arrays ``uint8[..., 32]`` of one shape."""
        left, right = _digest_array(left, "left"), _digest_array(right, "right")
        if left.shape != right.shape:
            raise ShapeError(f"compress: left {left.shape} and right {right.shape} differ")
        flat = self._compress(left.reshape(-1, DIGEST_BYTES), right.reshape(-1, DIGEST_BYTES))
        return flat.reshape(left.shape)

    def digest_bytes(self, msg: bytes) -> bytes:
        """The 32-byte digest of one byte message."""
        return self._digest_bytes(bytes(msg))

    def _hash_rows(self, rows: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _compress(self, left: np.ndarray, right: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _digest_bytes(self, msg: bytes) -> bytes:
        raise NotImplementedError

    def _verify(self, trees: list[Opening]) -> list[np.ndarray]:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<host hash {self.name}>"


def _rows_array(rows) -> np.ndarray:
    rows = np.asarray(rows)
    if rows.dtype != np.uint64:
        raise FieldDtypeError(f"hash_rows: rows must be uint64, got {rows.dtype}")
    if rows.ndim < 1:
        raise ShapeError("hash_rows: rows need a trailing width axis")
    return rows


def _digest_array(d, what: str) -> np.ndarray:
    d = np.asarray(d)
    if d.dtype != np.uint8 or d.ndim < 1 or d.shape[-1] != DIGEST_BYTES:
        raise ShapeError(f"compress: {what} must be uint8[..., {DIGEST_BYTES}], got {d.dtype}{tuple(d.shape)}")
    return d


def _row_messages(rows: np.ndarray) -> tuple[bytes, int]:
    """The rows' serialisation (8 little-endian bytes per element) as one buffer, and one row's length."""
    return np.ascontiguousarray(rows, dtype="<u8").tobytes(), 8 * rows.shape[-1]


def _digests(out: list[bytes]) -> np.ndarray:
    return np.frombuffer(b"".join(out), np.uint8).reshape(len(out), DIGEST_BYTES).copy()


class _ByteHash(HostHash):
    """A hash of bytes: ``_leaf`` on a row's bytes, ``_node`` on ``left || right``; openings are
    climbed one query at a time on ``bytes``."""

    _leaf: Callable[[bytes], bytes]
    _node: Callable[[bytes], bytes]

    def _hash_rows(self, rows):
        buf, m = _row_messages(rows)
        leaf = self._leaf
        return _digests([leaf(buf[i : i + m]) for i in range(0, len(buf), m)] if m else [leaf(b"")] * len(rows))

    def _compress(self, left, right):
        lr = np.concatenate([left, right], axis=1).tobytes()
        node = self._node
        return _digests([node(lr[i : i + 64]) for i in range(0, len(lr), 64)])

    def _digest_bytes(self, msg):
        return self._leaf(msg)

    def _verify(self, trees):
        node_of = self._node
        out = []
        for log_n, root, indices, rows, paths, valid in trees:
            root_b = root.tobytes()
            leaves = self._hash_rows(rows).tobytes()
            flat = paths.tobytes()
            step = log_n * DIGEST_BYTES
            ok = np.zeros(len(indices), bool)
            idx = indices.tolist()
            # in index order a query's path joins its predecessor's at the height where their indices
            # agree; from there on, the same node and the same siblings climb to the same result
            prev_i, prev_nodes, prev_base, prev_ok = -1, [], 0, False
            for j in np.argsort(indices, kind="stable").tolist():
                i, base = idx[j], j * step
                join = (i ^ prev_i).bit_length() if prev_i >= 0 else log_n + 1
                node = leaves[32 * j : 32 * j + 32]
                nodes = [node]
                end = base + step
                bits = i
                for o in range(base, base + min(join, log_n) * DIGEST_BYTES, DIGEST_BYTES):
                    sib = flat[o : o + DIGEST_BYTES]
                    node = node_of(sib + node) if bits & 1 else node_of(node + sib)
                    nodes.append(node)
                    bits >>= 1
                at = base + join * DIGEST_BYTES
                if (
                    join <= log_n
                    and node == prev_nodes[join]
                    and flat[at:end] == flat[prev_base + join * DIGEST_BYTES : prev_base + step]
                ):
                    result = prev_ok
                    nodes += prev_nodes[join + 1 :]
                else:
                    for o in range(at, end, DIGEST_BYTES):
                        sib = flat[o : o + DIGEST_BYTES]
                        node = node_of(sib + node) if bits & 1 else node_of(node + sib)
                        nodes.append(node)
                        bits >>= 1
                    result = node == root_b
                prev_i, prev_nodes, prev_base, prev_ok = i, nodes, base, result
                ok[j] = result and valid[j]
            out.append(ok)
        return out


class Blake3HostHash(_ByteHash):
    """BLAKE3-256; nodes are the keyed hash under ``blake3(NODE_LABEL)``."""

    name = "blake3"

    def __init__(self) -> None:
        import blake3

        b3 = blake3.blake3
        self.node_key = b3(NODE_LABEL).digest()
        keyed = b3(key=self.node_key)  # copied for each node: cheaper than keying a new hasher
        self._leaf = lambda data: b3(data).digest()
        self._node = lambda data: keyed.copy().update(data).digest()


def _keccak256() -> Callable[[bytes], bytes]:
    """Keccak-256 of one message: pycryptodome's one-shot C entry point (capacity 64 bytes, 24
    rounds, padding byte 0x01, one output buffer per thread) where it has one and it agrees with
    the public API on a few messages, else the public ``keccak.new``."""
    from Crypto.Hash import keccak

    def public(data: bytes) -> bytes:
        return keccak.new(digest_bits=256, data=data).digest()

    local = threading.local()
    try:
        from Crypto.Util import _raw_api

        lib = keccak._raw_keccak_lib
        if _raw_api.backend == "cffi":
            ffi = _raw_api.ffi

            def buffers():
                out = ffi.new("uint8_t[32]")
                return out, ffi.buffer(out)

            def oneshot(data: bytes) -> bytes:
                try:
                    out, view = local.out
                except AttributeError:
                    out, view = local.out = buffers()
                if lib.keccak_oneshot(data, len(data), out, 32, 64, 24, 1):
                    return public(data)
                return view[:]
        else:
            import ctypes

            size, byte = ctypes.c_size_t, ctypes.c_ubyte
            fn = lib.keccak_oneshot

            def oneshot(data: bytes) -> bytes:
                try:
                    out = local.out
                except AttributeError:
                    out = local.out = ctypes.create_string_buffer(32)
                if fn(data, size(len(data)), out, size(32), size(64), byte(24), byte(1)):
                    return public(data)
                return out.raw

        probes = [b"", b"abc", bytes(range(65)), bytes(200)]
        if all(oneshot(m) == public(m) for m in probes):
            return oneshot
    except Exception:  # noqa: BLE001 -- any failure of the private entry point falls back to the public API
        pass
    return public


class Keccak256HostHash(_ByteHash):
    """Keccak-256 with the original padding; nodes hash ``left || right || 0x01``."""

    name = "keccak256"

    def __init__(self) -> None:
        k = _keccak256()
        self._leaf = k
        self._node = lambda data: k(data + KECCAK_NODE_TAG)


# ---------------------------------------------------------------------------------------------
# Poseidon2: the permutation on Python integers (a few states)
# ---------------------------------------------------------------------------------------------

_EXT_RC = tuple(tuple(r) for r in _c.EXTERNAL_ROUND_CONSTANTS)
_INT_RC = tuple(_c.INTERNAL_ROUND_CONSTANTS)
_DIAG = tuple(_c.INTERNAL_DIAG_M_1)
_HALF_F = _c.ROUNDS_F // 2


def _m4_int(a, b, c, d):
    ab, cd = a + b, c + d
    b2cd, d2ab = 2 * b + cd, 2 * d + ab
    r1, r3 = 4 * ab + b2cd, 4 * cd + d2ab
    return d2ab + r1, r1, b2cd + r3, r3


def _external_int(x: list[int]) -> list[int]:
    y = [*_m4_int(*x[0:4]), *_m4_int(*x[4:8]), *_m4_int(*x[8:12])]
    col = [y[i] + y[i + 4] + y[i + 8] for i in range(4)]
    return [(y[i] + col[i & 3]) % P for i in range(WIDTH)]


def _sbox_int(v: int) -> int:
    v2 = v * v % P
    v4 = v2 * v2 % P
    return v4 * v2 % P * v % P


def _permute_int(x: list[int]) -> list[int]:
    """The Poseidon2 permutation of one state of 12 canonical elements."""
    x = _external_int(x)
    for r in range(_HALF_F):
        x = _external_int([_sbox_int((v + c) % P) for v, c in zip(x, _EXT_RC[r], strict=True)])
    for c in _INT_RC:
        x[0] = _sbox_int((x[0] + c) % P)
        s = sum(x)
        x = [(d * v + s) % P for d, v in zip(_DIAG, x, strict=True)]
    for r in range(_HALF_F, _c.ROUNDS_F):
        x = _external_int([_sbox_int((v + c) % P) for v, c in zip(x, _EXT_RC[r], strict=True)])
    return x


# ---------------------------------------------------------------------------------------------
# Poseidon2: the permutation in numpy, over (12, N) columns
# ---------------------------------------------------------------------------------------------

# Constants as 0-d arrays: numpy takes a 0-d array operand faster than a numpy or Python scalar.
_U = np.uint64
_M32 = np.array(0xFFFF_FFFF, np.uint64)
_EPS = np.array(0xFFFF_FFFF, np.uint64)  # 2^64 mod p
_S32 = np.array(32, np.uint64)
_S1 = np.array(1, np.uint64)
_S2 = np.array(2, np.uint64)
_M16 = np.array(0xFFFF, np.uint64)
_I16 = np.array(65536, np.int64)
_I32 = np.array(32, np.int64)
_IM32 = np.array(0xFFFF_FFFF, np.int64)  # also eps
_SH16 = np.array([0, 16, 32, 48], np.uint64)[:, None]

_RC = np.array(_c.EXTERNAL_ROUND_CONSTANTS, np.uint64)
_RC_HALVES = np.stack([_RC & _M32, _RC >> _S32], axis=1)[..., None]  # (rounds, 2, 12, 1)

# A value as four float64 limbs z (..., 4, N) stands for z0 + z1 2^16 + z2 2^32 + z3 2^48 (mod p); the limbs
# are exact integers of either sign. The 16 products of two limb vectors, grouped by weight 2^(16 s) for
# s = 0..6, fold back to four limbs with 2^64 = 2^32 - 1, 2^80 = 2^48 - 2^16 and 2^96 = -1 (mod p).
_FOLD16 = np.zeros((4, 7))
for _s, _t, _sign in [(0, 0, 1), (1, 1, 1), (2, 2, 1), (3, 3, 1), (4, 2, 1), (4, 0, -1), (5, 3, 1), (5, 1, -1)]:
    _FOLD16[_t, _s] += _sign
_FOLD16[0, 6] -= 1  # 2^96 = -1
# A carry: limb t keeps its low 16 bits and passes the rest to limb t + 1; what leaves limb 3 (weight
# 2^64 = 2^32 - 1) goes to limbs 2 and 0. It works on a pair (z / 2^16, floor(z / 2^16)) (..., 8, N):
# the matrix products leading to a carry come out scaled by 2^-16 (exact: a power of two), one floor
# gives the carries, and one product of the pair with _CARRY (or _CARRY_SCALED, for a further carry)
# gives the new limbs.
_KC = np.array([[0, 0, 0, -1], [1, 0, 0, 0], [0, 1, 0, 1], [0, 0, 1, 0]], np.float64)
_CARRY = np.hstack([65536.0 * np.eye(4), _KC - 65536.0 * np.eye(4)])
_CARRY_SCALED = _CARRY / 65536
# the 16 products (row 4 i + j: limb i times limb j) to the four limbs of their sum, scaled by 2^-16
_FOLD_SCALED = np.array([[_FOLD16[t, i + j] for i in range(4) for j in range(4)] for t in range(4)]) / 65536

BLOCK = 1024  # columns per permutation pass: larger batches run in pieces of at most this many
# OpenBLAS runs a matrix product on one thread up to M * N * K = 4 * 65536; a threaded product on a busy
# machine can wait milliseconds for its other threads, so longer products are split by columns.
_BLAS_ONE_THREAD = 1 << 18


def _z_matrix(w: list[list[int]], const: list[int] | None = None) -> np.ndarray:
    """The float64 matrix taking limbs of k words (row ``4 i + j``: limb j of word i; with ``const``, a
    first row of ones before them) to the limbs (row ``4 o + t``) of the m values ``w x (+ const)``
    for the field matrix ``w`` (m x k). Entries are sums of at most two limbs: below 2^17 in magnitude."""
    m, k = len(w), len(w[0])
    limbs = np.array([[[(v >> (16 * j)) & 0xFFFF for j in range(4)] for v in row] for row in w], np.float64)
    out = np.zeros((m, 4, k, 4))
    for i in range(4):  # limb of the matrix entry
        for j in range(4):  # limb of the word
            out[:, :, :, j] += _FOLD16[None, :, i + j, None] * limbs[:, None, :, i]
    out = out.reshape(4 * m, 4 * k)
    if const is None:
        return out
    col = np.array([[(c >> (16 * t)) & 0xFFFF for t in range(4)] for c in const], np.float64).reshape(4 * m, 1)
    return np.concatenate([col, out], axis=1)


@functools.cache
def _partial_maps() -> tuple[list[np.ndarray], np.ndarray]:
    """The partial rounds as linear maps. With v the S-box output of the last full round before them
    (so that ``M_E v`` is the state they start from) and y_r the S-box output of round r, the S-box
    input of round r is ``A[r] v + sum_{j<r} B[r][j] y_j + c_r`` and the state after them
    ``F (v, y_0, ..., y_21)``. Returns the z-matrices of round r's input (on a ones row, v and
    y_0..y_{r-1}; scaled by 2^-16 for the carry that follows) and of the state after the rounds plus
    the next full round's constants (on the ones row, v and all y)."""

    def internal(col):  # M_I = 1 + diag(d): x_i <- d_i x_i + sum(x)
        s = sum(col)
        return [(d * v + s) % P for d, v in zip(_DIAG, col, strict=True)]

    def round_map(col):  # a round on the column, its word 0 replaced (by the S-box output)
        return internal([0, *col[1:]])

    # the state's dependence on v (through the external layer closing the first half), then on y
    cols = [_external_int([int(i == k) for k in range(WIDTH)]) for i in range(WIDTH)]
    first = internal([1] + [0] * (WIDTH - 1))  # M_I e_0: where y_r enters
    rounds = []
    for c in _INT_RC:
        rounds.append(_z_matrix([[col[0] for col in cols]], [c]) / 65536)
        cols = [round_map(col) for col in cols] + [first]
    final = _z_matrix([[col[k] for col in cols] for k in range(WIDTH)], list(_EXT_RC[_HALF_F]))
    return rounds, final


_LOCAL = threading.local()


def _buffer(name: str, shape: tuple[int, ...], dtype) -> np.ndarray:
    """A scratch array of this thread, room for BLOCK columns, kept for later passes: the rounds
    allocate no large arrays, so the memory they touch stays mapped and in cache."""
    cache = _LOCAL.__dict__.setdefault("buffers", {})
    size = math.prod(shape)
    buf = cache.get(name)
    if buf is None or buf.size < size:
        buf = cache[name] = np.empty(max(size, math.prod(shape[:-1]) * BLOCK), dtype)
        _LOCAL.__dict__.setdefault("plans", {}).clear()  # plans hold views of the buffers
    return buf[:size].reshape(shape)


def _products(w: np.ndarray, x: np.ndarray, out: np.ndarray) -> list[tuple]:
    """The arguments of ``np.matmul`` computing ``out = w @ x`` in column pieces small enough for one
    BLAS thread."""
    m, k = w.shape
    step = max(1, _BLAS_ONE_THREAD // (m * k))
    return [(w, x[:, i : i + step], out[:, i : i + step]) for i in range(0, x.shape[-1], step)]


class _Plan:
    """Every array a permutation pass over N columns works on, as views of this thread's buffers,
    made once for each N."""

    def __init__(self, n: int) -> None:
        u64, f64 = np.uint64, np.float64
        pool = _buffer("pool", (8, WIDTH, n), u64)  # eight (12, N) arrays, shared by the S-box and M_E
        self.mask = _buffer("mask", (WIDTH, n), bool)
        self.state = _buffer("state", (WIDTH, n), u64)
        # the S-box: the limbs of x, of the current power, the power, three more
        self.x0, self.x1, self.a0, self.a1, self.p, self.ll, self.hl, self.tmp = pool
        # the external layer: the halves of the words by chunk and position, the combinations, the sums
        h4 = pool[0:2].reshape(2, 3, 4, n)
        self.ea, self.eb, self.ec, self.ed = (h4[:, :, k] for k in range(4))
        self.y = pool[2:4].reshape(2, 3, 4, n)
        self.y0, self.y1, self.y2, self.y3 = (self.y[:, :, k] for k in range(4))
        self.ylo, self.yhi = self.y.reshape(2, WIDTH, n)
        self.ab, self.cd, self.b2cd, self.d2ab = pool[4:6].reshape(4, 2, 3, n)
        self.col = pool[6].reshape(-1)[: 8 * n].reshape(2, 1, 4, n)
        self.top = pool[6]
        # the partial rounds: limbs of (1, v, y_0, ..., y_21), each round's input products and output
        rounds, final = _partial_maps()
        head = 1 + 4 * WIDTH
        self.limbs = _buffer("limbs", (head + 4 * len(rounds), n), f64)
        self.words16 = _buffer("words16", (WIDTH, 4, n), u64)
        self.state_col = self.state[:, None, :]
        self.words16_flat, self.limbs_v = self.words16.reshape(4 * WIDTH, n), self.limbs[1:head]
        self.pair = _buffer("pair", (8, n), f64)
        self.rounds = [
            (_products(w, self.limbs[: head + 4 * r], self.pair[:4]), self.limbs[head + 4 * r : head + 4 * r + 4])
            for r, w in enumerate(rounds)
        ]
        zf = _buffer("final", (4 * WIDTH, n), f64)
        self.final = _products(final, self.limbs, zf)
        self.zf = zf.reshape(WIDTH, 4, n)
        # the S-box on limbs
        xx = _buffer("lane_x", (2, 4, n), f64)
        self.xx, (self.x, self.x2) = xx, xx
        p1, p2, p3, p4 = _buffer("lane_pairs", (4, 2, 8, n), f64)
        self.p1, self.p2, self.p3, self.p4 = p1, p2, p3, p4
        prod = _buffer("lane_products", (2, 16, n), f64)
        self.prod, self.prod0 = prod, prod[0]
        self.prod_4x4, self.prod0_4x4 = prod.reshape(2, 4, 4, n), prod[0].reshape(4, 4, n)
        self.x_col, self.x_row, self.x2_col, self.xx_row = self.x[:, None], self.x[None], self.x2[:, None], xx[:, None]
        self.x3, self.x4 = p3[0, :4], p3[1, :4]
        self.x4_col, self.x3_row = self.x4[:, None], self.x3[None]
        # the limbs after the partial rounds to words
        self.zi = _buffer("z_int", (WIDTH, 4, n), np.int64)
        self.zi0, self.zi1, self.zi2, self.zi3 = (self.zi[:, t] for t in range(4))
        self.t, self.u, self.w, self.g = _buffer("z_words", (4, WIDTH, n), np.int64)
        self.t_u64, self.u_u64, self.g_u64 = self.t.view(u64), self.u.view(u64), self.g.view(u64)
        self.out = _buffer("partial_out", (WIDTH, n), u64)


def _plan(n: int) -> _Plan:
    plans = _LOCAL.__dict__.setdefault("plans", {})
    plan = plans.get(n)
    if plan is None:
        if len(plans) >= 64:
            plans.clear()
        plan = plans[n] = _Plan(n)
    return plan


def _fold(pl: _Plan, lo, hi, a, b) -> None:
    """lo <- a word congruent to ``hi * 2^64 + lo`` (both any uint64), with scratch a, b:
    2^64 = 2^32 - 1 and 2^96 = -1 (mod p)."""
    mask = pl.mask
    np.right_shift(hi, _S32, a)
    np.less(lo, a, mask)
    lo -= a
    np.multiply(mask, _EPS, a)  # a borrow took 2^64 = eps (mod p) too many
    lo -= a
    np.bitwise_and(hi, _M32, b)
    np.left_shift(b, _S32, a)
    a -= b  # (hi & m) * (2^32 - 1)
    lo += a
    np.less(lo, a, mask)
    np.multiply(mask, _EPS, a)  # a carry lost 2^64 = eps
    lo += a


def _mul(pl: _Plan, a0, a1, b0, b1, out) -> None:
    """out <- a word congruent to ``a * b`` from the 32-bit limbs of a and b; a0 and a1 are overwritten."""
    ll, hl, tmp = pl.ll, pl.hl, pl.tmp
    np.multiply(a0, b0, ll)
    np.multiply(a1, b0, hl)
    lh = np.multiply(a0, b1, a0)
    hh = np.multiply(a1, b1, a1)
    np.right_shift(ll, _S32, out)  # the middle 32-bit column: below 3 * 2^32
    np.bitwise_and(lh, _M32, tmp)
    out += tmp
    np.bitwise_and(hl, _M32, tmp)
    out += tmp
    lh >>= _S32
    hh += lh
    hl >>= _S32
    hh += hl
    np.right_shift(out, _S32, lh)
    hh += lh  # the high word
    ll &= _M32
    out <<= _S32
    out |= ll  # the low word
    _fold(pl, out, hh, ll, hl)


def _square(pl: _Plan, a0, a1, lh, hh, out) -> None:
    """out <- a word congruent to ``a^2`` from the 32-bit limbs of a; the products a0 a1 and a1^2 go to
    ``lh`` and ``hh`` (which may be a0 and a1)."""
    ll, tmp = pl.ll, pl.tmp
    np.multiply(a0, a0, ll)
    np.multiply(a0, a1, lh)
    np.multiply(a1, a1, hh)
    np.right_shift(ll, _S32, out)
    np.bitwise_and(lh, _M32, tmp)
    tmp <<= _S1
    out += tmp
    lh >>= _S32
    lh <<= _S1
    hh += lh
    np.right_shift(out, _S32, lh)
    hh += lh
    ll &= _M32
    out <<= _S32
    out |= ll
    _fold(pl, out, hh, ll, tmp)


def _sbox(pl: _Plan, x, out) -> None:
    """out <- x^7 through x^2, x^3, x^6 (out may be x)."""
    x0, x1, a0, a1, p = pl.x0, pl.x1, pl.a0, pl.a1, pl.p
    np.bitwise_and(x, _M32, x0)
    np.right_shift(x, _S32, x1)
    _square(pl, x0, x1, pl.hl, a1, p)
    np.bitwise_and(p, _M32, a0)
    np.right_shift(p, _S32, a1)
    _mul(pl, a0, a1, x0, x1, p)
    np.bitwise_and(p, _M32, a0)
    np.right_shift(p, _S32, a1)
    _square(pl, a0, a1, a0, a1, p)
    np.bitwise_and(p, _M32, a0)
    np.right_shift(p, _S32, a1)
    _mul(pl, a0, a1, x0, x1, out)


def _external(pl: _Plan, x, out, rc_halves=None) -> None:
    """out <- ``M_E x`` (plus round constants given as their 32-bit halves ``(2, 12, 1)``) on (12, N)
    words (out may be x).

    Each half of a word is below 2^32 and every output half a combination with coefficients
    summing to at most 64 (plus a constant half), so below 2^39: no overflow before the fold."""
    a, b, c, d, y = pl.ea, pl.eb, pl.ec, pl.ed, pl.y
    ab, cd, b2cd, d2ab = pl.ab, pl.cd, pl.b2cd, pl.d2ab
    np.bitwise_and(x, _M32, pl.x0)  # the halves, viewed by chunk and position as a, b, c, d
    np.right_shift(x, _S32, pl.x1)
    np.add(a, b, ab)
    np.add(c, d, cd)
    np.left_shift(b, _S1, b2cd)
    b2cd += cd  # 2b + c + d
    np.left_shift(d, _S1, d2ab)
    d2ab += ab  # a + b + 2d
    np.left_shift(cd, _S2, pl.y3)
    pl.y3 += d2ab  # a + b + 4c + 6d
    np.left_shift(ab, _S2, pl.y1)
    pl.y1 += b2cd  # 4a + 6b + c + d
    np.add(d2ab, pl.y1, pl.y0)  # 5a + 7b + c + 3d
    np.add(b2cd, pl.y3, pl.y2)  # a + 3b + 5c + 7d
    np.add.reduce(y, axis=1, keepdims=True, out=pl.col)
    y += pl.col
    lo, hi, top, tmp = pl.ylo, pl.yhi, pl.top, pl.tmp
    if rc_halves is not None:
        lo += rc_halves[0]
        hi += rc_halves[1]
    np.left_shift(hi, _S32, top)
    np.right_shift(hi, _S32, out)
    out *= _EPS  # (hi >> 32) 2^64 = (hi >> 32) eps
    out += lo
    out += top
    np.less(out, top, pl.mask)
    np.multiply(pl.mask, _EPS, tmp)
    out += tmp


def _limb_sbox(pl: _Plan, out) -> None:
    """out <- x^7 of the value z in ``pl.pair = (z / 2^16, _)`` (8, N), |z| below 2^46, as limbs of
    magnitude below 2^21.7.

    A carry takes limbs below B to limbs below 2^16 + B / 2^15, and a product of limbs below A and B
    has limbs below 6 A B. So: two carries take z below 2^17.01; x^2 is below 2^36.7 and one carry
    takes it below 2^21.7; x^3 and x^4 are below 2^46 and two carries take them below 2^17.01; x^7 is
    below 2^36.7 and one carry takes it below 2^21.7. Every limb and partial sum stays an integer
    (or, scaled, an integer times 2^-16) below 2^53: exact."""
    pair, p1, p2, p3, p4 = pl.pair, pl.p1, pl.p2, pl.p3, pl.p4
    np.floor(pair[:4], pair[4:])
    np.matmul(_CARRY_SCALED, pair, p1[0, :4])
    np.floor(p1[0, :4], p1[0, 4:])
    np.matmul(_CARRY, p1[0], pl.x)
    np.multiply(pl.x_col, pl.x_row, pl.prod0_4x4)
    np.matmul(_FOLD_SCALED, pl.prod0, p2[0, :4])
    np.floor(p2[0, :4], p2[0, 4:])
    np.matmul(_CARRY, p2[0], pl.x2)
    np.multiply(pl.x2_col, pl.xx_row, pl.prod_4x4)  # x^3, x^4
    np.matmul(_FOLD_SCALED, pl.prod, p3[:, :4])
    np.floor(p3[:, :4], p3[:, 4:])
    np.matmul(_CARRY_SCALED, p3, p4[:, :4])
    np.floor(p4[:, :4], p4[:, 4:])
    np.matmul(_CARRY, p4, p3[:, :4])
    np.multiply(pl.x4_col, pl.x3_row, pl.prod0_4x4)  # x^7
    np.matmul(_FOLD_SCALED, pl.prod0, p1[1, :4])
    np.floor(p1[1, :4], p1[1, 4:])
    np.matmul(_CARRY, p1[1], out)


def _partial(pl: _Plan) -> np.ndarray:
    """The external layer closing the first half, the 22 partial rounds and the round constants of
    the next full round, from the S-box outputs in ``pl.state``; the words come out in ``pl.out``.

    The limbs of v are below 2^16, those of every S-box output below 2^21.7 and the z-matrix entries
    below 2^17; with at most 1 + 48 + 88 terms each, S-box inputs and the state after the rounds have
    limbs below 2^45.3."""
    pl.limbs[0] = 1.0
    np.right_shift(pl.state_col, _SH16, pl.words16)
    pl.words16 &= _M16
    pl.limbs_v[...] = pl.words16_flat
    for products, y in pl.rounds:
        for args in products:
            np.matmul(*args)
        _limb_sbox(pl, y)
    for args in pl.final:
        np.matmul(*args)
    # the words of z0 + z1 2^16 + z2 2^32 + z3 2^48, |z| below 2^46.9 (every int64 below stays below 2^63)
    t, u, w, g, r = pl.t, pl.u, pl.w, pl.g, pl.out
    np.copyto(pl.zi, pl.zf, casting="unsafe")
    np.multiply(pl.zi1, _I16, t)
    t += pl.zi0
    np.multiply(pl.zi3, _I16, u)
    u += pl.zi2  # value = t + u 2^32
    np.right_shift(t, _I32, w)
    w += u  # value = (t & m) + w 2^32
    np.right_shift(w, _I32, g)
    g *= _IM32
    t &= _IM32
    g += t  # w 2^32 = (w >> 32) 2^64 + (w & m) 2^32 and 2^64 = eps: value = g + (w & m) 2^32
    h = np.right_shift(g, _I32, u)
    w &= _IM32
    h += w  # value = (g & m) + h 2^32, h >> 32 in {-1, 0, 1}
    np.left_shift(pl.u_u64, _S32, r)
    g &= _IM32
    r |= pl.g_u64
    h >>= _I32
    h *= _IM32
    r += pl.u_u64  # that many 2^64 = eps
    return r


def _permute_cols(x: np.ndarray) -> np.ndarray:
    """The permutation of (12, N) words (any uint64, read mod p); canonical (12, N) out."""
    n = x.shape[-1]
    if n > BLOCK:
        pieces = -(-n // BLOCK)
        step = -(-n // pieces)
        return np.concatenate([_permute_block(x[:, i : i + step]) for i in range(0, n, step)], axis=1)
    return _permute_block(x)


def _permute_block(x: np.ndarray) -> np.ndarray:
    pl = _plan(x.shape[-1])
    s = pl.state
    with np.errstate(over="ignore"):
        _external(pl, x, s, _RC_HALVES[0])
        for r in range(_HALF_F - 1):
            _sbox(pl, s, s)
            _external(pl, s, s, _RC_HALVES[r + 1])
        _sbox(pl, s, s)
        s = _partial(pl)  # from the external layer of the last round on
        for r in range(_HALF_F, _c.ROUNDS_F):
            _sbox(pl, s, s)
            _external(pl, s, s, _RC_HALVES[r + 1] if r + 1 < _c.ROUNDS_F else None)
        return _canon(s)


def _canon(x):
    s = x + _EPS  # x - p mod 2^64, wrapping exactly when x >= p
    return np.where(s < x, s, x)


SMALL_BATCH = 8  # up to this many states, the permutation runs on Python integers


def _permute_any(x: np.ndarray) -> np.ndarray:
    """(12, N) canonical words -> permuted (12, N)."""
    n = x.shape[-1]
    if n <= SMALL_BATCH:
        out = [_permute_int(col) for col in x.T.tolist()]
        return np.array(out, np.uint64).reshape(n, WIDTH).T.copy()
    return _permute_cols(np.ascontiguousarray(x))


def permute(states: np.ndarray) -> np.ndarray:
    """The Poseidon2 permutation (Goldilocks, width 12) of canonical states ``uint64[..., 12]``;
    the same values as :func:`jaxstark.hash.poseidon2.permute`."""
    s = np.asarray(states)
    if s.dtype != np.uint64:
        raise FieldDtypeError(f"permute: states must be uint64, got {s.dtype}")
    if s.ndim == 0 or s.shape[-1] != WIDTH:
        raise ShapeError(f"permute: expected a trailing axis of size {WIDTH}, got shape {tuple(s.shape)}")
    if s.size and int(s.max()) >= P:
        raise NonCanonicalError("permute: states hold values >= p")
    flat = s.reshape(-1, WIDTH)
    return _permute_any(flat.T).T.reshape(s.shape).copy()


def _words(d: np.ndarray) -> np.ndarray:
    """Digests uint8[..., 32] as their four little-endian words, reduced mod p (..., 4)."""
    w = np.ascontiguousarray(d).view("<u8").astype(np.uint64)
    return np.where(w >= _U(P), w - _U(P), w)


def _digest_of_words(w: np.ndarray) -> np.ndarray:
    """Words (N, 4) -> digests uint8[N, 32]."""
    return np.ascontiguousarray(w, dtype="<u8").view(np.uint8).reshape(-1, DIGEST_BYTES).copy()


class Poseidon2HostHash(HostHash):
    """Poseidon2 over Goldilocks: the sponge for rows and byte messages, the permutation for nodes."""

    name = "poseidon2"

    def _sponge_cols(self, elems: np.ndarray, count: int, kind: int) -> np.ndarray:
        """Sponge of ``count`` elements per column of ``elems`` (count, N); returns state[0:4] (4, N)."""
        n = elems.shape[-1]
        state = np.zeros((WIDTH, n), np.uint64)
        state[8], state[9] = count, kind
        for j in range(0, max(count, 1), RATE):
            chunk = elems[j : j + RATE]
            state[: len(chunk)] = chunk
            state[len(chunk) : RATE] = 0
            state = _permute_any(state)
        return state[:4]

    def _hash_rows(self, rows):
        w = self._sponge_cols(np.ascontiguousarray(rows.T), rows.shape[-1], 0)
        return _digest_of_words(w.T)

    def _compress(self, left, right):
        n = left.shape[0]
        state = np.zeros((WIDTH, n), np.uint64)
        state[0:4] = _words(left).T
        state[4:8] = _words(right).T
        state[9] = POSEIDON2_NODE_KIND
        return _digest_of_words(_permute_any(state)[:4].T)

    def _digest_bytes(self, msg):
        padded = msg + b"\x01"
        padded += bytes(-len(padded) % 7)
        elems = [int.from_bytes(padded[i : i + 7], "little") for i in range(0, len(padded), 7)]
        col = np.array(elems, np.uint64)[:, None]
        return _digest_of_words(self._sponge_cols(col, len(elems), 1).T).tobytes()

    def _verify(self, trees):
        """All trees' openings together, one permutation call per step: tree t absorbs its rows'
        chunks and then climbs, ending at the last step. Deepest trees first (the climbing queries
        are a prefix of the columns), each tree's queries in index order, so that neighbours under
        one node have the same permutation input, computed once."""
        if not trees:
            return []
        chunks = [max(1, -(-t[3].shape[1] // RATE)) for t in trees]
        depths = [t[0] for t in trees]
        total = max(c + d for c, d in zip(chunks, depths, strict=True))
        depth_max = max(depths)
        order = sorted(range(len(trees)), key=lambda t: -depths[t])
        sorts = [np.argsort(t[2], kind="stable") for t in trees]
        offsets, q_all = [0] * len(trees), 0
        for t in order:
            offsets[t] = q_all
            q_all += len(sorts[t])
        sib = np.zeros((depth_max, 4, q_all), np.uint64)  # by height below the deepest trees' roots
        right = np.zeros((depth_max, 1, q_all), bool)
        climbing = np.zeros(depth_max, np.int64)  # how many leading columns climb at that height
        roots = np.zeros((4, q_all), np.uint64)
        valid = np.zeros(q_all, bool)
        absorbs: dict[int, list[tuple[int, int]]] = {}
        for t in order:
            log_n, root, indices, _, paths, ok = trees[t]
            cols = slice(offsets[t], offsets[t] + len(indices))
            srt = sorts[t]
            roots[:, cols] = np.frombuffer(root.tobytes(), "<u8")[:, None]
            valid[cols] = ok[srt]
            if log_n:
                k = depth_max - log_n
                sib[k:, :, cols] = _words(paths[srt]).transpose(1, 2, 0)
                right[k:, 0, cols] = ((indices[srt][None, :] >> np.arange(log_n)[:, None]) & 1) == 1
                climbing[k:] = cols.stop
            for j in range(chunks[t]):
                absorbs.setdefault(total - log_n - chunks[t] + j, []).append((t, j))
        nodes = np.zeros((4, q_all), np.uint64)
        capacity = {}
        for step in range(total):
            height = step - (total - depth_max)
            n_c = int(climbing[height]) if height >= 0 else 0
            todo = absorbs.get(step, [])
            widths = [len(sorts[t]) for t, _ in todo]
            state = np.zeros((WIDTH, n_c + sum(widths)), np.uint64)
            if n_c:
                node, s, r = nodes[:, :n_c], sib[height, :, :n_c], right[height, :, :n_c]
                state[0:4, :n_c] = np.where(r, s, node)
                state[4:8, :n_c] = np.where(r, node, s)
                state[9, :n_c] = POSEIDON2_NODE_KIND
            at = n_c
            for (t, j), q in zip(todo, widths, strict=True):
                rows = trees[t][3][sorts[t]]
                part = rows[:, RATE * j : RATE * (j + 1)].T
                state[: len(part), at : at + q] = part
                if j:
                    state[8:, at : at + q] = capacity.pop(t)
                else:
                    state[8, at : at + q] = rows.shape[1]
                at += q
            out = _permute_distinct(state)
            nodes[:, :n_c] = out[:4, :n_c]
            at = n_c
            for (t, j), q in zip(todo, widths, strict=True):
                if j + 1 < chunks[t]:
                    capacity[t] = out[8:, at : at + q]
                else:
                    nodes[:, offsets[t] : offsets[t] + q] = out[:4, at : at + q]
                at += q
        ok_all = np.all(nodes == roots, axis=0) & valid
        results = []
        for t in range(len(trees)):
            res = np.empty(len(sorts[t]), bool)
            res[sorts[t]] = ok_all[offsets[t] : offsets[t] + len(sorts[t])]
            results.append(res)
        return results


def _permute_distinct(state: np.ndarray) -> np.ndarray:
    """The permutation of (12, N) canonical columns, computed once for each run of equal neighbours."""
    n = state.shape[1]
    if n < 2:
        return _permute_any(state) if n else state
    keep = np.ones(n, bool)
    keep[1:] = np.any(state[:, 1:] != state[:, :-1], axis=0)
    if keep.all():
        return _permute_any(state)
    return _permute_any(state[:, keep])[:, np.cumsum(keep) - 1]


_HOST_HASHES: dict[str, type[HostHash]] = {h.name: h for h in (Blake3HostHash, Keccak256HostHash, Poseidon2HostHash)}


@functools.cache
def _instance(name: str) -> HostHash:
    return _HOST_HASHES[name]()


def get_host_hash(name: str) -> HostHash:
    """The host hash called ``name`` (``"blake3"``, ``"keccak256"`` or ``"poseidon2"``)."""
    if not isinstance(name, str) or name not in _HOST_HASHES:
        raise ValueError(f"unknown hash {name!r}; choose one of {sorted(_HOST_HASHES)}")
    return _instance(name)


def _opening(k: int, opening) -> tuple:
    try:
        log_n, root, indices, rows, paths = opening
    except (TypeError, ValueError):
        raise ShapeError(f"verify_paths: opening {k} is not (log_n, root, indices, rows, paths)") from None
    if isinstance(log_n, bool) or not isinstance(log_n, int | np.integer) or not 0 <= int(log_n) <= 62:
        raise ShapeError(f"verify_paths: opening {k} has log_n {log_n!r}")
    log_n = int(log_n)
    root, indices, rows, paths = (np.asarray(a) for a in (root, indices, rows, paths))
    check_opening(log_n, root, indices, rows, paths, f"verify_paths: opening {k}")
    idx = indices.astype(np.int64) if indices.dtype != np.uint64 else indices
    in_range = (idx >= 0) & (idx < (1 << log_n)) if indices.dtype != np.uint64 else idx < np.uint64(1 << log_n)
    canonical = np.all(rows < _U(P), axis=1)
    safe = np.where(in_range, idx, 0).astype(np.int64)
    return log_n, root, safe, rows, paths, in_range & canonical


def check_opening(log_n: int, root, indices, rows, paths, where: str) -> None:
    """Raise ``ShapeError`` unless ``(root, indices, rows, paths)`` (numpy or JAX arrays) are the
    shapes and dtypes of ``q`` openings of a tree of ``2^log_n`` leaves."""
    q = indices.shape[0] if indices.ndim == 1 else -1
    if (
        indices.ndim != 1
        or rows.ndim != 2
        or rows.shape[0] != q
        or tuple(paths.shape) != (q, log_n, DIGEST_BYTES)
        or tuple(root.shape) != (DIGEST_BYTES,)
    ):
        raise ShapeError(
            f"{where} has inconsistent shapes indices {indices.shape}, rows {rows.shape}, paths {paths.shape}, "
            f"root {root.shape} for a tree of 2^{log_n} leaves"
        )
    if rows.dtype != np.uint64 or paths.dtype != np.uint8 or root.dtype != np.uint8:
        raise ShapeError(f"{where} has dtypes rows {rows.dtype}, paths {paths.dtype}, root {root.dtype}")
    if not np.issubdtype(indices.dtype, np.integer):
        raise ShapeError(f"{where} has indices of dtype {indices.dtype}")


def verify_paths(hash_name: str, openings: Sequence[Opening]) -> list[np.ndarray]:
    """For each tree's opening ``(log_n, root, indices, rows, paths)`` -- ``root`` uint8[32], ``indices``
    int[q], ``rows`` uint64[q, w], ``paths`` uint8[q, log_n, 32] -- a bool[q]: whether row j hashed as
    a leaf and climbed with its path (at height k the node is the right child when bit k of the
    index is 1) reaches ``root`` from leaf ``indices[j]`` of a tree of 2^log_n leaves, the check of
    :func:`jaxstark.merkle.verify_paths`. An index outside [0, 2^log_n) or a row holding a
    value >= p gives False; inconsistent shapes raise ``ShapeError``."""
    h = get_host_hash(hash_name)
    trees = [_opening(k, o) for k, o in enumerate(openings)]
    return h._verify(trees)
