"""The proof object and its byte format.

A :class:`Proof` holds the config's fingerprint, per statement table the log2 of its number of
row chunks (0: proven whole; :mod:`jaxstark.chunking`) and one :class:`TableProof` per proven
unit -- every table's chunks in the statement's order (a single-table proof has one).

Format, version 4 (all integers little-endian):

    magic   8 bytes  b"JXSTARK\\0"
    version u16      4
    field   config_id
    chunks  u32 statement table count (1 ... 4096), then one u8 per table: log2 chunks (<= 12)
    tables  u32 count (= the sum of 2^chunks), then for each its fields in the order of
            ``TableProof.FIELDS``
    end     4 bytes  b"END\\0"; nothing may follow

    a field: u8 length + ASCII name (must equal the expected field name), then
        kind    1 byte: 's' string, 'i' u64 integer, 'a' array, 't' tuple of arrays
        's':    u32 length + UTF-8 bytes
        'i':    u64
        'a':    dtype u8 (1 = uint8, 8 = uint64), ndim u8, ndim x u32 dims, raw element bytes
        't':    u32 count, then that many 'a' bodies (without name or kind)

Version 4 changed what the roots and paths commit to, not the layout: Merkle nodes are
domain-separated from leaves (:mod:`jaxstark.hash.interface`). A proof of any other version
(3 included) is refused with a message naming its version.

Parsing is strict: any deviation (wrong magic, version, name, kind, dtype, rank, size, trailing
bytes) raises :class:`~jaxstark.errors.ProofFormatError` saying where. Shapes are checked against
the AIR and config by the verifier, not here.
"""

from __future__ import annotations

import struct

import equinox as eqx
import numpy as np
from jaxtyping import Array

from jaxstark.errors import ProofFormatError

__all__ = ["Proof", "TableProof", "MAGIC", "VERSION", "MAX_TABLES", "MAX_CHUNKS_LOG2"]

MAGIC = b"JXSTARK\x00"
END = b"END\x00"
VERSION = 4
MAX_TABLES = 4096
MAX_CHUNKS_LOG2 = 12  # a table is split into at most 2^12 row chunks
_DTYPES = {1: np.uint8, 8: np.uint64}
_CODES = {np.dtype(np.uint8): 1, np.dtype(np.uint64): 8}


class TableProof(eqx.Module):
    """One table's part of a proof. Tables without interactions have empty aux fields
    (``aux_root`` of shape ``(0, 32)``, ``bus_sums`` ``(0, 3)``, ...)."""

    air_id: str = eqx.field(static=True)
    log_n: int = eqx.field(static=True)
    trace_root: Array
    aux_root: Array
    bus_sums: Array
    parts_root: Array
    fri_roots: Array
    trace_z: Array
    trace_zg: Array
    aux_z: Array
    aux_zg: Array
    parts_z: Array
    fri_final: Array
    nonce: Array
    trace_rows: Array
    trace_paths: Array
    aux_rows: Array
    aux_paths: Array
    parts_rows: Array
    parts_paths: Array
    fri_rows: tuple
    fri_paths: tuple

    FIELDS = (
        ("air_id", "s"),
        ("log_n", "i"),
        ("trace_root", "a"),
        ("aux_root", "a"),
        ("bus_sums", "a"),
        ("parts_root", "a"),
        ("fri_roots", "a"),
        ("trace_z", "a"),
        ("trace_zg", "a"),
        ("aux_z", "a"),
        ("aux_zg", "a"),
        ("parts_z", "a"),
        ("fri_final", "a"),
        ("nonce", "a"),
        ("trace_rows", "a"),
        ("trace_paths", "a"),
        ("aux_rows", "a"),
        ("aux_paths", "a"),
        ("parts_rows", "a"),
        ("parts_paths", "a"),
        ("fri_rows", "t"),
        ("fri_paths", "t"),
    )

    def size_breakdown(self) -> dict[str, int]:
        """Payload bytes per part of this table's proof."""
        nb = lambda *xs: sum(int(np.asarray(x).nbytes) for x in xs)  # noqa: E731
        return {
            "commitments (roots)": nb(self.trace_root, self.aux_root, self.parts_root, self.fri_roots),
            "bus contributions": nb(self.bus_sums),
            "out-of-domain values": nb(self.trace_z, self.trace_zg, self.aux_z, self.aux_zg, self.parts_z),
            "trace openings (rows)": nb(self.trace_rows, self.aux_rows),
            "trace paths": nb(self.trace_paths, self.aux_paths),
            "composition openings (rows)": nb(self.parts_rows),
            "composition paths": nb(self.parts_paths),
            "FRI layer openings (rows)": nb(*self.fri_rows),
            "FRI layer paths": nb(*self.fri_paths),
            "FRI final polynomial": nb(self.fri_final),
            "proof of work nonce": nb(self.nonce),
        }


