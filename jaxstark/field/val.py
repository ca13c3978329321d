"""Field values in constraint code: :class:`Val`, a base or extension element (or a batch of
them) with ``+ - * **`` and Python ints as operands. The prover fills it with arrays over the
whole low-degree extension; the same constraint code runs on the host with
:class:`~jaxstark.field.host.HostVal`."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxstark.field import extension as fext
from jaxstark.field import goldilocks as gl

__all__ = ["Val"]

P = gl.P


class Val:
    """A field value (or a batch of them) in constraint code: base (``uint64[...]``) or
    extension (``uint64[..., 3]``). Arithmetic with Python ints and mixing base with extension
    work as expected; results are exact field operations."""

    __slots__ = ("v", "is_ext")

    def __init__(self, v, is_ext: bool = False):
        self.v = v
        self.is_ext = is_ext

    @staticmethod
    def const(c: int) -> Val:
        """The base element ``c mod p``: a numpy scalar, so its value stays known while the
        constraint code is traced (:meth:`constant`: the host twin and the kernels read it back);
        arithmetic on two constants is folded in Python integers and stays a constant."""
        return Val(np.uint64(int(c) % P), False)

    def constant(self) -> int | None:
        """The value of a constant (:meth:`const`, or arithmetic on constants only), else ``None``."""
        if not self.is_ext and isinstance(self.v, np.generic | np.ndarray) and np.ndim(self.v) == 0:
            return int(self.v) % P
        return None

    def _other(self, o) -> Val:
        if isinstance(o, Val):
            return o
        if isinstance(o, (int, np.integer)):
            return Val.const(int(o))
        return NotImplemented

    @staticmethod
    def _array(a: Val):
        """The value as an operand of array code: a constant as a JAX array, as every constant
        was before constants kept their values (the same programs, the same products)."""
        return jnp.asarray(a.v) if a.constant() is not None else a.v

    @staticmethod
    def _lift(a: Val) -> jnp.ndarray:
        return a.v if a.is_ext else fext._embed(Val._array(a))

    def _binary(self, o, base_op, ext_op, swap=False, fold=None) -> Val:
        o = self._other(o)
        if o is NotImplemented:
            return NotImplemented
        a, b = (o, self) if swap else (self, o)
        if not a.is_ext and not b.is_ext:
            x, y = a.constant(), b.constant()
            if x is not None and y is not None:  # two constants: one constant
                return Val.const(fold(x, y))
            return Val(base_op(Val._array(a), Val._array(b)), False)
        return Val(ext_op(Val._lift(a), Val._lift(b)), True)

    def __add__(self, o):
        return self._binary(o, gl._add, fext._add, fold=int.__add__)

    def __radd__(self, o):
        return self._binary(o, gl._add, fext._add, swap=True, fold=int.__add__)

    def __sub__(self, o):
        return self._binary(o, gl._sub, fext._sub, fold=int.__sub__)

    def __rsub__(self, o):
        return self._binary(o, gl._sub, fext._sub, swap=True, fold=int.__sub__)

    def __mul__(self, o):
        o2 = self._other(o)
        if o2 is NotImplemented:
            return NotImplemented
        if self.is_ext and not o2.is_ext:
            return Val(fext._mul_base(self.v, Val._array(o2)), True)
        if o2.is_ext and not self.is_ext:
            return Val(fext._mul_base(o2.v, Val._array(self)), True)
        return self._binary(o2, gl._mul, fext._mul, fold=int.__mul__)

    def __rmul__(self, o):
        return self.__mul__(o)

    def __neg__(self):
        return Val.const(0) - self

    def __pow__(self, e: int):
        if not isinstance(e, int) or e < 0:
            raise ValueError(f"Val ** e needs a non-negative int exponent, got {e!r}")
        result, base = None, self
        while e:
            if e & 1:
                result = base if result is None else result * base
            e >>= 1
            if e:
                base = base * base
        return result if result is not None else Val.const(1)

    def __repr__(self) -> str:
        return f"Val({'ext' if self.is_ext else 'base'}, shape={tuple(self.v.shape)})"
