"""Collectives on buffers and objects, on the world and on groups, against a sequential
reference computed from every rank's regenerated input (random data, fixed seeds)."""

import functools
import operator

import cairn
import numpy as np
import pytest

from test_p2p import data

# (op, numpy reference, element types it is defined on)
INTS = [np.int8, np.uint8, np.int16, np.int32, np.uint32, np.int64, np.uint64]
FLOATS = [np.float32, np.float64]
OPS = [
    (cairn.SUM, np.add, INTS + FLOATS + [np.complex64, np.complex128]),
    (cairn.PROD, np.multiply, INTS + FLOATS + [np.complex128]),
    (cairn.MIN, np.minimum, INTS + FLOATS + [np.bool_]),
    (cairn.MAX, np.maximum, INTS + FLOATS + [np.bool_]),
    (cairn.LAND, np.logical_and, INTS + [np.bool_]),
    (cairn.LOR, np.logical_or, INTS + [np.bool_]),
    (cairn.LXOR, np.logical_xor, INTS + [np.bool_]),
    (cairn.BAND, np.bitwise_and, INTS + [np.bool_]),
    (cairn.BOR, np.bitwise_or, INTS + [np.bool_]),
    (cairn.BXOR, np.bitwise_xor, INTS + [np.bool_]),
]


def reference(ref, inputs, dtype):
    with np.errstate(over="ignore"):
        out = functools.reduce(ref, inputs)
    return out.astype(dtype)


def check(got, want, dtype):
    if np.dtype(dtype).kind in "fc":
        np.testing.assert_allclose(got, want, rtol=1e-4 if np.dtype(dtype).itemsize <= 8 else 1e-9)
    else:
        np.testing.assert_array_equal(got, want)


def test_allreduce_every_op_and_type(run):
    def main(w):
        for i, (op, ref, dtypes) in enumerate(OPS):
            for j, dtype in enumerate(dtypes):
                n = 1 + (i * 7 + j * 13) % 50
                seed = lambda r: 100000 * i + 1000 * j + r
                mine = data(seed(w.rank), n, dtype)
                want = reference(ref, [data(seed(r), n, dtype) for r in range(w.size)], dtype)
                out = np.empty(n, dtype)
                w.Allreduce(mine, out, op=op)
                check(out, want, dtype)
                inplace = mine.copy()
                w.Allreduce(cairn.IN_PLACE, inplace, op=op)
                check(inplace, want, dtype)
    run(main)


@pytest.mark.parametrize("n", [1, 1000, 65536, 300001])
def test_allreduce_sizes_and_nonblocking(run, n):
    def main(w):
        mine = data(w.rank, n, np.float64)
        want = sum(data(r, n, np.float64) for r in range(w.size))
        out = np.empty(n)
        req = w.Iallreduce(mine, out, op=cairn.SUM)
        assert req.wait() is None
        np.testing.assert_allclose(out, want, rtol=1e-12)
        w.Allreduce(mine, out)
        np.testing.assert_allclose(out, want, rtol=1e-12)
    run(main)


def test_rooted_and_data_movement(run):
    def main(w):
        p, n = w.size, 5
        inputs = [data(7 + r, n, np.int64) for r in range(p)]
        mine = inputs[w.rank]
        root = p - 1
        out = np.empty(n, np.int64) if w.rank == root else None
        w.Reduce(mine, out, op=cairn.MAX, root=root)
        if w.rank == root:
            np.testing.assert_array_equal(out, functools.reduce(np.maximum, inputs))
        buf = inputs[root].copy() if w.rank == root else np.zeros(n, np.int64)
        w.Bcast(buf, root=root)
        np.testing.assert_array_equal(buf, inputs[root])
        req = w.Ibcast(buf2 := (inputs[0].copy() if w.rank == 0 else np.zeros(n, np.int64)))
        req.wait()
        np.testing.assert_array_equal(buf2, inputs[0])
        gathered = np.empty(p * n, np.int64)
        w.Allgather(mine, gathered)
        np.testing.assert_array_equal(gathered, np.concatenate(inputs))
        at_root = np.empty(p * n, np.int64) if w.rank == 0 else None
        w.Gather(mine, at_root, root=0)
        if w.rank == 0:
            np.testing.assert_array_equal(at_root, np.concatenate(inputs))
        part = np.empty(n, np.int64)
        w.Scatter(np.concatenate(inputs) if w.rank == 0 else None, part, root=0)
        np.testing.assert_array_equal(part, inputs[w.rank])
        # alltoall: block j of rank r is data(r * p + j)
        send = np.concatenate([data(w.rank * p + j, 3, np.float32) for j in range(p)])
        recv = np.empty_like(send)
        w.Alltoall(send, recv)
        np.testing.assert_array_equal(
            recv, np.concatenate([data(r * p + w.rank, 3, np.float32) for r in range(p)]))
        recv2 = np.empty_like(send)
        w.Ialltoall(send, recv2).wait()
        np.testing.assert_array_equal(recv2, recv)
        w.Barrier()
        w.Ibarrier().wait()
    run(main)


