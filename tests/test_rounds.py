"""Each round's outputs, shape by shape (chex), on a small proof run round by round (an ALU
table with interactions, so the aux round runs too)."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxstark as js
from jaxstark.examples import Alu, alu_trace
from jaxstark.protocol import fiat_shamir as fs
from jaxstark.protocol.layout import fri_num_layers
from jaxstark.protocol.statement import public_array
from jaxstark.rounds import r4_fri_layer
from jaxstark.rounds.domain import make_domain
from jaxstark.rounds.r0_statement import fork_table, initial_transcript
from jaxstark.rounds.r1_aux_commit import aux_commit, logup_challenges
from jaxstark.rounds.r1_trace_commit import trace_commit
from jaxstark.rounds.r2_composition import composition
from jaxstark.rounds.r3_ood import OutOfDomain, out_of_domain
from jaxstark.rounds.r4_deep import deep
from jaxstark.rounds.r5_openings import openings
from jaxstark.rounds.r5_queries import queries
from jaxstark.schedule import _fri
from jaxstark.transcript import Transcript


class _Direct:
    """The executor hooks the FRI commit phase uses, calling each round directly."""

    def run(self, table, name, fn, args, static, axes=None, vmap=True):
        return fn(*args, **static)

    def drop(self, tree):
        pass

    def device(self, table):
        return jax.devices("cpu")[0]

    def row_blocks(self, table, name, default):
        return default


def deep_fri(domain, trace_lde, aux_lde, parts_lde, ood, tr, config):
    """DEEP, then the FRI commit phase, as the schedule dispatches them."""
    f, _ = deep(domain, trace_lde, aux_lde, parts_lde, ood, tr)
    chex.assert_shape(f, (domain.size, 3))
    for blocks in (2, domain.size // 4):  # in blocks of rows, as on the CPU: the same values
        np.testing.assert_array_equal(deep(domain, trace_lde, aux_lde, parts_lde, ood, tr, blocks=blocks)[0], f)
    with pytest.raises(ValueError, match="blocks must be an int dividing the"):
        deep(domain, trace_lde, aux_lde, parts_lde, ood, tr, blocks=3)
    return _fri(_Direct(), 0, ((domain, trace_lde, aux_lde, parts_lde, ood, tr), None), config, domain, None, None)


def test_round_outputs_have_the_documented_shapes():
    air, (trace, public) = Alu(bus=True), alu_trace(5)
    cfg = js.StarkConfig(blowup=4, num_queries=9, grinding_bits=3, fri_final_degree=4)
    log_n, c, parts, q = 5, air.width, air.composition_parts, cfg.num_queries
    a = air.num_aux_columns
    assert (a, parts) == (2, 2)  # bus "alu": one column; bus "range": two sends packed in one
    n, size = 1 << log_n, (1 << log_n) * cfg.blowup
    domain = make_domain(log_n, cfg.blowup)
    tr = initial_transcript((public_array(air, public),), airs=(air,), config=cfg, log_ns=(log_n,))
    chex.assert_shape(tr.state, (32,))

    r1, tr = trace_commit(trace, domain, tr, hash_name=cfg.hash)
    chex.assert_shape([r1.lde, r1.coeffs, r1.nodes], [(size, c), (n, c), (2 * size, 32)])
    chex.assert_type([r1.lde, r1.nodes], [jnp.uint64, jnp.uint8])

    tr, challenges = logup_challenges(tr)
    chex.assert_shape(challenges, (2, 3))
    aux, tr = aux_commit(trace, domain, challenges, tr, air=air, hash_name=cfg.hash)
    chex.assert_shape(
        [aux.lde, aux.coeffs, aux.nodes, aux.sums, aux.degenerate],
        [(size, 3 * a), (n, 3 * a), (2 * size, 32), (2, 3), ()],
    )
    tr = fork_table(tr, jnp.uint64(0))

    tr_before_comp = tr
    comp, tr = composition(
        domain, r1.lde, aux.lde, (challenges, aux.sums), public_array(air, public), tr, air=air, hash_name=cfg.hash
    )
    chex.assert_shape(
        [comp.parts_coeffs, comp.parts_lde, comp.nodes, comp.excess],
        [(n, parts, 3), (size, parts, 3), (2 * size, 32), ()],
    )
    assert not bool(comp.excess)
    # the constraints in blocks of LDE rows (the planner's choice when the round binds): the same round
    blocked = composition(
        domain, r1.lde, aux.lde, (challenges, aux.sums), public_array(air, public), tr_before_comp, air=air,
        hash_name=cfg.hash, blocks=4,
    )  # fmt: skip
    chex.assert_trees_all_equal(blocked, (comp, tr))

    tr_before_ood = tr
    ood, tr = out_of_domain(r1.coeffs, aux.coeffs, comp.parts_coeffs, tr, log_n=log_n)
    chex.assert_shape(
        [ood.z, ood.trace_z, ood.trace_zg, ood.parts_z, ood.aux_z, ood.aux_zg],
        [(3,), (c, 3), (c, 3), (parts, 3), (a, 3), (a, 3)],
    )
    # the sums in blocks of coefficients, as on the CPU: the same values and transcript
    again = out_of_domain(r1.coeffs, aux.coeffs, comp.parts_coeffs, tr_before_ood, log_n=log_n, blocks=n // 4)
    chex.assert_trees_all_equal(again, (ood, tr))
    with pytest.raises(ValueError, match="blocks must be an int dividing the 32 coefficients"):
        out_of_domain(r1.coeffs, aux.coeffs, comp.parts_coeffs, tr_before_ood, log_n=log_n, blocks=3)

    fri, tr = deep_fri(domain, r1.lde, aux.lde, comp.parts_lde, ood, tr, cfg)
    layers = fri_num_layers(log_n, cfg.fri_final_degree)
    assert len(fri.leaves) == len(fri.nodes) == layers == 3
    for k in range(layers):
        h = size >> (k + 1)
        chex.assert_shape([fri.leaves[k], fri.nodes[k]], [(h, 6), (2 * h, 32)])
    chex.assert_shape(fri.final, (n >> layers, 3))
    assert not bool(fri.excess)

    qs, tr = queries(tr, grinding_bits=cfg.grinding_bits, num_queries=q, log_size=domain.log_size)
    chex.assert_shape([qs.nonce, qs.indices], [(), (q,)])
    log_l = domain.log_size
    commitments = [
        ((r1.lde,), (r1.nodes,), [c]),
        ((aux.lde,), (aux.nodes,), [3 * a]),
        ((comp.parts_lde,), (comp.nodes,), [3 * parts]),
        (fri.leaves, fri.nodes, [6] * layers),
    ]
    for j, (leaves, nodes, widths) in enumerate(commitments):
        op = openings(leaves, nodes, qs.indices, hash_name=cfg.hash)
        if j in (0, 3):  # a recomputed tree (the trace's; every FRI layer's) comes as its root rows only and
            # is built again: the same rows, paths and roots
            rebuilt = openings(leaves, tuple(t[:2] for t in nodes), qs.indices, hash_name=cfg.hash)
            chex.assert_trees_all_equal(rebuilt, op)
        assert len(op.rows) == len(op.paths) == len(widths)
        chex.assert_shape(op.roots, (len(widths), 32))
        for k, (w, tree) in enumerate(zip(widths, nodes, strict=True)):
            log_m = tree.shape[0].bit_length() - 2
            chex.assert_shape([op.rows[k], op.paths[k]], [(q, w), (q, log_m, 32)])
            assert (np.asarray(op.roots[k]) == np.asarray(tree[1])).all()
    assert [tree.shape[0].bit_length() - 2 for tree in fri.nodes] == [log_l - 1 - k for k in range(layers)]
    with pytest.raises(ValueError, match="a tree of 4 rows for a matrix of"):
        openings((r1.lde,), (r1.nodes[:4],), qs.indices, hash_name=cfg.hash)
    assert int(jnp.max(qs.indices)) < size


@pytest.mark.parametrize("width", [0, 5, 8, 16, 19])
def test_deep_column_dot_block_by_block_matches_integers(width):
    """The DEEP combination's sum over columns, taken a block of columns at a time."""
    from jaxstark.field import goldilocks as gl
    from jaxstark.rounds.r4_deep import _dot_base_ext

    rng = np.random.default_rng(width)
    t = rng.integers(0, gl.P, size=(6, width), dtype=np.uint64)
    g = rng.integers(0, gl.P, size=(width, 3), dtype=np.uint64)
    want = [[sum(int(t[r, i]) * int(g[i, k]) for i in range(width)) % gl.P for k in range(3)] for r in range(6)]
    got = _dot_base_ext(jnp.asarray(t), jnp.asarray(g))
    chex.assert_shape(got, (6, 3))
    assert np.asarray(got).tolist() == want


