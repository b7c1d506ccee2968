"""Halo exchange: cairn's ghosted arrays (BLOCK-distributed, each rank's part padded by ghost
cells) and the exchanges that fill the ghosts from the neighbours' interiors."""

from __future__ import annotations

from typing import Any, Optional, Sequence

from . import _cairn
from ._cairn import Group, Request, World
from ._on import Distributed, rank_and_group


class HaloExchange:
    """A halo exchange planned once and started many times (like a persistent request):
    ``h.start()``, work on the interior, ``h.wait()``. Every rank of the array's group makes it,
    in the same order as its other halo exchanges on that group."""

    def __init__(self, impl, array: GhostedArray) -> None:
        self._h = impl
        self._array = array  # the exchange writes its ghosts: keep it alive

    def start(self) -> None:
        """Starts one exchange (the previous one must be complete)."""
        self._h.start()

    def test(self) -> bool:
        """Advances; True once the started exchange is complete."""
        return self._h.test()

    def wait(self) -> None:
        """Blocks until the started exchange is complete."""
        self._h.wait()

    @property
    def plan(self) -> str:
        """This rank's plan: per phase, every face sent and received."""
        return self._h.plan


class GhostedArray(Distributed):
    """One rank's part of a BLOCK-distributed array padded by ``ghosts[d]`` ghost cells on both
    sides of every dimension d, periodic where ``periodic[d]``.

    ``padded`` is the whole local storage (ghosts included) as a writable numpy view of cairn's
    memory, ``interior`` the part this rank owns (a view into it); ``global_indices(d)`` gives
    the interior's global indices along d. ``exchange()`` fills the ghosts from the neighbours'
    interiors (``corners``: the diagonal ghosts too, as 9- and 27-point stencils need; ghosts
    past a non-periodic boundary are left as they are).
    """

    @property
    def ghosts(self) -> tuple:
        """Ghost cells on each side, per dimension."""
        return tuple(self._a.ghosts)

    @property
    def padded(self):
        """This rank's storage, ghosts included: a numpy view of cairn's memory."""
        return self._a.padded_bytes().view(self.dtype).reshape(tuple(self._a.padded_shape))

    @property
    def interior(self):
        """The elements this rank owns: a view into ``padded``."""
        p = self.padded
        if p.size == 0:
            return p
        return p[tuple(slice(g, n - g) for g, n in zip(self.ghosts, p.shape))]

    def iexchange(self, corners: bool = True) -> Request:
        """Starts filling the ghosts; the interior must stay untouched and the ghosts unread
        until the request completes. Every rank of the group calls it, in the same order."""
        return self._a._start(corners)

    def exchange(self, corners: bool = True) -> None:
        """Fills the ghosts (see :meth:`iexchange`) and waits."""
        self.iexchange(corners).wait()

    def exchange_init(self, corners: bool = True) -> HaloExchange:
        """The exchange planned once, to start many times."""
        return HaloExchange(self._a._persistent(corners), self)

    def plan(self, corners: bool = True) -> str:
        """This rank's plan of the exchange, printed."""
        return self._a.plan(corners)

    def __repr__(self) -> str:
        return f"GhostedArray({self.dtype}, {self._a.describe()}, ghosts {self.ghosts})"


def _per_dim(value: Any, n: int, kind) -> list:
    """One value per dimension: `value` itself if a sequence, else n copies."""
    if isinstance(value, (list, tuple)):
        return [kind(v) for v in value]
    return [kind(value)] * n


def _ghosted_darray(self, shape: Sequence[int], dtype: Any = "float64", *, ghosts: Any = 1,
                    periodic: Any = False, grid: Optional[Sequence[int]] = None) -> GhostedArray:
    """A ghosted array of ``shape`` (1 to 3 dimensions) over this world's or group's ranks,
    BLOCK in every dimension, zero-initialized: ``ghosts`` cells on both sides (one width, or
    one per dimension), ``periodic`` (one flag, or one per dimension), ``grid`` the process grid
    (default: balanced). Every rank may make it; no communication."""
    import numpy

    dtype = numpy.dtype(dtype)
    rank, group = rank_and_group(self)
    shape = [int(n) for n in shape]
    g = _per_dim(ghosts, len(shape), int)
    p = _per_dim(periodic, len(shape), bool)
    grid = [int(x) for x in grid] if grid is not None else []
    return GhostedArray(_cairn._ghosted_darray(group, shape, g, p, grid, dtype.itemsize, rank),
                        dtype, rank)


World.ghosted_darray = _ghosted_darray
Group.ghosted_darray = _ghosted_darray
