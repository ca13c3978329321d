"""Finite fields: Goldilocks (``goldilocks``, alias ``gl``) and its cubic extension
(``extension``, alias ``ext``)."""

from jaxstark.field import extension, goldilocks
from jaxstark.field import extension as ext
from jaxstark.field import goldilocks as gl

__all__ = ["goldilocks", "extension", "gl", "ext"]
