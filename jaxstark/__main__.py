"""``python -m jaxstark``: the ``jaxstark`` command (:mod:`jaxstark.cli`); with no subcommand,
plan, prove and verify an example (CPU by default)."""

from jaxstark.cli import run

if __name__ == "__main__":
    run()
