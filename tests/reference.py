"""Slow, obviously correct twins in plain Python integers, shared by the tests."""

import pytest

P = 2**64 - 2**32 + 1


def ext_mul(a, b):
    """(a0 + a1 w + a2 w^2)(b0 + b1 w + b2 w^2) with w^3 = 2."""
    a0, a1, a2 = a
    b0, b1, b2 = b
    return (
        (a0 * b0 + 2 * (a1 * b2 + a2 * b1)) % P,
        (a0 * b1 + a1 * b0 + 2 * a2 * b2) % P,
        (a0 * b2 + a1 * b1 + a2 * b0) % P,
    )


def ext_pow(a, e):
    r, base = (1, 0, 0), a
    while e:
        if e & 1:
            r = ext_mul(r, base)
        base = ext_mul(base, base)
        e >>= 1
    return r


def ext_inv(a):
    """a^(p^3 - 2): the multiplicative group of GF(p^3) has order p^3 - 1."""
    return ext_pow(a, P**3 - 2)


# --- hashes and Merkle trees ------------------------------------------------------------------


def row_bytes(row) -> bytes:
    """A row of field elements serialised as jaxstark leaves are: 8 little-endian bytes each."""
    return b"".join(int(v).to_bytes(8, "little") for v in row)


def blake3_bytes(data: bytes, key: bytes | None = None) -> bytes:
    """BLAKE3-256 of ``data``; keyed-hash mode with a 32-byte ``key``."""
    blake3 = pytest.importorskip("blake3")  # the reference package (installed by the test extra)
    return (blake3.blake3(data) if key is None else blake3.blake3(data, key=key)).digest()


def keccak256_bytes(data: bytes) -> bytes:
    keccak = pytest.importorskip("Crypto.Hash.keccak")  # pycryptodome
    return keccak.new(digest_bits=256, data=data).digest()


NODE_LABEL = b"jaxstark merkle node"  # BLAKE3 nodes are keyed with blake3(NODE_LABEL)


def blake3_node(left: bytes, right: bytes) -> bytes:
    """A BLAKE3 Merkle node: the keyed hash of ``left || right`` under ``blake3(NODE_LABEL)``."""
    return blake3_bytes(left + right, key=blake3_bytes(NODE_LABEL))


def keccak256_node(left: bytes, right: bytes) -> bytes:
    """A Keccak-256 Merkle node: the hash of the 65 bytes ``left || right || 0x01``."""
    return keccak256_bytes(left + right + b"\x01")


def _poseidon2_permute(state):
    from tests.poseidon2_reference import permute

    return permute(list(state))


def _elements(data: bytes):
    return [int.from_bytes(data[i : i + 8], "little") for i in range(0, len(data), 8)]


def poseidon2_sponge(elems, kind: int) -> bytes:
    """jaxstark's Poseidon2 sponge (rate 8, capacity 4, state[8] = count, state[9] = kind)."""
    state = [0] * 12
    state[8], state[9] = len(elems), kind
    chunks = [elems[i : i + 8] for i in range(0, len(elems), 8)] or [[]]
    for c in chunks:
        state = _poseidon2_permute(list(c) + [0] * (8 - len(c)) + state[8:])
    return b"".join(v.to_bytes(8, "little") for v in state[:4])


def poseidon2_bytes(data: bytes) -> bytes:
    padded = data + b"\x01"
    padded += b"\x00" * ((-len(padded)) % 7)
    elems = [int.from_bytes(padded[i : i + 7], "little") for i in range(0, len(padded), 7)]
    return poseidon2_sponge(elems, 1)


POSEIDON2_NODE_STATE = {9: 2}  # a node: state[9] = 2 (rows 0, bytes 1), the rest of the capacity 0


def poseidon2_compress(left: bytes, right: bytes) -> bytes:
    """A Poseidon2 Merkle node: ``permute(left || right || (0, 2, 0, 0))[0:4]``, the digest words
    reduced mod p."""
    state = [v % P for v in _elements(left + right)] + [0, 0, 0, 0]
    for i, v in POSEIDON2_NODE_STATE.items():
        state[i] = v
    return b"".join(v.to_bytes(8, "little") for v in _poseidon2_permute(state)[:4])


# name -> (leaf of a row, node of two digests, hash of bytes)
REFERENCE_HASHES = {
    "blake3": (lambda row: blake3_bytes(row_bytes(row)), blake3_node, blake3_bytes),
    "keccak256": (lambda row: keccak256_bytes(row_bytes(row)), keccak256_node, keccak256_bytes),
    "poseidon2": (lambda row: poseidon2_sponge([int(v) for v in row], 0), poseidon2_compress, poseidon2_bytes),
}


def merkle_nodes(rows, hash_name: str) -> list[bytes]:
    """Every node of the tree over ``rows``, in heap order (the level of k nodes at [k, 2k);
    entry 0 unused: 32 zero bytes)."""
    leaf, node, _ = REFERENCE_HASHES[hash_name]
    levels = [[leaf(r) for r in rows]]
    while len(levels[-1]) > 1:
        below = levels[-1]
        levels.append([node(below[i], below[i + 1]) for i in range(0, len(below), 2)])
    return [bytes(32)] + [d for level in levels[::-1] for d in level]


def merkle_root(rows, hash_name: str) -> bytes:
    """Root of the tree over ``rows`` (a list of lists of ints), built the textbook way."""
    leaf, node, _ = REFERENCE_HASHES[hash_name]
    level = [leaf(r) for r in rows]
    while len(level) > 1:
        level = [node(level[i], level[i + 1]) for i in range(0, len(level), 2)]
    return level[0]
