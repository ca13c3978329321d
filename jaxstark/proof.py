"""The proof object and its byte format.

Format, version 1 (all integers little-endian):

    magic   8 bytes  b"JXSTARK\\0"
    version u16      1
    fields, in the order of ``Proof.FIELDS``, each:
        name    u8 length + ASCII name (must equal the expected field name)
        kind    1 byte: 's' string, 'i' u64 integer, 'a' array, 't' tuple of arrays
        's':    u32 length + UTF-8 bytes
        'i':    u64
        'a':    dtype u8 (1 = uint8, 8 = uint64), ndim u8, ndim x u32 dims, raw element bytes
        't':    u32 count, then that many 'a' bodies (without name or kind)
    end     4 bytes  b"END\\0"; nothing may follow

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

__all__ = ["Proof", "MAGIC", "VERSION"]

MAGIC = b"JXSTARK\x00"
END = b"END\x00"
VERSION = 1
_DTYPES = {1: np.uint8, 8: np.uint64}
_CODES = {np.dtype(np.uint8): 1, np.dtype(np.uint64): 8}


class Proof(eqx.Module):
    """A STARK proof for one table. ``size_breakdown()`` reports bytes per part."""

    air_id: str = eqx.field(static=True)
    config_id: str = eqx.field(static=True)
    log_n: int = eqx.field(static=True)
    trace_root: Array
    parts_root: Array
    fri_roots: Array
    trace_z: Array
    trace_zg: Array
    parts_z: Array
    fri_final: Array
    nonce: Array
    trace_rows: Array
    trace_paths: Array
    parts_rows: Array
    parts_paths: Array
    fri_rows: tuple
    fri_paths: tuple

    FIELDS = (
        ("air_id", "s"),
        ("config_id", "s"),
        ("log_n", "i"),
        ("trace_root", "a"),
        ("parts_root", "a"),
        ("fri_roots", "a"),
        ("trace_z", "a"),
        ("trace_zg", "a"),
        ("parts_z", "a"),
        ("fri_final", "a"),
        ("nonce", "a"),
        ("trace_rows", "a"),
        ("trace_paths", "a"),
        ("parts_rows", "a"),
        ("parts_paths", "a"),
        ("fri_rows", "t"),
        ("fri_paths", "t"),
    )

    # -- bytes ----------------------------------------------------------------------------------

    def to_bytes(self) -> bytes:
        out = [MAGIC, struct.pack("<H", VERSION)]
        for name, kind in self.FIELDS:
            value = getattr(self, name)
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
            raise ProofFormatError(f"unsupported proof format version {version} (this build reads {VERSION})")
        values = {}
        for name, kind in cls.FIELDS:
            (n,) = struct.unpack("<B", r.take(1, f"{name} name length"))
            got = r.take(n, f"{name} name")
            if got != name.encode("ascii"):
                raise ProofFormatError(f"expected field {name!r} at byte {r.pos - n}, found {got!r}")
            k = r.take(1, f"{name} kind").decode("latin-1")
            if k != kind:
                raise ProofFormatError(f"field {name!r} has kind {k!r}, expected {kind!r}")
            if kind == "s":
                (ln,) = struct.unpack("<I", r.take(4, f"{name} length"))
                try:
                    values[name] = r.take(ln, name).decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise ProofFormatError(f"field {name!r} is not valid UTF-8") from exc
            elif kind == "i":
                (values[name],) = struct.unpack("<Q", r.take(8, name))
            elif kind == "a":
                values[name] = _read_array(r, name)
            else:
                (count,) = struct.unpack("<I", r.take(4, f"{name} count"))
                if count > 64:
                    raise ProofFormatError(f"field {name!r} claims {count} arrays (at most 64)")
                values[name] = tuple(_read_array(r, f"{name}[{i}]") for i in range(count))
        if r.take(len(END), "end marker") != END:
            raise ProofFormatError("missing end marker")
        if r.pos != len(r.data):
            raise ProofFormatError(f"{len(r.data) - r.pos} unexpected trailing byte(s)")
        if values["log_n"] > 32:
            raise ProofFormatError(f"log_n {values['log_n']} exceeds the field's two-adicity")
        return cls(**values)

    # -- reporting ------------------------------------------------------------------------------

    def size_breakdown(self) -> dict[str, int]:
        """Serialized bytes per part of the proof (array payloads; headers under 'framing')."""
        nb = lambda *xs: sum(int(np.asarray(x).nbytes) for x in xs)  # noqa: E731
        parts = {
            "commitments (roots)": nb(self.trace_root, self.parts_root, self.fri_roots),
            "out-of-domain values": nb(self.trace_z, self.trace_zg, self.parts_z),
            "trace openings (rows)": nb(self.trace_rows),
            "trace paths": nb(self.trace_paths),
            "composition openings (rows)": nb(self.parts_rows),
            "composition paths": nb(self.parts_paths),
            "FRI layer openings (rows)": nb(*self.fri_rows),
            "FRI layer paths": nb(*self.fri_paths),
            "FRI final polynomial": nb(self.fri_final),
            "proof of work nonce": nb(self.nonce),
        }
        parts["framing"] = len(self.to_bytes()) - sum(parts.values())
        return parts


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
