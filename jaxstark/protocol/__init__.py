"""What prover and verifier must agree on, each thing once.

* :mod:`~jaxstark.protocol.fiat_shamir` -- the statement binding and the Fiat-Shamir schedule:
  every label and the order of absorbs and challenges, as functions of a transcript (the JAX one
  in the rounds, the host one in the verifier);
* :mod:`~jaxstark.protocol.algebra` -- the constraint combination, the DEEP composition, the FRI
  fold and the points they run at, written with operators for arrays and host values alike;
* :mod:`~jaxstark.protocol.layout` -- the proof's layout: constraint, DEEP-term and FRI-layer
  counts and the shape of every field for an AIR, config and height;
* :mod:`~jaxstark.protocol.statement` -- public inputs as field elements, the buses' balance.

Layering (tested from the import graph, ``tests/test_layers.py``): the protocol imports only the
primitives (field, hashes, transcript, AIR, LogUp, config); the rounds and the prover import the
protocol; the verifier imports the protocol and the primitives -- never the prover, the rounds
or the memory planner.
"""

from jaxstark.protocol import algebra, fiat_shamir, layout, statement

__all__ = ["algebra", "fiat_shamir", "layout", "statement"]
