"""Hash functions for commitments and the transcript: BLAKE3 (default), Keccak-256 and
Poseidon2 over Goldilocks, behind one interface (:class:`Hash`, looked up with
:func:`get_hash`)."""

from jaxstark.hash.interface import DIGEST_BYTES, HASHES, Blake3Hash, Hash, Keccak256Hash, Poseidon2Hash, get_hash

__all__ = ["Hash", "Blake3Hash", "Keccak256Hash", "Poseidon2Hash", "HASHES", "get_hash", "DIGEST_BYTES"]
