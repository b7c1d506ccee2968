"""What the distributed arrays share: where they live (a World or a Group, as the bindings
take it) and their global shape and indices."""

from typing import Any

from ._cairn import Error, World


def rank_and_group(on: Any) -> tuple:
    """(this rank's world rank or -1 off the group, the group): a World is the group of all its
    ranks."""
    if isinstance(on, World):
        return on.rank, on.group(list(range(on.size)))
    return (on._world_rank_here if on.rank >= 0 else -1), on


class Distributed:
    """The part of a distributed array this rank holds: its core (``_a``), numpy type, global
    shape and the global indices of its local positions."""

    def __init__(self, impl, dtype, rank: int):
        self._a = impl
        self.dtype = dtype
        self._rank = rank

    @property
    def shape(self) -> tuple:
        """The global shape."""
        return tuple(self._a.shape)

    @property
    def ndim(self) -> int:
        """Dimensions."""
        return self._a.ndim

    def global_indices(self, dim: int):
        """The global indices (numpy int64) of this rank's positions along dimension ``dim``
        (of its interior, for a ghosted array)."""
        import numpy

        if not 0 <= dim < self.ndim:
            raise Error(f"cairn.{type(self).__name__}.global_indices: rank {self._rank}: "
                        f"dimension {dim} of a {self.ndim}-dimensional array")
        return numpy.asarray(self._a.global_indices(dim), dtype=numpy.int64)