def test_the_scan_threshold_follows_the_platform_and_who_builds_the_trees(monkeypatch):
    """The CPU's; an accelerator's where the Merkle kernels skip a scanned layer's padding; the
    smaller one where the jnp trees hash it (``JAXSTARK_KERNELS=jnp``)."""
    from jaxstark import kernels

    assert r4_fri_layer.scan_layers_below("cpu") == r4_fri_layer.SCAN_LAYERS_BELOW_CPU
    for mode, name in (
        ("auto", "SCAN_LAYERS_BELOW"),
        ("interpret", "SCAN_LAYERS_BELOW"),
        ("jnp", "SCAN_LAYERS_BELOW_JNP"),
    ):
        monkeypatch.setattr(kernels, "MODE", mode)
        assert r4_fri_layer.scan_threshold_name("gpu") == name
        assert r4_fri_layer.scan_threshold_name("cpu") == "SCAN_LAYERS_BELOW_CPU"
    assert r4_fri_layer.SCAN_LAYERS_BELOW_JNP < r4_fri_layer.SCAN_LAYERS_BELOW
    assert r4_fri_layer.large_layers(1 << 23, 18, "gpu") == 7  # 2^23 .. 2^17 evaluations, the padding hashed


@pytest.mark.parametrize("hash_name", ["blake3"])
def test_scanned_small_fri_layers_equal_unrolled_ones(hash_name, monkeypatch):
    """FRI's small layers run as one scan over a padded buffer; every layer's leaves, node
    array and root, the final polynomial and the transcript equal those of the layers written
    out one by one -- all layers unrolled, a mix, all scanned (random DEEP inputs: the bytes,
    not the low degree, are under test)."""
    log_n, blowup, c, parts = 6, 4, 3, 2
    domain = make_domain(log_n, blowup)
    size = domain.size
    keys = jax.random.split(jax.random.key(5), 8)
    shapes = [(), (c,), (c,), (parts,), (0,), (0,)]  # z, trace_z, trace_zg, parts_z, aux_z, aux_zg
    ood = OutOfDomain(*(js.ext.random(k, s) for k, s in zip(keys[:6], shapes, strict=True)))
    trace_lde, parts_lde = js.gl.random(keys[6], (size, c)), js.ext.random(keys[7], (size, parts))
    tr = Transcript.new("fri scan test", hash_name)
    layers = fri_num_layers(log_n, 4)
    outs = {}
    config = js.StarkConfig(blowup=blowup, fri_final_degree=4, hash=hash_name)
    for below in [0, size // 4, r4_fri_layer.SCAN_LAYERS_BELOW_CPU]:  # 0, 2 and all 4 layers scanned
        monkeypatch.setattr(r4_fri_layer, "SCAN_LAYERS_BELOW_CPU", below)
        outs[below] = deep_fri(domain, trace_lde, None, parts_lde, ood, tr, config)
    annotated = Transcript.new("fri scan test", hash_name, annotated=True)  # every layer a dispatch, logged by name
    outs["annotated"] = deep_fri(domain, trace_lde, None, parts_lde, ood, annotated, config)
    labels = [e.label for e in outs["annotated"][1].log]
    assert labels == ["deep gamma", *(x for k in range(layers) for x in fs.fri_labels(k)), "fri final poly"]
    (want, want_tr), *others = outs.values()
    assert len(want.leaves) == layers == 4
    for fri, tr_out in others:
        assert len(fri.leaves) == len(fri.nodes) == layers
        for k in range(layers):
            np.testing.assert_array_equal(fri.leaves[k], want.leaves[k])
            np.testing.assert_array_equal(fri.nodes[k], want.nodes[k])
        np.testing.assert_array_equal(fri.final, want.final)
        assert bool(fri.excess) == bool(want.excess)
        np.testing.assert_array_equal(tr_out.state, want_tr.state)


@pytest.mark.parametrize("blocks", [1, 4])
@pytest.mark.parametrize("with_aux", [True, False])
def test_out_of_domain_sums_match_horner_on_integers(blocks, with_aux):
    """Every out-of-domain evaluation, whole or in blocks of coefficients, against Horner's rule
    on Python integers at the drawn point (random coefficients)."""
    from jaxstark.field import goldilocks as gl
    from jaxstark.field.host import HostVal

    log_n, c, p, a = 6, 3, 2, 2
    n = 1 << log_n
    rng = np.random.default_rng(blocks + 2 * with_aux)
    trace = rng.integers(0, gl.P, size=(n, c), dtype=np.uint64)
    parts = rng.integers(0, gl.P, size=(n, p, 3), dtype=np.uint64)
    aux = rng.integers(0, gl.P, size=(n, 3 * a), dtype=np.uint64) if with_aux else None
    ood, _ = out_of_domain(jnp.asarray(trace), None if aux is None else jnp.asarray(aux), jnp.asarray(parts),
                           Transcript.new("ood test"), log_n=log_n, blocks=blocks)  # fmt: skip
    z = HostVal(np.asarray(ood.z))
    zg = z * gl.root_of_unity(log_n)

    def horner(column, x):  # column: per coefficient, an int or three coordinates
        acc = HostVal(0)
        for k in reversed(range(n)):
            acc = acc * x + HostVal(column[k])
        return list(acc.c)

    def each(columns, x):
        return [horner(col, x) for col in columns]

    assert np.asarray(ood.trace_z).tolist() == each(trace.T.tolist(), z)
    assert np.asarray(ood.trace_zg).tolist() == each(trace.T.tolist(), zg)
    assert np.asarray(ood.parts_z).tolist() == each(parts.transpose(1, 0, 2).tolist(), z)
    ext_aux = [] if aux is None else aux.reshape(n, a, 3).transpose(1, 0, 2).tolist()
    assert np.asarray(ood.aux_z).tolist() == each(ext_aux, z)
    assert np.asarray(ood.aux_zg).tolist() == each(ext_aux, zg)


def test_composition_in_row_blocks_with_periodic_columns_is_the_same_round():
    """An AIR with a periodic column (and boundary constraints): the composition round with its
    constraints in blocks of LDE rows equals the round in one piece."""
    from tests.test_stark import Stepper, stepper_trace

    air, log_n, blowup = Stepper(), 5, 2
    trace = jnp.asarray(stepper_trace(log_n))
    domain = make_domain(log_n, blowup)
    cfg = js.StarkConfig(blowup=blowup)
    tr = initial_transcript((public_array(air, ()),), airs=(air,), config=cfg, log_ns=(log_n,))
    r1, tr = trace_commit(trace, domain, tr, hash_name=cfg.hash)
    tr = fork_table(tr, jnp.uint64(0))
    args = (domain, r1.lde, None, None, public_array(air, ()), tr)
    whole = composition(*args, air=air, hash_name=cfg.hash)
    assert not bool(whole[0].excess)
    for blocks in (2, 8):
        chex.assert_trees_all_equal(composition(*args, air=air, hash_name=cfg.hash, blocks=blocks), whole)
    with pytest.raises(ValueError, match="blocks must be an int dividing the 64 LDE rows"):
        composition(*args, air=air, hash_name=cfg.hash, blocks=3)
