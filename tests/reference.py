"""Slow, obviously correct twins in plain Python integers, shared by the tests."""

P = 2**64 - 2**32 + 1


def ext_mul(a, b):
    """(a0 + a1 w + a2 w^2)(b0 + b1 w + b2 w^2) with w^3 = 2."""
    a0, a1, a2 = a
    b0, b1, b2 = b
    return (
        (a0 * b0 + 2 * (a1 * b2 + a2 * b1)) % P,
        (a0 * b1 + a1 * b0 + 2 * a2 * b2) % P,
        (a0 * b2 + a1 * b1 + a2 * b0) % P,
    )


def ext_pow(a, e):
    r, base = (1, 0, 0), a
    while e:
        if e & 1:
            r = ext_mul(r, base)
        base = ext_mul(base, base)
        e >>= 1
    return r


def ext_inv(a):
    """a^(p^3 - 2): the multiplicative group of GF(p^3) has order p^3 - 1."""
    return ext_pow(a, P**3 - 2)