def test_groups(run):
    def main(w):
        for members in (list(range(0, w.size, 2)), list(range(w.size - 1, -1, -1))):
            g = w.group(members)
            if w.rank not in members:
                assert g.rank == -1
                continue
            assert g.size == len(members) and g.members == members
            assert g.world_rank(g.rank) == w.rank
            x = data(w.rank, 9, np.float64)
            out = np.empty(9)
            g.Allreduce(x, out)
            np.testing.assert_allclose(out, sum(data(r, 9, np.float64) for r in members))
            assert g.allgather(w.rank) == members
            assert g.bcast(("from", w.rank) if g.rank == 0 else None) == ("from", members[0])
    run(main)


def test_object_collectives(run):
    def main(w):
        p, r = w.size, w.rank
        assert w.bcast({"root": r} if r == 0 else None, root=0) == {"root": 0}
        assert w.allgather([r] * r) == [[q] * q for q in range(p)]
        g = w.gather(f"rank {r}", root=p - 1)
        assert g == ([f"rank {q}" for q in range(p)] if r == p - 1 else None)
        assert w.scatter([(q, "x") for q in range(p)] if r == 0 else None) == (r, "x")
        assert w.alltoall([(r, q) for q in range(p)]) == [(q, r) for q in range(p)]
        # numbers take the fast path; the rest is folded in rank order
        assert w.allreduce(r + 1) == p * (p + 1) // 2
        assert w.allreduce(r + 1, op=cairn.PROD) == functools.reduce(operator.mul, range(1, p + 1))
        assert w.allreduce(float(r), op=cairn.MAX) == float(p - 1)
        assert w.allreduce(r, op=cairn.MIN) == 0
        assert w.allreduce(0.5 * r) == pytest.approx(0.5 * p * (p - 1) / 2)
        assert w.allreduce(r if r % 2 else float(r), op=cairn.MIN) == 0
        assert type(w.allreduce(r if r % 2 else float(r), op=cairn.MIN)) is float
        big = 2**62
        assert w.allreduce(big) == big * p
        assert w.allreduce(2**70 + r) == 2**70 * p + p * (p - 1) // 2
        assert w.allreduce([r]) == list(range(p))
        assert w.allreduce({r}, op=cairn.BOR) == set(range(p))
        assert w.allreduce(str(r), op=lambda a, b: a + b) == "".join(str(q) for q in range(p))
        assert w.allreduce(r % 2 == 0, op=cairn.LAND) == (p == 1)
        assert w.reduce(r, root=0) == (p * (p - 1) // 2 if r == 0 else None)
        w.barrier()
    run(main)


def test_generalized_reduce(run):
    def main(w):
        p = w.size
        rng = np.random.default_rng(42)
        for trial in range(5):
            participants = sorted(rng.choice(p, rng.integers(1, p + 1), replace=False).tolist())
            receivers = sorted(rng.choice(p, rng.integers(1, p + 1), replace=False).tolist())
            n = int(rng.integers(1, 100))
            want = sum(data(1000 * trial + q, n, np.float64) for q in participants)
            me = w.rank
            if me not in participants and me not in receivers:
                continue
            x = data(1000 * trial + me, n, np.float64) if me in participants else None
            out = np.empty(n) if me not in participants else None
            got = w.reduce(x, cairn.SUM, participants=participants, receivers=receivers, out=out)
            if me in receivers:
                np.testing.assert_allclose(got, want, rtol=1e-12)
            else:
                assert got is None
    run(main)


def test_concurrent_generalized_reduces_and_their_options(run):
    def main(w):
        p, me = w.size, w.rank
        # Two reductions on overlapping sets (Aspen's Figure 5), each in its own stream, started
        # in opposite orders on alternate ranks and completed together.
        specs = [(list(range(p)), [p - 1], 1, cairn.SUM, np.float64, "hierarchical"),
                 (list(range(p // 2, p)), sorted({0, p // 2}), 2, cairn.MAX, np.int64, "automatic")]
        if w.node_count == 1:  # staged through node memory: one node only
            specs.append((list(range(p // 2 + 1)), sorted({0, p - 1}), 3, cairn.SUM, np.float64,
                          "shared_memory_staged"))
        reqs, outs = [], {}
        for i in (list(range(len(specs))) if me % 2 == 0 else list(reversed(range(len(specs))))):
            P, R, stream, op, dtype, algorithm = specs[i]
            if me not in P and me not in R:
                continue
            x = data(500 * i + me, 33, dtype) if me in P else None
            outs[i] = np.zeros(33, dtype) if me in R else None
            reqs.append(w.ireduce(x, op, participants=P, receivers=R, out=outs[i],
                                  algorithm=algorithm, stream=stream))
        cairn.wait_all(reqs)
        for i, (P, R, _, op, dtype, _) in enumerate(specs):
            if me in R:
                inputs = [data(500 * i + q, 33, dtype) for q in P]
                want = sum(inputs) if op == cairn.SUM else functools.reduce(np.maximum, inputs)
                np.testing.assert_allclose(outs[i], want, rtol=1e-12)
        # Load balancing across a series: every rank passes a balancer with the same history,
        # recording the reductions it does not call.
        bal = cairn.ReduceBalancer()
        for trial, (P, R) in enumerate([(list(range(p)), [0]), (list(range(p)), [p - 1]),
                                        ([0], list(range(p)))]):
            if me in P or me in R:
                x = data(900 + 10 * trial + me, 5, np.float64) if me in P else None
                out = np.empty(5) if me not in P else None
                got = w.reduce(x, cairn.SUM, participants=P, receivers=R, out=out,
                               load_balance=True, balancer=bal, direct_delivery=trial != 1)
                if me in R:
                    want = sum(data(900 + 10 * trial + q, 5, np.float64) for q in P)
                    np.testing.assert_allclose(got, want, rtol=1e-12)
            else:
                bal.record(P, R, direct_delivery=trial != 1)
        counts = [(bal.incoming(r), bal.outgoing(r)) for r in range(p)]
        assert all(c == counts for c in w.allgather(counts))  # the same history everywhere
        assert sum(i for i, _ in counts) == sum(o for _, o in counts)
        with pytest.raises(cairn.Error, match=rf"cairn.reduce: rank {me}: algorithm must be"):
            w.ireduce(np.zeros(1), participants=[me], receivers=[me], out=np.zeros(1),
                      algorithm="ring")
        with pytest.raises(cairn.Error, match=rf"cairn.ireduce: rank {me}: a receiver passes out="):
            w.ireduce(np.zeros(1), participants=[me], receivers=[me])
    run(main)


def test_bad_calls_are_refused(run):
    def main(w):
        r = w.rank
        with pytest.raises(cairn.Error, match=rf"cairn.Allreduce: rank {r}: .*element types differ"):
            w.Allreduce(np.zeros(3), np.zeros(3, np.float32))
        with pytest.raises(cairn.Error, match=rf"cairn.Allreduce: rank {r}: .*sizes differ"):
            w.Allreduce(np.zeros(3), np.zeros(4))
        with pytest.raises(cairn.Error, match=rf"rank {r}: MIN is not defined on complex128"):
            w.Allreduce(np.zeros(3, np.complex128), np.zeros(3, np.complex128), op=cairn.MIN)
        with pytest.raises(cairn.Error, match=rf"rank {r}: BAND is not defined on float64"):
            w.Allreduce(cairn.IN_PLACE, np.zeros(3), op=cairn.BAND)
        with pytest.raises(cairn.Error, match=rf"cairn.Allgather: rank {r}: recvbuf holds"):
            w.Allgather(np.zeros(3), np.zeros(3 * w.size + 1))
        with pytest.raises(cairn.Error, match=rf"cairn.alltoall: rank {r}: pass {w.size} objects"):
            w.alltoall([])
        with pytest.raises(cairn.Error, match=rf"rank {r}.*root"):
            w.Bcast(np.zeros(1), root=w.size)
        w.Barrier()  # the refused calls left nothing behind
    run(main)


def test_scans_and_reduce_scatter_block(run):
    # Every op on a few types; inclusive and exclusive prefixes and the block reduction against
    # numpy folds of every rank's regenerated input; in place too; on the world and a group.
    def main(w):
        for members in (list(range(w.size)), list(range(w.size - 1, -1, -1))[::2]):
            g = w.group(members)
            if g.rank < 0:
                continue
            p, me = g.size, g.rank
            for i, (op, ref, dtypes) in enumerate(OPS):
                for dtype in dtypes[:: max(1, len(dtypes) // 3)]:
                    n = 1 + (i * 5) % 11
                    seed = lambda r: 7000 * i + 31 * members[r] + n
                    inputs = [data(seed(r), n, dtype) for r in range(p)]
                    out = np.empty(n, dtype)
                    g.Scan(inputs[me], out, op=op)
                    check(out, reference(ref, inputs[: me + 1], dtype), dtype)
                    inplace = inputs[me].copy()
                    g.Scan(cairn.IN_PLACE, inplace, op=op)
                    check(inplace, reference(ref, inputs[: me + 1], dtype), dtype)
                    ex = np.empty(n, dtype)
                    g.Exscan(inputs[me], ex, op=op)
                    if me > 0:  # undefined on the first member, as MPI's
                        check(ex, reference(ref, inputs[:me], dtype), dtype)
                    started, ex2 = np.empty(n, dtype), np.empty(n, dtype)
                    cairn.wait_all([g.Iscan(inputs[me], started, op=op),
                                    g.Iexscan(inputs[me], ex2, op=op)])
                    check(started, reference(ref, inputs[: me + 1], dtype), dtype)
                    if me > 0:
                        check(ex2, reference(ref, inputs[:me], dtype), dtype)
                    blocks = [data(seed(r) + 1, n * p, dtype) for r in range(p)]
                    mine = np.empty(n, dtype)
                    g.Reduce_scatter_block(blocks[me], mine, op=op)
                    want = reference(ref, blocks, dtype)[me * n:(me + 1) * n]
                    check(mine, want, dtype)
                    buf = blocks[me].copy()
                    g.Reduce_scatter_block(cairn.IN_PLACE, buf, op=op)
                    check(buf[:n], want, dtype)
    run(main)


def test_vector_collectives(run):
    # Counts known to every rank from one seed, zeros included; packed and with displacements;
    # element sizes 1, 8, 16 and a 12-byte structured type (moved as bytes).
    def main(w):
        p, me = w.size, w.rank
        rng = np.random.default_rng(4242 + p)
        counts = rng.integers(0, 6, p)
        counts[rng.integers(0, p)] = 0
        matrix = rng.integers(0, 5, (p, p))  # matrix[r, q]: what rank r sends to rank q
        triple = np.dtype([("a", np.int32), ("b", np.int32), ("c", np.int32)])
        for dtype in (np.int8, np.float64, np.complex128, triple):
            def block(r, n, salt=0):
                raw = data(1000 * r + salt, 3 * n, np.int32)
                if dtype is triple:
                    return np.rec.fromarrays(raw.reshape(3, n), dtype=triple) if n else np.empty(0, triple)
                return data(1000 * r + salt, n, dtype)
            total = int(counts.sum())
            out = np.zeros(total, dtype)
            w.Allgatherv(block(me, counts[me]), out, counts.tolist())
            want = np.concatenate([block(r, counts[r]) for r in range(p)])
            assert out.tobytes() == want.tobytes()
            # Displacements: blocks in reverse rank order, with a gap of one element each.
            displs, at = [0] * p, 0
            for r in reversed(range(p)):
                displs[r], at = at, at + int(counts[r]) + 1
            spaced = np.zeros(at, dtype)
            w.Allgatherv(block(me, counts[me]), spaced, counts.tolist(), displs)
            for r in range(p):
                assert spaced[displs[r]:displs[r] + counts[r]].tobytes() == block(r, counts[r]).tobytes()
            root = p - 1
            at_root = np.zeros(total, dtype) if me == root else None
            w.Gatherv(block(me, counts[me]), at_root, counts.tolist() if me == root else None, root=root)
            if me == root:
                assert at_root.tobytes() == want.tobytes()
            part = np.zeros(counts[me], dtype)
            w.Scatterv(want if me == 0 else None, part, counts.tolist() if me == 0 else None, root=0)
            assert part.tobytes() == block(me, counts[me]).tobytes()
            send = np.concatenate([block(me, matrix[me, q], salt=q + 1) for q in range(p)])
            recv = np.zeros(int(matrix[:, me].sum()), dtype)
            w.Alltoallv(send, matrix[me].tolist(), recv, matrix[:, me].tolist())
            expect = np.concatenate([block(r, matrix[r, me], salt=me + 1) for r in range(p)])
            assert recv.tobytes() == expect.tobytes()
    run(main)


def test_vector_collectives_refuse_bad_counts(run):
    def main(w):
        out = np.zeros(4 * w.size, np.int64)
        with pytest.raises(cairn.Error, match=rf"cairn.Allgatherv: rank {w.rank}: counts\[0\] is -1"):
            w.Allgatherv(np.zeros(1, np.int64), out, [-1] * w.size)
        with pytest.raises(cairn.Error, match=rf"rank {w.rank}: .*have {w.size + 1} entries for a group of {w.size} ranks"):
            w.Allgatherv(np.zeros(1, np.int64), out, [1] * (w.size + 1))
        with pytest.raises(cairn.Error, match=r"sendbuf holds .*not .* blocks of recvbuf's 2 elements"):
            w.Reduce_scatter_block(np.zeros(2 * w.size + 1), np.zeros(2))
    run(main)


def test_object_scans_and_ibcast(run):
    def main(w):
        p, r = w.size, w.rank
        assert w.scan(r + 1) == (r + 1) * (r + 2) // 2
        assert w.exscan(r + 1) == (None if r == 0 else r * (r + 1) // 2)
        # A non-commutative function of two objects folds in rank order.
        assert w.scan([r], op=lambda a, b: a + b) == list(range(r + 1))
        assert w.exscan(str(r), op=lambda a, b: a + b) == (None if r == 0 else "".join(map(str, range(r))))
        assert w.scan(float(r), op=cairn.MAX) == float(r)
        req = w.ibcast({"from": r, "data": list(range(5))} if r == p - 1 else None, root=p - 1)
        assert req.wait() == {"from": p - 1, "data": list(range(5))}
        g = w.group(list(range(p - 1, -1, -1)))  # reversed: group rank = p - 1 - r
        assert g.scan([g.rank], op=lambda a, b: a + b) == list(range(g.rank + 1))
        assert g.ibcast("x" * 3000 if g.rank == 0 else None).wait() == "x" * 3000
        with pytest.raises(cairn.Error, match=rf"cairn.scan: rank {r}: op must be"):
            w.scan(1, op=42)
    run(main)


def test_nonblocking_rooted_and_reduce_scatter(run):
    def main(w):
        p, me = w.size, w.rank
        inputs = [data(50 + r, 6, np.float64) for r in range(p)]
        root = p // 2
        out = np.empty(6) if me == root else None
        reqs = [w.Ireduce(inputs[me], out, op=cairn.SUM, root=root)]
        gathered = np.empty(6 * p)
        reqs.append(w.Iallgather(inputs[me], gathered))
        at_root = np.empty(6 * p) if me == 0 else None
        reqs.append(w.Igather(inputs[me], at_root, root=0))
        part = np.empty(6)
        reqs.append(w.Iscatter(np.concatenate(inputs) if me == p - 1 else None, part, root=p - 1))
        cairn.wait_all(reqs)
        if me == root:
            np.testing.assert_allclose(out, sum(inputs), rtol=1e-12)
        np.testing.assert_array_equal(gathered, np.concatenate(inputs))
        if me == 0:
            np.testing.assert_array_equal(at_root, np.concatenate(inputs))
        np.testing.assert_array_equal(part, inputs[me])
        # Reduce_scatter: rank i gets counts[i] elements of the element-wise sum, zeros allowed.
        counts = [(3 * q + 1) % 4 for q in range(p)]
        full = [data(90 + r, sum(counts), np.int64) for r in range(p)]
        mine = np.zeros(counts[me], np.int64)
        w.Reduce_scatter(full[me], mine, counts, op=cairn.BXOR)
        want = functools.reduce(np.bitwise_xor, full)
        start = sum(counts[:me])
        np.testing.assert_array_equal(mine, want[start:start + counts[me]])
    run(main)


def test_persistent_collectives_restart_with_new_inputs(run):
    def main(w):
        p, me = w.size, w.rank
        x = np.empty(7)
        total = np.empty(7)
        ar = w.Allreduce_init(x, total, op=cairn.SUM)
        inplace = np.empty(3, np.int32)
        ar2 = w.Allreduce_init(cairn.IN_PLACE, inplace, op=cairn.MAX)
        buf = np.empty(5, np.int64)
        bc = w.Bcast_init(buf, root=p - 1)
        send = np.empty(2 * p)
        recv = np.empty(2 * p)
        a2a = w.Alltoall_init(send, recv)
        assert isinstance(ar.plan, str) and not ar.active
        for it in range(4):
            x[:] = data(1000 * it + me, 7, np.float64)  # new input before each start
            inplace[:] = data(2000 * it + me, 3, np.int32)
            buf[:] = data(3000 * it, 5, np.int64) if me == p - 1 else 0
            send[:] = [100 * me + j + it for j in range(2 * p)]
            for r in (ar, ar2, bc, a2a):
                r.start()
            for r in (ar, ar2, bc, a2a):
                r.wait()
                assert not r.active
            np.testing.assert_allclose(total, sum(data(1000 * it + r, 7, np.float64) for r in range(p)),
                                       rtol=1e-12)
            np.testing.assert_array_equal(
                inplace, functools.reduce(np.maximum, [data(2000 * it + r, 3, np.int32) for r in range(p)]))
            np.testing.assert_array_equal(buf, data(3000 * it, 5, np.int64))
            np.testing.assert_array_equal(
                recv, [100 * r + 2 * me + k + it for r in range(p) for k in range(2)])
        ar.start()
        with pytest.raises(cairn.Error, match="start"):
            ar.start()  # the previous start is still running
        ar.wait()
    run(main)


def each_form(w, name, args, fill, check, **kwargs):
    """Runs buffer collective `name` in its three forms, twice each with new inputs: blocking,
    started (``I…``, waited for) and persistent (``…_init``, set up once, started each time).
    ``fill(it)`` writes iteration ``it``'s inputs into the buffers of ``args`` and spoils the
    outputs; ``check(it)`` checks the outputs."""
    started = "I" + name[0].lower() + name[1:]
    for it in range(2):
        fill(it)
        getattr(w, name)(*args, **kwargs)
        check(it)
    for it in range(2, 4):
        fill(it)
        getattr(w, started)(*args, **kwargs).wait()
        check(it)
    req = getattr(w, name + "_init")(*args, **kwargs)
    assert isinstance(req.plan, str) and not req.active
    for it in range(4, 6):
        fill(it)
        req.start()
        req.wait()
        assert not req.active
        check(it)


def test_every_collective_in_every_form(run):
    def body(w):  # the world, or a group
        p, me = w.size, w.rank
        rng = np.random.default_rng(777 + p)
        counts = rng.integers(0, 5, p)
        counts[rng.integers(0, p)] = 0
        matrix = rng.integers(0, 4, (p, p))  # matrix[r, q]: elements rank r sends to rank q
        rs_counts = [int(c) for c in rng.integers(0, 4, p)]

        def inputs(it, n, dtype, r=None, salt=0):
            return data(10000 * it + 100 * (me if r is None else r) + salt, n, dtype)

        def filler(*pairs):  # (input buffer, its content for iteration it) and outputs to spoil
            def fill(it):
                for buf, make in pairs:
                    if make is None:
                        buf[...] = 0 if buf.dtype.kind in "iub" else np.nan
                    else:
                        buf[...] = make(it)
            return fill

        # Barrier: nothing to check but that every form completes.
        each_form(w, "Barrier", (), lambda it: None, lambda it: None)

        x, total = np.empty(7), np.empty(7)
        each_form(w, "Allreduce", (x, total), filler((x, lambda it: inputs(it, 7, np.float64)), (total, None)),
                  lambda it: np.testing.assert_allclose(
                      total, sum(inputs(it, 7, np.float64, r) for r in range(p)), rtol=1e-12),
                  op=cairn.SUM)

        root = p - 1
        rin = np.empty(5, np.int32)
        rout = np.empty(5, np.int32) if me == root else None

        def check_reduce(it):
            if me == root:
                np.testing.assert_array_equal(
                    rout, functools.reduce(np.minimum, [inputs(it, 5, np.int32, r) for r in range(p)]))
        each_form(w, "Reduce", (rin, rout),
                  filler((rin, lambda it: inputs(it, 5, np.int32)),
                         *([(rout, None)] if me == root else [])),
                  check_reduce, op=cairn.MIN, root=root)

        buf = np.empty(6, np.int64)
        each_form(w, "Bcast", (buf,),
                  filler((buf, lambda it: inputs(it, 6, np.int64, p // 2) if me == p // 2 else 0)),
                  lambda it: np.testing.assert_array_equal(buf, inputs(it, 6, np.int64, p // 2)),
                  root=p // 2)

        mine, every = np.empty(3, np.int16), np.empty(3 * p, np.int16)
        each_form(w, "Allgather", (mine, every), filler((mine, lambda it: inputs(it, 3, np.int16)), (every, None)),
                  lambda it: np.testing.assert_array_equal(
                      every, np.concatenate([inputs(it, 3, np.int16, r) for r in range(p)])))

        at_root = np.empty(3 * p, np.int16) if me == 0 else None

        def check_gather(it):
            if me == 0:
                np.testing.assert_array_equal(
                    at_root, np.concatenate([inputs(it, 3, np.int16, r) for r in range(p)]))
        each_form(w, "Gather", (mine, at_root),
                  filler((mine, lambda it: inputs(it, 3, np.int16)), *([(at_root, None)] if me == 0 else [])),
                  check_gather, root=0)

        whole = np.empty(4 * p) if me == root else None
        part = np.empty(4)
        each_form(w, "Scatter", (whole, part),
                  filler((part, None), *([(whole, lambda it: inputs(it, 4 * p, np.float64))] if me == root else [])),
                  lambda it: np.testing.assert_array_equal(
                      part, inputs(it, 4 * p, np.float64, root)[4 * me:4 * me + 4]),
                  root=root)

        send, recv = np.empty(2 * p, np.int64), np.empty(2 * p, np.int64)
        each_form(w, "Alltoall", (send, recv), filler((send, lambda it: inputs(it, 2 * p, np.int64)), (recv, None)),
                  lambda it: np.testing.assert_array_equal(
                      recv, np.concatenate([inputs(it, 2 * p, np.int64, r)[2 * me:2 * me + 2] for r in range(p)])))

        s_in, s_out = np.empty(4, np.int64), np.empty(4, np.int64)
        for name in ("Scan", "Exscan"):
            upto = me + 1 if name == "Scan" else me

            def check_scan(it, upto=upto):
                if upto:
                    np.testing.assert_array_equal(
                        s_out, functools.reduce(np.bitwise_xor, [inputs(it, 4, np.int64, r) for r in range(upto)]))
            each_form(w, name, (s_in, s_out), filler((s_in, lambda it: inputs(it, 4, np.int64)), (s_out, None)),
                      check_scan, op=cairn.BXOR)

        rsb_in, rsb_out = np.empty(3 * p), np.empty(3)
        each_form(w, "Reduce_scatter_block", (rsb_in, rsb_out),
                  filler((rsb_in, lambda it: inputs(it, 3 * p, np.float64)), (rsb_out, None)),
                  lambda it: np.testing.assert_array_equal(
                      rsb_out, functools.reduce(np.maximum, [inputs(it, 3 * p, np.float64, r)
                                                             for r in range(p)])[3 * me:3 * me + 3]),
                  op=cairn.MAX)

        rs_in, rs_out = np.empty(sum(rs_counts), np.int32), np.empty(rs_counts[me], np.int32)
        first = sum(rs_counts[:me])
        each_form(w, "Reduce_scatter", (rs_in, rs_out, rs_counts),
                  filler((rs_in, lambda it: inputs(it, sum(rs_counts), np.int32)), (rs_out, None)),
                  lambda it: np.testing.assert_array_equal(
                      rs_out, functools.reduce(np.bitwise_or, [inputs(it, sum(rs_counts), np.int32, r)
                                                               for r in range(p)])[first:first + rs_counts[me]]),
                  op=cairn.BOR)

        # The v-forms, with displacements that put the blocks in reverse rank order with gaps.
        displs, at = [0] * p, 0
        for r in reversed(range(p)):
            displs[r], at = at, at + int(counts[r]) + 1
        v_in, v_out = np.empty(counts[me], np.complex128), np.empty(at, np.complex128)

        def placed(it):
            out = np.zeros(at, np.complex128)
            for r in range(p):
                out[displs[r]:displs[r] + counts[r]] = inputs(it, counts[r], np.complex128, r)
            return out

        def spoil_gaps(it):  # the gaps are not written: give them the reference's zeros
            v_in[...] = inputs(it, counts[me], np.complex128)
            v_out[...] = 0
        each_form(w, "Allgatherv", (v_in, v_out, counts.tolist(), displs), spoil_gaps,
                  lambda it: np.testing.assert_array_equal(v_out, placed(it)))
        g_out = np.empty(at, np.complex128) if me == root else None

        def fill_gatherv(it):
            v_in[...] = inputs(it, counts[me], np.complex128)
            if me == root:
                g_out[...] = 0

        def check_gatherv(it):
            if me == root:
                np.testing.assert_array_equal(g_out, placed(it))
        each_form(w, "Gatherv", (v_in, g_out, counts.tolist() if me == root else None, displs),
                  fill_gatherv, check_gatherv, root=root)
        sv_in = np.empty(at, np.complex128) if me == 0 else None

        def fill_scatterv(it):
            v_in[...] = np.nan
            if me == 0:
                sv_in[...] = placed(it)
        each_form(w, "Scatterv", (sv_in, v_in, counts.tolist() if me == 0 else None, displs),
                  fill_scatterv,
                  lambda it: np.testing.assert_array_equal(v_in, inputs(it, counts[me], np.complex128, me)),
                  root=0)

        a_in = np.empty(int(matrix[me].sum()), np.float32)
        a_out = np.empty(int(matrix[:, me].sum()), np.float32)

        def block_to(it, r, q):  # what rank r sends to rank q
            return inputs(it, int(matrix[r, q]), np.float32, r, salt=q + 1)
        each_form(w, "Alltoallv", (a_in, matrix[me].tolist(), a_out, matrix[:, me].tolist()),
                  filler((a_in, lambda it: np.concatenate([block_to(it, me, q) for q in range(p)])), (a_out, None)),
                  lambda it: np.testing.assert_array_equal(
                      a_out, np.concatenate([block_to(it, r, me) for r in range(p)])))

    def main(w):
        body(w)
        body(w.group(list(range(w.size - 1, -1, -1))))  # group rank = size - 1 - world rank
    run(main)
