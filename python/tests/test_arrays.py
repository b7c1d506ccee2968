"""Distributed arrays: local parts as numpy views, redistribution between random layouts,
element types and groups, checked against the global index function that filled them."""

import itertools

import cairn
import numpy as np
import pytest

DISTS = ["block", "cyclic", ("block_cyclic", 2), ("block_cyclic", 3), "replicated"]


def value(index_grids, dtype):
    v = sum(g * 1000**k for k, g in enumerate(reversed(index_grids)))
    return (v % 251).astype(dtype) if np.dtype(dtype).kind in "iub" else v.astype(dtype)


def fill(a):
    grids = np.meshgrid(*[a.global_indices(d) for d in range(a.ndim)], indexing="ij")
    a.local[...] = value(grids, a.dtype)


def check(a):
    grids = np.meshgrid(*[a.global_indices(d) for d in range(a.ndim)], indexing="ij")
    np.testing.assert_array_equal(a.local, value(grids, a.dtype))


def layouts(rng, ndim, trials):
    for _ in range(trials):
        yield [DISTS[i] for i in rng.integers(0, len(DISTS), ndim)]


def test_redistribute_between_random_layouts(run):
    def main(w):
        rng = np.random.default_rng(5)
        for ndim, shape in [(1, (29,)), (2, (7, 9)), (3, (5, 4, 6)), (2, (1, 3))]:
            for src_dist, dst_dist in zip(layouts(rng, ndim, 6), layouts(rng, ndim, 6)):
                a = w.darray(shape, np.float64, dist=src_dist)
                b = w.darray(shape, np.float64, dist=dst_dist)
                assert a.shape == shape and a.local.shape == a.local_shape
                fill(a)
                cairn.redistribute(a, b)
                check(b)
    run(main)


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.int32, np.complex64, np.complex128,
                                   np.bool_])
def test_element_types_and_nonblocking(run, dtype):
    def main(w):
        a = w.darray((11, 3), dtype, dist=["cyclic", "block"])
        b = w.darray((11, 3), dtype, dist=["block", "replicated"])
        fill(a)
        req = cairn.iredistribute(a, b)
        req.wait()
        check(b)
    run(main)


def test_between_groups(run):
    def main(w):
        p = w.size
        first = w.group(list(range(0, (p + 1) // 2)))
        last = w.group(list(range(p // 2, p)))  # overlaps the first where p is odd
        a = first.darray((13, 4), np.int64, dist=["block", "cyclic"])
        b = last.darray((13, 4), np.int64, dist=[("block_cyclic", 2), "block"])
        if first.rank < 0:
            assert a.local.size == 0
        fill(a)
        if first.rank >= 0 or last.rank >= 0:
            cairn.redistribute(a, b)
        if last.rank >= 0:
            check(b)
    run(main)


def test_local_is_a_view_kept_alive(run):
    def main(w):
        local = w.darray((4 * w.size,), np.float32).local
        local[:] = 7  # the array object is gone; its memory lives while the view does
        assert (local == 7).all()
    run(main)


def test_bad_arrays_are_refused(run):
    def main(w):
        r = w.rank
        with pytest.raises(cairn.Error, match=rf"rank {r}: the arrays hold float64 and int64"):
            cairn.redistribute(w.darray((4,), np.float64), w.darray((4,), np.int64))
        with pytest.raises(cairn.Error, match=rf"rank {r}: distribution 'blocks'"):
            w.darray((4,), dist=["blocks"])
        with pytest.raises(cairn.Error, match=rf"rank {r}: shape has 5 dimensions: 1 to 4"):
            w.darray((1, 1, 1, 1, 1))
        with pytest.raises(cairn.Error, match=rf"rank {r}: .*3 bytes"):
            w.darray((4,), "S3")
        with pytest.raises(cairn.Error, match=r"shape"):
            cairn.redistribute(w.darray((4,), np.float64), w.darray((5,), np.float64))
        w.Barrier()
    run(main)


def test_arrays_between_tasks(run):
    def main(w):
        p = w.size
        if p < 2:
            with pytest.raises(cairn.Error, match="sizes"):
                cairn.Tasks(w, [1, 1])
            return
        t = cairn.Tasks(w, [p // 2, p - p // 2])
        assert t.count == 2 and t.task == t.task_of(w.rank)
        assert t.my_group.members == t.group(t.task).members
        a = t.my_group.darray((9, 5), np.float64, dist=["cyclic", "block"])
        if t.task == 0:
            fill(a)
            t.send(a, 1, tag=4)
            back = t.my_group.darray((9, 5), np.float64, dist=["block", "block"])
            t.recv(back, 1, tag=5)
            check(back)
        else:
            b = t.my_group.darray((9, 5), np.float64, dist=[("block_cyclic", 2), "replicated"])
            t.irecv(b, 0, tag=4).wait()
            check(b)
            t.send(b, 0, tag=5)
        by_color = cairn.Tasks.by_color(w, w.rank % 2)
        assert by_color.my_group.members == list(range(w.rank % 2, p, 2))
    run(main)
