"""HostVal (extension scalars as Python ints) against the jnp extension field and the
Python-integer reference, on random values."""

import jax.numpy as jnp
import numpy as np
import pytest

from jaxstark.field import extension as fext
from jaxstark.field.host import HostVal
from tests.reference import P, ext_inv, ext_mul


def test_host_arithmetic_matches_the_array_field_and_the_reference():
    rng = np.random.default_rng(5)
    xs = rng.integers(0, P, size=(200, 3), dtype=np.uint64)
    ys = rng.integers(0, P, size=(200, 3), dtype=np.uint64)
    xs[0], ys[1] = 0, [P - 1, P - 1, P - 1]
    want_mul = np.asarray(fext.mul(jnp.asarray(xs), jnp.asarray(ys))).tolist()
    want_add = np.asarray(fext.add(jnp.asarray(xs), jnp.asarray(ys))).tolist()
    want_sub = np.asarray(fext.sub(jnp.asarray(xs), jnp.asarray(ys))).tolist()
    for x, y, m, a, s in zip(xs.tolist(), ys.tolist(), want_mul, want_add, want_sub, strict=True):
        hx, hy = HostVal(x), HostVal(y)
        assert (hx * hy).c == tuple(m) == ext_mul(x, y)
        assert (hx + hy).c == tuple(a) and (hx - hy).c == tuple(s)
        assert (hx * 7 + 3 - hy).c == (HostVal(x) * HostVal(7) + HostVal(3) - hy).c
        assert (3 - hx).c == (HostVal(3) - hx).c and (-hx + hx).c == (0, 0, 0)
    for x in xs[:20].tolist():
        assert HostVal(x).inv().c == ext_inv(x)
        if any(x):
            assert (HostVal(x) * HostVal(x).inv()).c == (1, 0, 0)
    x = xs[2].tolist()
    assert (HostVal(x) ** 5).c == ext_mul(ext_mul(ext_mul(ext_mul(x, x), x), x), x)
    assert HostVal(0).inv() == 0 and not HostVal(0) and HostVal(5)
    with pytest.raises(ValueError, match="non-negative int"):
        HostVal(2) ** -1


def test_constants_in_constraint_code_stay_constants_and_meet_host_values():
    """Val.const arithmetic folds in Python integers (no numpy overflow, still a constant the
    kernels and the host read back); a constant meets HostVal on either side; a batch does not."""
    import warnings

    from jaxstark.field.val import Val

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's uint64 overflow warnings would be errors
        assert (Val.const(2) * Val.const(3)).constant() == 6
        assert (-Val.const(5)).constant() == P - 5
        assert (Val.const(P - 1) + 1).constant() == 0
        assert (1 - Val.const(5)).constant() == P - 4
        assert (Val.const(3) ** 5).constant() == 243 and (Val.const(7) ** 0).constant() == 1
    x = Val(jnp.asarray(np.array([1, 2], np.uint64)))
    assert x.constant() is None and (x * Val.const(3)).constant() is None
    np.testing.assert_array_equal(np.asarray((x * Val.const(3)).v), [3, 6])
    h = HostVal((4, 5, 6))
    assert (h - Val.const(1)).c == (3, 5, 6) and (Val.const(1) - h).c == (P - 3, P - 5, P - 6)
    assert (Val.const(2) * h).c == (8, 10, 12)
    ext = Val(jnp.asarray(np.array([1, 1, 0], np.uint64)), True)
    assert (h + ext).c == (5, 6, 6)
    with pytest.raises(TypeError, match="only a constant Val"):
        h + x
