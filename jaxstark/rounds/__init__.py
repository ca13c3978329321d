"""Proving rounds, one module per round (numbering as in DESIGN.md): trace commit,
composition, out-of-domain evaluation, DEEP + FRI, queries. Each round is a jitted pure function
from PyTree to PyTree so the memory planner can lower it on abstract shapes.

No round exists yet; the field, NTT and LDE they build on live in :mod:`jaxstark.field`,
:mod:`jaxstark.ntt` and :mod:`jaxstark.lde`.
"""