class Proof(eqx.Module):
    """A STARK proof of one or more tables. ``size_breakdown()`` reports bytes per part."""

    config_id: str = eqx.field(static=True)
    tables: tuple[TableProof, ...]  # one per unit: every statement table's chunks, in order
    chunks: tuple[int, ...] = eqx.field(static=True, default=())  # per statement table: log2 chunk count

    # -- bytes ----------------------------------------------------------------------------------

    @property
    def layout(self) -> tuple[int, ...]:
        """Per statement table, log2 of its number of chunks (every table whole if unset)."""
        return self.chunks or (0,) * len(self.tables)

    def to_bytes(self) -> bytes:
        out = [MAGIC, struct.pack("<H", VERSION)]
        _write_field(out, "config_id", "s", self.config_id)
        out.append(struct.pack("<I", len(self.layout)))
        out.append(bytes(self.layout))
        out.append(struct.pack("<I", len(self.tables)))
        for table in self.tables:
            for name, kind in TableProof.FIELDS:
                _write_field(out, name, kind, getattr(table, name))
        out.append(END)
        return b"".join(out)

    @classmethod
    def from_bytes(cls, data: bytes) -> Proof:
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise ProofFormatError(f"proof bytes must be bytes, got {type(data).__name__}")
        r = _Reader(bytes(data))
        if r.take(len(MAGIC), "magic") != MAGIC:
            raise ProofFormatError("not a jaxstark proof (bad magic bytes)")
        (version,) = struct.unpack("<H", r.take(2, "version"))
        if version != VERSION:
            raise ProofFormatError(
                f"proof format version {version} is not supported: this build reads version {VERSION} "
                "(Merkle nodes are domain-separated from leaves since version 4)"
            )
        config_id = _read_field(r, "config_id", "s")
        (statement,) = struct.unpack("<I", r.take(4, "statement table count"))
        if not 1 <= statement <= MAX_TABLES:
            raise ProofFormatError(f"the proof claims {statement} statement tables (1 ... {MAX_TABLES} allowed)")
        chunks = tuple(r.take(statement, "chunk counts"))
        if any(k > MAX_CHUNKS_LOG2 for k in chunks):
            raise ProofFormatError(
                f"the proof claims 2^{max(chunks)} chunks of one table (at most 2^{MAX_CHUNKS_LOG2})"
            )
        (count,) = struct.unpack("<I", r.take(4, "table count"))
        if not 1 <= count <= MAX_TABLES:
            raise ProofFormatError(f"the proof claims {count} tables (1 ... {MAX_TABLES} allowed)")
        if count != sum(1 << k for k in chunks):
            raise ProofFormatError(f"the proof has {count} table proofs; its chunk counts {list(chunks)} need "
                                   f"{sum(1 << k for k in chunks)}")  # fmt: skip
        tables = []
        for t in range(count):
            values = {name: _read_field(r, name, kind, f"table {t} ") for name, kind in TableProof.FIELDS}
            if values["log_n"] > 32:
                raise ProofFormatError(f"table {t}: log_n {values['log_n']} exceeds the field's two-adicity")
            tables.append(TableProof(**values))
        if r.take(len(END), "end marker") != END:
            raise ProofFormatError("missing end marker")
        if r.pos != len(r.data):
            raise ProofFormatError(f"{len(r.data) - r.pos} unexpected trailing byte(s)")
        return cls(config_id, tuple(tables), chunks)

    # -- reporting ------------------------------------------------------------------------------

    def size_breakdown(self) -> dict[str, int]:
        """Serialized bytes per part of the proof, summed over tables (array payloads; names,
        headers and identifiers under 'framing')."""
        parts: dict[str, int] = {}
        for table in self.tables:
            for key, value in table.size_breakdown().items():
                parts[key] = parts.get(key, 0) + value
        parts["framing"] = len(self.to_bytes()) - sum(parts.values())
        return parts


