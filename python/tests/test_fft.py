"""Distributed FFTs of DArrays against numpy.fft on the same global data (every rank makes the
whole input from one seed and fills its part by its global indices)."""

import cairn
import numpy as np
import pytest

pytestmark = pytest.mark.skipif(not hasattr(cairn._cairn, "_fft_plan"),
                                reason="this build has no FFT library")


def fill(a, whole):
    """Writes this rank's part of `whole` into DArray `a`."""
    if a.local.size:
        a.local[...] = whole[np.ix_(*[a.global_indices(d) for d in range(a.ndim)])]


def part(a, whole):
    """This rank's part of `whole` in `a`'s layout."""
    return whole[np.ix_(*[a.global_indices(d) for d in range(a.ndim)])]


def random_whole(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


@pytest.mark.parametrize("shape,dist", [((20, 18), ["cyclic", "block"]),
                                        ((12, 10, 8), ["block", ("block_cyclic", 3), "block"])])
@pytest.mark.parametrize("precision", ["double", "single"])
def test_c2c_matches_numpy_both_ways(run, shape, dist, precision):
    ctype = np.complex128 if precision == "double" else np.complex64
    tol = 1e-9 if precision == "double" else 2e-4

    def main(w):
        a = w.darray(shape, ctype, dist=dist)  # any layout: the plan redistributes
        b = w.darray(shape, ctype)
        back = w.darray(shape, ctype, dist=dist)
        plan = cairn.FFTPlan(a, b, "c2c", rigor="estimate")
        assert "fft c2c" in plan.schedule
        for it in range(2):  # planned once, run twice on new data
            whole = random_whole(shape, ctype, 10 * it + len(shape))
            fill(a, whole)
            plan.forward(a, b)
            want = np.fft.fftn(whole.astype(np.complex128))
            np.testing.assert_allclose(part(b, want), b.local, rtol=tol, atol=tol * np.abs(want).max())
            np.testing.assert_array_equal(a.local, part(a, whole))  # the input is left as it is
            plan.backward(b, back, scale="full")
            np.testing.assert_allclose(back.local, part(back, whole), rtol=tol, atol=tol)
    run(main)


@pytest.mark.parametrize("shape", [(16, 10), (8, 6, 10)])
def test_r2c_matches_numpy_rfftn(run, shape):
    half = shape[:-1] + (shape[-1] // 2 + 1,)

    def main(w):
        x = w.darray(shape, np.float64)
        y = w.darray(half, np.complex128)
        out = w.darray(shape, np.float64)  # the plan's space layout, as x
        plan = cairn.FFTPlan(x, y, "r2c", rigor="estimate",
                             decomposition="pencils" if len(shape) == 3 and w.size == 4 else "automatic")
        whole = random_whole(shape, np.float64, 99)
        fill(x, whole)
        plan.forward(x, y, scale="symmetric")
        want = np.fft.rfftn(whole) / np.sqrt(np.prod(shape))
        np.testing.assert_allclose(y.local, part(y, want), rtol=1e-9, atol=1e-9)
        plan.backward(y, out, scale="symmetric")
        np.testing.assert_allclose(out.local, part(out, whole), rtol=1e-9, atol=1e-9)
        assert str(plan)  # this rank's steps, printable
    run(main)


def test_bad_plans_and_arrays_are_refused(run):
    def main(w):
        r = w.rank
        a = w.darray((8, 8), np.complex128)
        b = w.darray((8, 8), np.complex128)
        f = w.darray((8, 8), np.float64)
        with pytest.raises(cairn.Error, match=rf"cairn.FFTPlan: rank {r}: kind must be 'c2c' or 'r2c'"):
            cairn.FFTPlan(a, b, "c2r")
        with pytest.raises(cairn.Error, match=rf"cairn.FFTPlan: rank {r}: in must be a 2-dimensional complex128 array here"):
            cairn.FFTPlan(f, b, "c2c", rigor="estimate")
        with pytest.raises(cairn.Error, match=rf"cairn.FFTPlan: rank {r}: in and out have 1 and 2 dimensions"):
            cairn.FFTPlan(w.darray((8,), np.complex128), b)
        plan = cairn.FFTPlan(a, b, rigor="estimate")
        with pytest.raises(cairn.Error, match=rf"cairn.FFTPlan.forward: rank {r}: scale must be"):
            plan.forward(a, b, scale="half")
        with pytest.raises(cairn.Error, match=rf"cairn.FFTPlan.forward: rank {r}: in must be a 2-dimensional complex128 array"):
            plan.forward(f, b)
    run(main)


@pytest.mark.parametrize("kind", ["c2c", "r2c"])
def test_arrays_in_the_plans_layouts_skip_the_outer_redistributions(run, kind):
    shape = (8, 6, 10)

    def main(w):
        space, frequency = cairn.fft_arrays(w, shape, kind, single=True)
        assert space.dtype == (np.float32 if kind == "r2c" else np.complex64)
        assert frequency.dtype == np.complex64
        plan = cairn.FFTPlan(space, frequency, kind, rigor="estimate")
        other = w.darray(shape, space.dtype, dist=["cyclic", "block", "block"])
        detour = cairn.FFTPlan(other, frequency, kind, rigor="estimate")
        if w.size > 1:  # one redistribution fewer each way than from a cyclic input
            assert str(plan).count("redistribute") < str(detour).count("redistribute")
        whole = random_whole(shape, space.dtype, 5)
        fill(space, whole)
        plan.forward(space, frequency)
        ref = np.fft.rfftn if kind == "r2c" else np.fft.fftn
        want = ref(whole.astype(np.float64 if kind == "r2c" else np.complex128))
        np.testing.assert_allclose(frequency.local, part(frequency, want), rtol=2e-4,
                                   atol=2e-4 * np.abs(want).max())
        g = w.group(list(range(w.size - 1, -1, -1)))  # a group works too
        gs, gf = cairn.fft_arrays(g, shape, kind)
        assert gs.shape == shape and gf.shape[-1] == (shape[-1] // 2 + 1 if kind == "r2c" else shape[-1])
    run(main)
