"""``python -m jaxstark``: the ``jaxstark`` command (:mod:`jaxstark.cli`); with no subcommand,
plan, prove and verify an example (CPU by default)."""

import sys

from jaxstark.cli import main

if __name__ == "__main__":
    sys.exit(main())