def _write_field(out: list, name: str, kind: str, value) -> None:
    raw = name.encode("ascii")
    out += [struct.pack("<B", len(raw)), raw, kind.encode("ascii")]
    if kind == "s":
        data = value.encode("utf-8")
        out += [struct.pack("<I", len(data)), data]
    elif kind == "i":
        out.append(struct.pack("<Q", value))
    elif kind == "a":
        out.append(_array_bytes(value))
    else:
        out.append(struct.pack("<I", len(value)))
        out += [_array_bytes(v) for v in value]


def _read_field(r: _Reader, name: str, kind: str, where: str = ""):
    (n,) = struct.unpack("<B", r.take(1, f"{where}{name} name length"))
    got = r.take(n, f"{where}{name} name")
    if got != name.encode("ascii"):
        raise ProofFormatError(f"expected {where}field {name!r} at byte {r.pos - n}, found {got!r}")
    k = r.take(1, f"{where}{name} kind").decode("latin-1")
    if k != kind:
        raise ProofFormatError(f"{where}field {name!r} has kind {k!r}, expected {kind!r}")
    if kind == "s":
        (ln,) = struct.unpack("<I", r.take(4, f"{where}{name} length"))
        try:
            return r.take(ln, name).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ProofFormatError(f"{where}field {name!r} is not valid UTF-8") from exc
    if kind == "i":
        return struct.unpack("<Q", r.take(8, f"{where}{name}"))[0]
    if kind == "a":
        return _read_array(r, f"{where}{name}")
    (count,) = struct.unpack("<I", r.take(4, f"{where}{name} count"))
    if count > 64:
        raise ProofFormatError(f"{where}field {name!r} claims {count} arrays (at most 64)")
    return tuple(_read_array(r, f"{where}{name}[{i}]") for i in range(count))


def _array_bytes(a) -> bytes:
    a = np.asarray(a)  # (np.ascontiguousarray would turn a 0-d array into 1-d)
    code = _CODES.get(a.dtype)
    if code is None:
        raise TypeError(f"cannot serialise dtype {a.dtype}")
    head = struct.pack("<BB", code, a.ndim) + b"".join(struct.pack("<I", d) for d in a.shape)
    return head + a.astype(a.dtype.newbyteorder("<"), copy=False).tobytes(order="C")


class _Reader:
    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def take(self, n: int, what: str) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise ProofFormatError(f"proof truncated while reading {what} (at byte {self.pos} of {len(self.data)})")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out


def _read_array(r: _Reader, what: str) -> np.ndarray:
    code, ndim = struct.unpack("<BB", r.take(2, f"{what} header"))
    if code not in _DTYPES:
        raise ProofFormatError(f"{what}: unknown dtype code {code}")
    if ndim > 4:
        raise ProofFormatError(f"{what}: rank {ndim} is not allowed (at most 4)")
    dims = struct.unpack(f"<{ndim}I", r.take(4 * ndim, f"{what} shape"))
    dtype = np.dtype(_DTYPES[code]).newbyteorder("<")
    count = int(np.prod(dims, dtype=object)) if dims else 1
    raw = r.take(count * dtype.itemsize, f"{what} data")
    return np.frombuffer(raw, dtype=dtype).astype(_DTYPES[code]).reshape(dims)
