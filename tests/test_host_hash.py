"""The host hashes (numpy and Python, no JAX) against the JAX hashes, byte for byte, and the host
opening check against real Merkle trees."""

import ast
import concurrent.futures
import pathlib
import subprocess
import sys

import jax.numpy as jnp
import numpy as np
import pytest

from jaxstark import merkle
from jaxstark.errors import FieldDtypeError, NonCanonicalError, ShapeError
from jaxstark.hash import host
from jaxstark.hash import poseidon2 as jposeidon2
from jaxstark.hash.interface import HASHES, get_hash

P = 2**64 - 2**32 + 1
NAMES = sorted(HASHES)
ROOT = pathlib.Path(__file__).resolve().parents[1]
RNG = np.random.default_rng(20260)


def field_values(shape, rng) -> np.ndarray:
    """Canonical elements, a few of them 0, 1, p - 1 and 2^32 - 1."""
    v = rng.integers(0, P, shape, dtype=np.uint64)
    flat = v.reshape(-1)
    if flat.size:
        spots = rng.integers(0, flat.size, max(1, flat.size // 8))
        flat[spots] = rng.choice(np.array([0, 1, P - 1, 2**32 - 1], np.uint64), len(spots))
    return v


def test_host_hash_names():
    assert {host.get_host_hash(n).name for n in NAMES} == set(NAMES)
    assert host.get_host_hash("blake3") is host.get_host_hash("blake3")
    with pytest.raises(ValueError, match="blake3.*keccak256.*poseidon2"):
        host.get_host_hash("sha256")


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("width", [0, 1, 6, 8, 9, 17, 62])
def test_hash_rows_matches_jax(name, width):
    """Widths around the sponge's rate (8), BLAKE3's block (8 elements) and Keccak's rate (17)."""
    rows = field_values((12, width), RNG)
    want = np.asarray(get_hash(name).hash_rows(jnp.asarray(rows)))
    h = host.get_host_hash(name)
    got = h.hash_rows(rows)
    assert got.dtype == np.uint8 and got.shape == (12, 32)
    np.testing.assert_array_equal(got, want)
    for part in (slice(0, 1), slice(3, 6), slice(0, host.SMALL_BATCH), slice(0, host.SMALL_BATCH + 1)):
        np.testing.assert_array_equal(h.hash_rows(rows[part]), want[part])
    np.testing.assert_array_equal(h.hash_rows(rows.reshape(3, 4, width)), want.reshape(3, 4, 32))


@pytest.mark.parametrize("name", NAMES)
def test_compress_matches_jax(name):
    left = RNG.integers(0, 256, (12, 32), dtype=np.uint8)
    right = RNG.integers(0, 256, (12, 32), dtype=np.uint8)
    left[0, :8] = 0xFF  # a word >= p (Poseidon2 reads digests mod p)
    right[1, 8:16] = 0xFF
    right[2] = 0
    want = np.asarray(get_hash(name).compress(jnp.asarray(left), jnp.asarray(right)))
    h = host.get_host_hash(name)
    got = h.compress(left, right)
    assert got.dtype == np.uint8 and got.shape == (12, 32)
    np.testing.assert_array_equal(got, want)
    for part in (slice(0, 1), slice(1, 4), slice(0, host.SMALL_BATCH + 1)):
        np.testing.assert_array_equal(h.compress(left[part], right[part]), want[part])
    np.testing.assert_array_equal(h.compress(left.reshape(2, 6, 32), right.reshape(2, 6, 32)), want.reshape(2, 6, 32))
    with pytest.raises(ShapeError):
        h.compress(left, right[:3])
    with pytest.raises(ShapeError):
        h.compress(left[:, :31], right[:, :31])


MESSAGE_LENGTHS = [0, 1, 6, 7, 8, 13, 14, 55, 56, 57, 63, 64, 65, 135, 136, 137, 200, 1024, 1025]


@pytest.mark.parametrize("name", NAMES)
def test_digest_bytes_matches_jax(name):
    """Lengths around the 7-byte Poseidon2 elements and its rate, BLAKE3's block and chunk, Keccak's rate."""
    lengths = np.array(MESSAGE_LENGTHS)
    msgs = RNG.integers(0, 256, (len(lengths), lengths.max()), dtype=np.uint8)
    want = np.asarray(get_hash(name).digest_bytes(jnp.asarray(msgs), jnp.asarray(lengths)))
    h = host.get_host_hash(name)
    for i, n in enumerate(lengths):
        msg = msgs[i, :n].tobytes()
        assert h.digest_bytes(msg) == want[i].tobytes(), n
    assert h.digest_bytes(bytearray(b"abc")) == h.digest_bytes(memoryview(b"abc")) == h.digest_bytes(b"abc")


def test_byte_hashes_match_the_reference_packages():
    blake3 = pytest.importorskip("blake3")
    keccak = pytest.importorskip("Crypto.Hash.keccak")
    key = blake3.blake3(b"jaxstark merkle node").digest()
    assert host.get_host_hash("blake3").node_key == key
    a, b = bytes(range(32)), bytes(range(32, 64))
    two = np.frombuffer(a, np.uint8)[None], np.frombuffer(b, np.uint8)[None]
    assert host.get_host_hash("blake3").compress(*two)[0].tobytes() == blake3.blake3(a + b, key=key).digest()
    want = keccak.new(digest_bits=256, data=a + b + b"\x01").digest()
    assert host.get_host_hash("keccak256").compress(*two)[0].tobytes() == want
    one_shot = host._keccak256()
    for n in (0, 1, 64, 65, 135, 136, 137, 500):
        msg = RNG.integers(0, 256, n, dtype=np.uint8).tobytes()
        assert one_shot(msg) == keccak.new(digest_bits=256, data=msg).digest(), n


def test_permute_known_answer():
    """HorizenLabs' test vector (see :mod:`jaxstark.hash.poseidon2`), alone and inside a batch."""
    state = np.arange(12, dtype=np.uint64)
    for got in (host.permute(state), host.permute(np.tile(state, (40, 1)))[17]):
        assert int(got[0]) == 0x01EAEF96BDF1C0C1 and int(got[1]) == 0x1F0D2CC525B2540C


def test_permute_matches_jax():
    """600 states (the numpy permutation, its products split into single-threaded pieces) and a few
    (the one on Python integers), against the JAX permutation."""
    states = field_values((600, 12), RNG)
    states[0] = 0
    states[1] = P - 1
    want = np.asarray(jposeidon2.permute(jnp.asarray(states)))
    np.testing.assert_array_equal(host.permute(states), want)
    for part in (slice(0, 1), slice(0, host.SMALL_BATCH), slice(0, host.SMALL_BATCH + 1), slice(100, 150)):
        np.testing.assert_array_equal(host.permute(states[part]), want[part])
    np.testing.assert_array_equal(host.permute(states[:24].reshape(2, 3, 4, 12)), want[:24].reshape(2, 3, 4, 12))


def test_permute_in_blocks():
    """More states than one numpy pass takes, against the permutation on Python integers."""
    states = field_values((2 * host.BLOCK + 50, 12), RNG)
    got = host.permute(states)
    for i in [0, host.BLOCK - 1, host.BLOCK, host.BLOCK + 1, 2 * host.BLOCK + 49, *RNG.integers(0, len(states), 20)]:
        assert got[i].tolist() == host._permute_int(states[i].tolist()), i


def test_numpy_permutation_reads_words_mod_p():
    states = field_values((30, 12), RNG)
    want = host.permute(states)
    shifted = states.copy()
    low = shifted < np.uint64(2**32 - 1)  # x + p < 2^64
    shifted[low] += np.uint64(P)
    assert low.any()
    np.testing.assert_array_equal(host._permute_cols(np.ascontiguousarray(shifted.T)).T, want)


def test_permute_checks_its_input():
    with pytest.raises(FieldDtypeError):
        host.permute(np.zeros(12, np.int64))
    with pytest.raises(ShapeError):
        host.permute(np.zeros((3, 11), np.uint64))
    with pytest.raises(NonCanonicalError):
        host.permute(np.full(12, P, np.uint64))


# --- openings ---------------------------------------------------------------------------------

TREE_SHAPES = [(3, 6), (6, 9), (4, 20), (0, 3)]  # (log_n, width)
QUERIES = 6


@pytest.fixture(scope="module", params=NAMES)
def openings(request):
    """Real trees of every shape in TREE_SHAPES (committed with :func:`jaxstark.merkle.commit`) and
    openings of QUERIES rows each, with a repeated index and neighbouring leaves among them."""
    name = request.param
    rng = np.random.default_rng(len(name))
    out = []
    for log_n, width in TREE_SHAPES:
        matrix = field_values((1 << log_n, width), rng)
        tree = merkle.commit(jnp.asarray(matrix), name)
        n = 1 << log_n
        idx = rng.integers(0, n, QUERIES)
        idx[1] = idx[0]  # the same leaf twice
        if n > 1:
            idx[2] = idx[3] ^ 1  # siblings
        op = merkle.open_rows(tree, jnp.asarray(matrix), jnp.asarray(idx))
        rows, paths = np.asarray(op.rows), np.asarray(op.paths)
        np.testing.assert_array_equal(rows, matrix[idx])
        out.append((log_n, np.asarray(tree.root), idx, rows, paths))
    return name, out


def _check(name, trees, bad: dict[int, set[int]]):
    """Every query True except those in ``bad[tree]``."""
    res = host.verify_paths(name, trees)
    assert len(res) == len(trees)
    for t, (r, tree) in enumerate(zip(res, trees, strict=True)):
        assert r.dtype == bool and r.shape == (len(tree[2]),)
        want = np.ones(len(tree[2]), bool)
        want[list(bad.get(t, ()))] = False
        np.testing.assert_array_equal(r, want, err_msg=f"tree {t}")


def _replace(trees, t, **kw):
    log_n, root, idx, rows, paths = trees[t]
    new = dict(log_n=log_n, root=root.copy(), idx=idx.copy(), rows=rows.copy(), paths=paths.copy()) | kw
    return trees[:t] + [(new["log_n"], new["root"], new["idx"], new["rows"], new["paths"])] + trees[t + 1 :]


def test_real_openings_verify(openings):
    name, trees = openings
    _check(name, trees, {})
    for t in range(len(trees)):  # alone, and the deepest tree last instead of first
        _check(name, [trees[t]], {})
    _check(name, trees[::-1], {})
    np.testing.assert_array_equal(host.verify_paths(name, []), [])


def test_agrees_with_the_jax_check(openings):
    name, trees = openings
    log_n, root, idx, rows, paths = trees[1]
    paths = paths.copy()
    paths[4, 2, 5] ^= 1
    want = np.asarray(merkle.verify_paths(name, jnp.asarray(root), log_n, jnp.asarray(idx), rows, jnp.asarray(paths)))
    got = host.verify_paths(name, [(log_n, root, idx, rows, paths)])[0]
    np.testing.assert_array_equal(got, want)
    assert got.sum() == QUERIES - 1


def test_a_flipped_path_byte_fails_exactly_its_query(openings):
    name, trees = openings
    rng = np.random.default_rng(3)
    for t, (log_n, *_rest) in enumerate(trees):
        for j in (1, 3, QUERIES - 1):
            for k in range(log_n):
                paths = trees[t][4].copy()
                paths[j, k, rng.integers(0, 32)] ^= 1 << int(rng.integers(0, 8))
                _check(name, _replace(trees, t, paths=paths), {t: {j}})


def test_a_changed_row_element_fails_exactly_its_query(openings):
    name, trees = openings
    for t, (_, _, _, rows, _) in enumerate(trees):
        for j, c in [(0, 0), (1, rows.shape[1] - 1), (QUERIES - 1, rows.shape[1] // 2)]:
            changed = rows.copy()
            changed[j, c] = (int(changed[j, c]) + 1) % P
            _check(name, _replace(trees, t, rows=changed), {t: {j}})


def test_a_non_canonical_row_element_fails(openings):
    name, trees = openings
    t, j = 0, 2
    rows = trees[t][3].copy()
    rows[j, 0] = np.uint64(P) + (rows[j, 0] if rows[j, 0] < np.uint64(2**32 - 1) else np.uint64(0))
    _check(name, _replace(trees, t, rows=rows), {t: {j}})


def test_a_changed_root_fails_its_tree(openings):
    name, trees = openings
    for t in range(len(trees)):
        root = trees[t][1].copy()
        root[7] ^= 0x10
        _check(name, _replace(trees, t, root=root), {t: set(range(QUERIES))})


def test_a_changed_or_out_of_range_index_fails_exactly_its_query(openings):
    name, trees = openings
    for t, (log_n, _, idx, _, _) in enumerate(trees):
        n = 1 << log_n
        for j in (0, 1, 4):
            for new in {(int(idx[j]) + 1) % n, n, n + int(idx[j]), -1, -n}:
                if new == idx[j]:
                    continue
                changed = idx.copy()
                changed[j] = new
                _check(name, _replace(trees, t, idx=changed), {t: {j}})
        big = np.array(idx, np.uint64)
        big[0] = np.uint64(2**64 - 1)
        _check(name, _replace(trees, t, idx=big), {t: {0}})


def test_a_repeated_query_is_checked_on_its_own(openings):
    """Queries 0 and 1 open the same leaf, 2 and 3 are siblings: tampering with one of them, next to
    its leaf or next to the root (where the two paths share their nodes), fails that one only."""
    name, trees = openings
    t = 1
    log_n = trees[t][0]
    for j, other in [(0, 1), (1, 0), (2, 3), (3, 2)]:
        for k in (0, log_n - 1):
            paths = trees[t][4].copy()
            paths[j, k, 0] ^= 0x80
            res = host.verify_paths(name, _replace(trees, t, paths=paths))[t]
            assert not res[j] and res[other], (j, k)


def test_threads_check_openings_at_once(openings):
    name, trees = openings
    bad = _replace(trees, 1, root=trees[1][1] ^ np.uint8(1))
    want = [host.verify_paths(name, t) for t in (trees, bad)]
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda k: host.verify_paths(name, (trees, bad)[k % 2]), range(16)))
    for k, res in enumerate(got):
        for r, w in zip(res, want[k % 2], strict=True):
            np.testing.assert_array_equal(r, w)


def test_openings_check_their_shapes(openings):
    name, trees = openings
    log_n, root, idx, rows, paths = trees[0]
    bad = [
        (log_n, root, idx, rows, paths[:, :-1]),
        (log_n, root[:31], idx, rows, paths),
        (log_n, root, idx[:-1], rows, paths),
        (log_n, root, idx, rows.astype(np.int64), paths),
        (log_n, root, idx.astype(np.float64), rows, paths),
        (-1, root, idx, rows, paths),
        (log_n, root, idx, rows),
    ]
    for opening in bad:
        with pytest.raises(ShapeError):
            host.verify_paths(name, [trees[1], opening])
    with pytest.raises(ValueError, match="choose one of"):
        host.verify_paths("sha256", trees)


# --- no JAX -----------------------------------------------------------------------------------

BANNED = {"jax", "jaxlib", "equinox", "jaxtyping", "chex"}


def _imports(path: pathlib.Path) -> list[str]:
    """Every module an ``import`` statement in the file names (and, for ``from a import b``, ``a.b``)."""
    names = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path}: relative import"
            names.append(node.module)
            names += [f"{node.module}.{a.name}" for a in node.names]
    return names


def _jaxstark_file(module: str) -> pathlib.Path | None:
    """The source file of a jaxstark module (None for packages, whose ``__init__`` runs on any
    import of the package: ``jaxstark/__init__.py`` itself imports jax, so that is not followed)."""
    f = ROOT.joinpath(*module.split(".")).with_suffix(".py")
    return f if f.is_file() else None


def test_the_host_module_imports_no_jax():
    seen, todo = set(), ["jaxstark.hash.host"]
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        for name in _imports(_jaxstark_file(module)):
            assert name.split(".")[0] not in BANNED, f"{module} imports {name}"
            if name.split(".")[0] == "jaxstark" and _jaxstark_file(name) is not None:
                todo.append(name)
    assert {"jaxstark.hash.host", "jaxstark.errors", "jaxstark.hash.poseidon2_constants"} <= seen


NO_JAX_RUN = """
import importlib.abc, pathlib, sys, types

class NoJax(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("jax", "jaxlib"):
            raise ImportError("no jax here: " + name)

sys.meta_path.insert(0, NoJax())
root = pathlib.Path(sys.argv[1])
for package in ("jaxstark", "jaxstark.hash"):  # the packages without their __init__ (which imports jax)
    m = types.ModuleType(package)
    m.__path__ = [str(root.joinpath(*package.split(".")))]
    sys.modules[package] = m

import numpy as np
from jaxstark.hash import host

for name in ("blake3", "keccak256", "poseidon2"):
    h = host.get_host_hash(name)
    rows = np.arange(60, dtype=np.uint64).reshape(20, 3)
    leaves = h.hash_rows(rows)
    nodes = h.compress(leaves[:10], leaves[10:])
    assert h.digest_bytes(b"abc") == h.digest_bytes(bytearray(b"abc"))
    assert host.verify_paths(name, [(0, leaves[0], np.array([0]), rows[:1], np.zeros((1, 0, 32), np.uint8))])[0].all()
assert host.permute(np.arange(12, dtype=np.uint64))[0] == 0x01EAEF96BDF1C0C1
assert not [m for m in sys.modules if m.split(".")[0] in ("jax", "jaxlib")]
print("ok")
"""


def test_the_host_hashes_run_without_jax():
    """In a fresh interpreter where importing jax fails, with the jaxstark packages' ``__init__``
    files skipped."""
    out = subprocess.run(
        [sys.executable, "-c", NO_JAX_RUN, str(ROOT)], capture_output=True, text=True, timeout=300, cwd=ROOT
    )
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
