"""Halo exchange on ghosted arrays against the global function they hold: every ghost cell
inside the domain (or wrapped, where periodic) must hold its global element after an exchange;
ghosts past a non-periodic boundary, and the diagonal ones without corners, keep a sentinel."""

import itertools

import cairn
import numpy as np
import pytest

SENTINEL = -7.0


def value(gi, it):
    """The element at global index gi (a tuple) in iteration it."""
    return float(it * 1_000_000 + sum(int(x) * 100 ** k for k, x in enumerate(reversed(gi))))


def check_exchange(a, shape, ghosts, periodic, corners, it):
    if a.padded.size == 0:
        return
    starts = [int(a.global_indices(d)[0]) for d in range(a.ndim)]
    for local in itertools.product(*[range(n) for n in a.padded.shape]):
        gi, outside, ghost_dims = [], False, 0
        for d, k in enumerate(local):
            g = starts[d] - ghosts[d] + k
            n_interior = a.padded.shape[d] - 2 * ghosts[d]
            if k < ghosts[d] or k >= ghosts[d] + n_interior:
                ghost_dims += 1
            if not 0 <= g < shape[d]:
                if periodic[d]:
                    g %= shape[d]
                else:
                    outside = True
            gi.append(g)
        got = a.padded[local]
        if ghost_dims == 0:
            assert got == value(gi, it)  # the interior is untouched
        elif outside or (ghost_dims > 1 and not corners):
            assert got == SENTINEL, (local, gi, got)
        else:
            assert got == value(gi, it), (local, gi, got)


def fill(a, it):
    a.padded[...] = SENTINEL
    if a.interior.size:
        idx = np.meshgrid(*[a.global_indices(d) for d in range(a.ndim)], indexing="ij")
        for pos in itertools.product(*[range(n) for n in a.interior.shape]):
            a.interior[pos] = value(tuple(i[pos] for i in idx), it)


@pytest.mark.parametrize("shape,ghosts,periodic", [
    ((112,), (2,), (True,)),
    ((84, 20), (1, 2), (True, False)),
    ((14, 10, 8), (1, 1, 1), (False, True, True)),
])
@pytest.mark.parametrize("corners", [True, False])
def test_exchanges_fill_every_ghost_from_its_owner(run, shape, ghosts, periodic, corners):
    def main(w):
        a = w.ghosted_darray(shape, np.float64, ghosts=list(ghosts), periodic=list(periodic))
        assert a.shape == shape and a.ghosts == ghosts
        assert ("corners included" if corners else "faces only") in a.plan(corners)
        fill(a, 0)
        a.exchange(corners=corners)
        check_exchange(a, shape, ghosts, periodic, corners, 0)
        fill(a, 1)
        a.iexchange(corners=corners).wait()
        check_exchange(a, shape, ghosts, periodic, corners, 1)
        h = a.exchange_init(corners=corners)  # planned once, started twice on new data
        for it in (2, 3):
            fill(a, it)
            h.start()
            h.wait()
            check_exchange(a, shape, ghosts, periodic, corners, it)
    run(main)


def test_ghosted_arrays_on_a_group_and_bad_widths(run):
    def main(w):
        if w.size > 1:
            g = w.group(list(range(1, w.size)))  # rank 0 is not a member: an empty part
            a = g.ghosted_darray((6 * (w.size - 1),), np.int32, ghosts=1, periodic=True)
            if w.rank == 0:
                assert a.padded.size == 0
            a.padded[...] = -1
            if a.interior.size:
                a.interior[...] = a.global_indices(0)
            if g.rank >= 0:
                a.exchange()
                n = 6 * (w.size - 1)
                start = int(a.global_indices(0)[0])
                assert a.padded[0] == (start - 1) % n and a.padded[-1] == (start + 6) % n
        if w.size > 1:  # ghosts wider than a neighbour's interior, refused on every rank
            with pytest.raises(cairn.Error, match=rf"rank {w.rank}: ghost width 3 in dimension 0 is larger"):
                w.ghosted_darray((2 * w.size,), np.float64, ghosts=3).exchange()
    run(main)
