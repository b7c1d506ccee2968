"""Distributed FFTs of cairn.DArrays (cairn's fft_plan: slabs or pencils, FFTW's local
transforms, cairn's redistributions between them)."""

from __future__ import annotations

from typing import Any, Sequence

from . import _cairn
from ._cairn import Error
from ._on import rank_and_group


class FFTPlan:
    """A distributed FFT between ``space`` and ``frequency``, two DArrays of 2 or 3 dimensions
    over the same group, planned once and run many times; every rank of the group makes it and
    runs each transform, in the same order.

    ``kind`` "c2c": both complex128 (or both complex64) of one shape. "r2c": ``space`` float64
    (float32) of shape n, ``frequency`` complex128 (complex64) of n with the last dimension
    n/2 + 1 (FFTW's half spectrum). Any layouts: the plan redistributes where they differ from
    its schedule (``plan.schedule``, printable; ``str(plan)`` tells this rank's steps).
    ``decomposition``: "automatic", "slabs" or "pencils" (3-D; ``pencil_grid`` p0 x p1, zeros
    for the most square); ``rigor``: FFTW's planner, "estimate", "measure" or "patient".
    """

    def __init__(self, space, frequency, kind: str = "c2c", *, decomposition: str = "automatic",
                 rigor: str = "measure", pencil_grid: Sequence[int] = (0, 0)) -> None:
        if not hasattr(_cairn, "_fft_plan"):
            raise Error("cairn.FFTPlan: this build of cairn has no FFT library (FFTW was not "
                        "found when it was built)")
        self._rank = space._rank
        self._p = _cairn._fft_plan(space._a, frequency._a, kind, decomposition, rigor,
                                   tuple(int(g) for g in pencil_grid), space._rank)

    def forward(self, space, frequency, scale: str = "none") -> None:
        """Transforms ``space`` (the plan's space layout, left as it is) into ``frequency``.
        ``scale``: "none" (FFTW's unscaled transform), "full" (divided by the element count)
        or "symmetric" (by its square root)."""
        self._p.forward(space._a, frequency._a, scale)

    def backward(self, frequency, space, scale: str = "none") -> None:
        """Transforms ``frequency`` (left as it is) back into ``space``."""
        self._p.backward(frequency._a, space._a, scale)

    @property
    def schedule(self) -> str:
        """The rank-independent schedule: which layout each batch of local transforms uses."""
        return self._p.schedule

    def __str__(self) -> str:
        return self._p.describe()


def fft_arrays(on: Any, shape: Sequence[int], kind: str = "c2c", *, single: bool = False,
               decomposition: str = "automatic", pencil_grid: Sequence[int] = (0, 0)) -> tuple:
    """(space, frequency): zeroed DArrays over ``on`` (a World or a Group) in the layouts that an
    FFTPlan of ``shape`` with these settings transforms without redistributing (the data of
    its first and last batch of local transforms): complex128 (complex64 with ``single``); for
    "r2c" a float64 (float32) space array and the half-spectrum frequency array. Every rank
    may call it; no communication."""
    import numpy

    from . import DArray

    if not hasattr(_cairn, "_fft_arrays"):
        raise Error("cairn.fft_arrays: this build of cairn has no FFT library")
    rank, group = rank_and_group(on)
    a, b = _cairn._fft_arrays(group, [int(n) for n in shape], kind, single, decomposition,
                              tuple(int(g) for g in pencil_grid), rank)
    complex_type = numpy.dtype(numpy.complex64 if single else numpy.complex128)
    real_type = numpy.dtype(numpy.float32 if single else numpy.float64)
    space_type = real_type if kind == "r2c" else complex_type
    return DArray(a, space_type, rank), DArray(b, complex_type, rank)
