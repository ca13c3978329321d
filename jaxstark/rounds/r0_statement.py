"""Round 0: the statement into the transcript, and each unit's fork.

Keeps: the transcript only.
"""

from __future__ import annotations

import functools

import jax

from jaxstark.protocol import fiat_shamir as fs
from jaxstark.transcript import Transcript

__all__ = ["initial_transcript", "fork_table"]


@functools.partial(jax.jit, static_argnames=("airs", "config", "log_ns", "chunks", "annotated"), keep_unused=True)
def initial_transcript(publics, *, airs, config, log_ns, chunks=(), annotated: bool = False) -> Transcript:
    """The transcript every proof starts from (:func:`jaxstark.protocol.fiat_shamir.bind_statement`):
    protocol label, config, number of tables, and per table its AIR, trace shape, row chunks
    (``chunks``: per table log2 of its number of row chunks, ``()`` when none is split) and public
    inputs. ``annotated``: the transcript keeps a log of what it absorbs and squeezes."""
    tr = Transcript.new(fs.PROTOCOL, config.hash, annotated)
    return fs.bind_statement(tr, airs, config, log_ns, chunks, publics)


@functools.partial(jax.jit, keep_unused=True)
def fork_table(tr: Transcript, index: jax.Array) -> Transcript:
    """Unit ``index``'s own transcript for rounds 2-5."""
    return fs.fork_table(tr, index)
