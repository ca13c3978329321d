"""Round 0: the statement into the transcript (on the host), and each unit's fork (on the device).

The statement is known before any round runs -- the protocol label, the config, the AIRs, the
heights, the row chunks and the public inputs -- so its transcript is computed on the host with
:class:`~jaxstark.transcript.HostTranscript` (the verifier's twin: the same bytes) and handed to
the first round as a 32-byte state; no program is compiled for it. The fork is a round: its
input transcript has absorbed the main (and aux) roots, which exist only on the device.

Keeps: the transcript only.
"""

from __future__ import annotations

import functools

import jax
import numpy as np

from jaxstark.protocol import fiat_shamir as fs
from jaxstark.transcript import HostTranscript, Transcript

__all__ = ["initial_transcript", "fork_table"]


def initial_transcript(publics, *, airs, config, log_ns, chunks=(), annotated: bool = False) -> Transcript:
    """The transcript every proof starts from (:func:`jaxstark.protocol.fiat_shamir.bind_statement`):
    protocol label, config, number of tables, and per table its AIR, trace shape, row chunks
    (``chunks``: per table log2 of its number of row chunks, ``()`` when none is split) and public
    inputs (arrays, on the host or a device). Computed on the host; its state is a numpy array,
    which the caller places. ``annotated``: the transcript keeps a log of what it absorbs and
    squeezes."""
    host = [
        np.asarray(p.addressable_data(0) if isinstance(p, jax.Array) and not p.is_fully_addressable else p)
        for p in publics
    ]  # (a shard of a replicated array is a new array object: made only where needed)
    tr = fs.bind_statement(HostTranscript.new(fs.PROTOCOL, config.hash, annotated), airs, config, log_ns, chunks, host)
    return tr.as_transcript()


@functools.partial(jax.jit, keep_unused=True)
def fork_table(tr: Transcript, index: jax.Array) -> Transcript:
    """Unit ``index``'s own transcript for rounds 2-5."""
    return fs.fork_table(tr, index)
