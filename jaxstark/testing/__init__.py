"""Support for testing code that uses jaxstark: :mod:`.faults` (fault injection at every device
stage of the prover)."""
