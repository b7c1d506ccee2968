"""cairn's distributed containers for Python (YGM's counting_set, set, disjoint_set, map, array
and bag).

A container is made collectively on a World (``w.counting_set()``, in the same order as
channels on every rank), or on a Group by its members (its ranks are then the group's, and
``g.quiesce()`` on the members completes its updates), and spreads its keys over the ranks by
a hash that is the same in every process (the array: blocks of consecutive indices; the bag:
round-robin or chosen ranks). Keys are ``int`` (64-bit) or ``str``. Operations take
*batches*: a numpy array (or any sequence) of int keys, or a sequence of str; each key's work
runs in C++ at its owner, never as a Python call per key. Updates (``insert``, ``union``,
``reduce``, ...) are asynchronous: their effects are complete everywhere after ``w.quiesce()``
on every rank. Queries (``count``, ``counts_of``, ``size``, ...) are collectives: every rank
calls them, in the same order. A container ends (its calls never sent then fail the run) at
``close()``, or when the function of the rank that made it returns, or when the
``MPISession`` it was made in closes, whichever comes first.
"""

from __future__ import annotations

import operator
from typing import Any, Optional, Sequence

import numpy

from . import _cairn
from ._cairn import Error, Group, Op, World

_INT64_MAX = numpy.iinfo(numpy.int64).max


def _ints(values: Any, dtype, call: str, rank: int, what: str, *, floats: bool = False):
    """`values` as a contiguous 1-d array of `dtype`, refused (never truncated or wrapped) if
    they are not integers (or, with `floats`, real numbers) that fit."""
    a = numpy.asarray(values)
    if a.ndim != 1:
        raise Error(f"cairn.{call}: rank {rank}: {what} must be a 1-d sequence, not of shape "
                    f"{a.shape}")
    if a.size == 0:
        return numpy.empty(0, dtype)
    kinds = "iuf" if floats else "iu"
    if a.dtype.kind not in kinds:
        raise Error(f"cairn.{call}: rank {rank}: {what} must be "
                    f"{'numbers' if floats else 'integers'}, not {a.dtype}")
    if a.dtype.kind != "f" and numpy.dtype(dtype).kind != "f":
        low = 0 if numpy.dtype(dtype).kind == "u" else numpy.iinfo(numpy.int64).min
        high = numpy.iinfo(dtype).max
        if (a.dtype.kind == "i" and int(a.min()) < low) or int(a.max()) > high:
            raise Error(f"cairn.{call}: rank {rank}: {what} holds values outside "
                        f"{numpy.dtype(dtype)} ([{a.min()}, {a.max()}])")
    return numpy.ascontiguousarray(a, dtype=dtype)


class _Container:
    """What the containers share: a key type (int or str), close() and size()."""

    _kind = ""

    def __init__(self, impl, key: type, rank: int) -> None:
        self._c = impl
        self._key = key
        self._rank = rank

    def _keys(self, keys: Any, call: str, what: str = "keys"):
        if self._key is int:
            return _ints(keys, numpy.int64, f"{self._kind}.{call}", self._rank, what)
        if isinstance(keys, str):
            raise Error(f"cairn.{self._kind}.{call}: rank {self._rank}: {what} must be a "
                        f"sequence of str, not one str")
        return keys

    def _one(self, key: Any):
        return operator.index(key) if self._key is int else key

    def size(self) -> int:
        """Collective: the number of keys (items) on all ranks."""
        return self._c.size()

    def close(self) -> None:
        """Ends this rank's part now (cairn::error ends the run if calls are still buffered:
        call ``w.quiesce()`` first). Closing again does nothing."""
        self._c.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class _Clearable(_Container):
    def clear(self) -> None:
        """Collective: empties the container on every rank."""
        self._c.clear()


class CountingSet(_Clearable):
    """Counts of keys (YGM's counting_set): ``insert`` adds to counts at the keys' owners;
    repeated keys are counted first in a cache at the source and travel once per flush."""

    _kind = "CountingSet"

    def insert(self, keys: Any, counts: Any = None) -> None:
        """Adds 1 (or ``counts[i]``) to the count of each ``keys[i]``."""
        k = self._keys(keys, "insert")
        n = None if counts is None else _ints(counts, numpy.uint64, "CountingSet.insert",
                                              self._rank, "counts")
        self._c.insert(k, n)

    def count(self, key: Any) -> int:
        """Collective (every rank asks the same key): its count, 0 if absent."""
        return self._c.count(self._one(key))

    def counts_of(self, keys: Any) -> numpy.ndarray:
        """Collective: the counts of this rank's own ``keys`` (any number), as uint64."""
        return self._c.counts_of(self._keys(keys, "counts_of"))

    def topk(self, k: int) -> list:
        """Collective: the ``k`` most counted (key, count) pairs, the same on every rank."""
        return self._c.topk(k)

    def local(self) -> dict:
        """This rank's keys and their counts."""
        return self._c.local()


class Set(_Clearable):
    """A set of keys (YGM's set)."""

    _kind = "Set"

    def insert(self, keys: Any) -> None:
        """Inserts each key."""
        self._c.insert(self._keys(keys, "insert"))

    def erase(self, keys: Any) -> None:
        """Erases each key (one rank's inserts and erases of a key apply in its order)."""
        self._c.erase(self._keys(keys, "erase"))

    def contains(self, key: Any) -> bool:
        """Collective (every rank asks the same key)."""
        return self._c.contains(self._one(key))

    def contains_each(self, keys: Any) -> numpy.ndarray:
        """Collective: for each of this rank's own ``keys``, whether the set holds it (bool)."""
        return self._c.contains_each(self._keys(keys, "contains_each")).astype(bool)

    def local(self):
        """This rank's keys (a numpy array for int keys, a list for str)."""
        return self._c.local()


class DisjointSet(_Clearable):
    """Union-find over keys (YGM's disjoint_set): ``union`` merges sets asynchronously;
    ``compress()`` points every key at its set's root, the set's smallest key."""

    _kind = "DisjointSet"

    def union(self, a: Any, b: Any) -> None:
        """Merges the sets of ``a[i]`` and ``b[i]`` for each i (keys not seen yet join)."""
        self._c.union(self._keys(a, "union", "a"), self._keys(b, "union", "b"))

    def insert(self, keys: Any) -> None:
        """Adds each key as a set of its own if absent."""
        self._c.insert(self._keys(keys, "insert"))

    def compress(self) -> int:
        """Collective: points every key at its root; the number of rounds it took."""
        return self._c.compress()

    def find(self, key: Any):
        """Collective (every rank asks the same key): its root (the key itself if absent)."""
        return self._c.find(self._one(key))

    def roots_of(self, keys: Any):
        """Collective: the roots of this rank's own ``keys``, in order."""
        return self._c.roots_of(self._keys(keys, "roots_of"))

    def num_sets(self) -> int:
        """Collective: the number of sets."""
        return self._c.num_sets()

    def local(self) -> dict:
        """This rank's keys and their parents (their roots after compress())."""
        return self._c.local()


class Map(_Clearable):
    """A map from keys to int64 or float64 values (YGM's map)."""

    _kind = "Map"

    def __init__(self, impl, key: type, value: type, rank: int) -> None:
        super().__init__(impl, key, rank)
        self._value = value

    def _values(self, values: Any, call: str):
        dtype = numpy.float64 if self._value is float else numpy.int64
        return _ints(values, dtype, f"Map.{call}", self._rank, "values",
                     floats=self._value is float)

    def insert(self, keys: Any, values: Any) -> None:
        """Sets each ``keys[i]`` to ``values[i]`` where the key is missing."""
        self._c.insert(self._keys(keys, "insert"), self._values(values, "insert"))

    def insert_or_assign(self, keys: Any, values: Any) -> None:
        """Sets each ``keys[i]`` to ``values[i]``."""
        self._c.insert_or_assign(self._keys(keys, "insert_or_assign"),
                                 self._values(values, "insert_or_assign"))

    def reduce(self, keys: Any, values: Any, op: Op = Op.SUM) -> None:
        """Merges ``values[i]`` into the value of ``keys[i]`` with ``op`` (cairn.SUM, MIN or
        MAX; a missing key takes the value); merged at the source first."""
        self._c.reduce(self._keys(keys, "reduce"), self._values(values, "reduce"), op)

    def erase(self, keys: Any) -> None:
        """Erases each key."""
        self._c.erase(self._keys(keys, "erase"))

    def value_of(self, key: Any):
        """Collective (every rank asks the same key): its value, or None."""
        return self._c.value_of(self._one(key))

    def values_of(self, keys: Any) -> tuple:
        """Collective: (values, found) for this rank's own ``keys``: numpy arrays in their
        order; an absent key's value is 0."""
        values, found = self._c.values_of(self._keys(keys, "values_of"))
        return values, found.astype(bool)

    def local(self) -> dict:
        """This rank's keys and values."""
        return self._c.local()


class Array(_Container):
    """``n`` int or float values in blocks of consecutive indices over the ranks (YGM's
    array); updates by index run at the owner."""

    _kind = "Array"

    def __init__(self, impl, n: int, value: type, rank: int, member: int) -> None:
        super().__init__(impl, int, rank)
        self._n = n
        self._value = value
        self._member = member  # this rank among the array's ranks

    def _indices(self, indices: Any, call: str):
        i = _ints(indices, numpy.uint64, f"Array.{call}", self._rank, "indices")
        if i.size and int(i.max()) >= self._n:
            raise Error(f"cairn.Array.{call}: rank {self._rank}: index {int(i.max())} is outside "
                        f"the array of {self._n} values")
        return i

    def _values(self, values: Any, call: str):
        dtype = numpy.float64 if self._value is float else numpy.int64
        return _ints(values, dtype, f"Array.{call}", self._rank, "values",
                     floats=self._value is float)

    def size(self) -> int:
        """The number of values (not a collective)."""
        return self._n

    def set(self, indices: Any, values: Any) -> None:
        """Sets value ``indices[i]`` to ``values[i]``."""
        self._c.set(self._indices(indices, "set"), self._values(values, "set"))

    def reduce(self, indices: Any, values: Any, op: Op = Op.SUM) -> None:
        """Merges ``values[i]`` into value ``indices[i]`` with op (cairn.SUM, MIN or MAX)."""
        self._c.reduce(self._indices(indices, "reduce"), self._values(values, "reduce"), op)

    def local(self) -> numpy.ndarray:
        """A copy of this rank's values (indices ``local_first`` onwards)."""
        return self._c.local()

    @property
    def local_first(self) -> int:
        """The global index of this rank's first value."""
        return self._c.local_first()

    def gather(self, root: int = 0) -> Optional[numpy.ndarray]:
        """Collective: every value in order on ``root``, None elsewhere."""
        out = self._c.gather(root)
        return out if self._member == root else None


class Bag(_Clearable):
    """int, float or str items, placed round-robin from each rank or on chosen ranks (YGM's
    bag)."""

    _kind = "Bag"

    def __init__(self, impl, item: type, size: int, rank: int, where: str) -> None:
        super().__init__(impl, item, rank)
        self._ranks = size
        self._where = where  # "world" or "group"

    def insert(self, items: Any, ranks: Any = None) -> None:
        """Places each item on the next rank in turn, or ``items[i]`` on ``ranks[i]``."""
        if self._key is str:
            x = self._keys(items, "insert", "items")
        else:
            dtype = numpy.float64 if self._key is float else numpy.int64
            x = _ints(items, dtype, "Bag.insert", self._rank, "items", floats=self._key is float)
        to = None
        if ranks is not None:
            to = _ints(ranks, numpy.int32, "Bag.insert", self._rank, "ranks")
            if to.size and (int(to.min()) < 0 or int(to.max()) >= self._ranks):
                bad = int(to.min()) if int(to.min()) < 0 else int(to.max())
                raise Error(f"cairn.Bag.insert: rank {self._rank}: target rank {bad} is outside "
                            f"the {self._where} of {self._ranks} ranks")
        self._c.insert(x, to)

    def rebalance(self) -> None:
        """Collective: moves items so that every rank holds N/P of them (one more on the first
        N mod P ranks), keeping their order by (rank, position)."""
        self._c.rebalance()

    def shuffle(self, seed: int) -> None:
        """Collective: sends every item to a random rank and permutes each rank's items."""
        self._c.shuffle(seed)

    def local(self):
        """This rank's items (numpy for int and float items, a list for str)."""
        return self._c.local()


def _made_on(on, call: str) -> int:
    """This rank's world rank (errors name it), making a container on a World or a Group;
    refuses a rank that is not a member of the Group."""
    rank = on._world_rank_here
    if on.rank < 0:  # only off a Group
        raise Error(f"cairn.Group.{call}: rank {rank}: this rank is not a member of the group "
                    f"({on.size} ranks)")
    return rank


def _key_name(on, key: Any, call: str, rank: int) -> str:
    if key is int:
        return "int"
    if key is str:
        return "str"
    raise Error(f"cairn.{type(on).__name__}.{call}: rank {rank}: key must be int or str, not "
                f"{key!r}")


def _route_suffix(on, route: str, call: str, rank: int) -> str:
    """The engine's name ending for `route` ('direct' or 'grid'), refused otherwise."""
    if route not in ("direct", "grid"):
        raise Error(f"cairn.{type(on).__name__}.{call}: rank {rank}: route must be 'direct' or "
                    f"'grid', not {route!r}")
    return "" if route == "direct" else "_grid"


_ROUTING = """``route``: how its calls travel, ``'direct'`` (to the owner at once) or
    ``'grid'`` (along the lines of a balanced grid of the ranks, C++'s ``route::grid``: fewer
    buffers per rank at scale); ``combine_hops``: on the grid, calls passing through a rank
    combine with that rank's (needs ``cache_slots``); ``buffer_bytes``: bytes per buffer of its
    calls (0: cairn's default)."""


def _counting_set(self, key: type = int, *, buffer_bytes: int = 0, cache_slots: int = _cairn._DEFAULT_CACHE_SLOTS,
                  route: str = "direct", combine_hops: bool = True) -> CountingSet:
    rank = _made_on(self, "counting_set")
    name = _key_name(self, key, "counting_set", rank) + _route_suffix(self, route,
                                                                      "counting_set", rank)
    return CountingSet(getattr(self, f"_counting_set_{name}")(buffer_bytes, cache_slots,
                                                              combine_hops), key, rank)


_counting_set.__doc__ = f"""A counting set of int or str keys on the ranks of this world or group
    (collective on them). ``cache_slots``: entries of the combining cache at the source (0:
    none). {_ROUTING}"""


def _set(self, key: type = int, *, buffer_bytes: int = 0, cache_slots: int = _cairn._DEFAULT_CACHE_SLOTS,
         route: str = "direct", combine_hops: bool = True) -> Set:
    rank = _made_on(self, "set")
    name = _key_name(self, key, "set", rank) + _route_suffix(self, route, "set", rank)
    return Set(getattr(self, f"_set_{name}")(buffer_bytes, cache_slots, combine_hops), key, rank)


_set.__doc__ = f"""A set of int or str keys on the ranks of this world or group (collective on
    them). ``cache_slots``: keys remembered at the source, so that an insert repeated within a
    phase is sent once (0: none). {_ROUTING}"""


def _disjoint_set(self, key: type = int, *, buffer_bytes: int = 0, cache_slots: int = _cairn._DEFAULT_CACHE_SLOTS,
                  route: str = "direct", combine_hops: bool = True) -> DisjointSet:
    rank = _made_on(self, "disjoint_set")
    name = _key_name(self, key, "disjoint_set", rank) + _route_suffix(self, route,
                                                                      "disjoint_set", rank)
    return DisjointSet(getattr(self, f"_disjoint_set_{name}")(buffer_bytes, cache_slots,
                                                              combine_hops), key, rank)


_disjoint_set.__doc__ = f"""A disjoint set of int or str keys on the ranks of this world or group
    (collective on them). ``cache_slots``: unions and steps of their walks remembered, so that
    a repeated one is sent once (int keys; 0: none). {_ROUTING}"""


def _map(self, key: type = int, value: type = float, *, buffer_bytes: int = 0,
         cache_slots: int = _cairn._DEFAULT_CACHE_SLOTS, route: str = "direct", combine_hops: bool = True) -> Map:
    rank = _made_on(self, "map")
    name = _key_name(self, key, "map", rank)
    if value not in (int, float):
        raise Error(f"cairn.{type(self).__name__}.map: rank {rank}: value must be int or float, "
                    f"not {value!r}")
    make = getattr(self, f"_map_{name}_{value.__name__}" + _route_suffix(self, route, "map", rank))
    return Map(make(buffer_bytes, cache_slots, combine_hops), key, value, rank)


_map.__doc__ = f"""A map from int or str keys to int (64-bit) or float values on the ranks of this
    world or group (collective on them). ``cache_slots``: entries of the cache that merges
    ``reduce`` at the source (0: none). {_ROUTING}"""


def _array(self, n: int, value: type = float, init: Any = 0, *, buffer_bytes: int = 0,
           cache_slots: int = _cairn._DEFAULT_CACHE_SLOTS, route: str = "direct", combine_hops: bool = True) -> Array:
    rank = _made_on(self, "array")
    call = f"cairn.{type(self).__name__}.array"
    if value not in (int, float):
        raise Error(f"{call}: rank {rank}: value must be int or float, not {value!r}")
    if operator.index(n) < 0:
        raise Error(f"{call}: rank {rank}: n is {n}, below 0")
    make = getattr(self, f"_array_{value.__name__}" + _route_suffix(self, route, "array", rank))
    return Array(make(n, value(init), buffer_bytes, cache_slots, combine_hops), n, value, rank,
                 self.rank)


_array.__doc__ = f"""``n`` int or float values equal to ``init``, in blocks over the ranks of this
    world or group (collective on them). ``cache_slots``: entries of the cache that merges
    ``reduce`` at the source (0: none). {_ROUTING}"""


def _bag(self, item: type = float, *, buffer_bytes: int = 0, route: str = "direct") -> Bag:
    """An empty bag of int, float or str items on the ranks of this world or group (collective
    on them). ``route``: ``'direct'`` or ``'grid'``, as for the other containers."""
    rank = _made_on(self, "bag")
    if item not in (int, float, str):
        raise Error(f"cairn.{type(self).__name__}.bag: rank {rank}: item must be int, float or "
                    f"str, not {item!r}")
    where = "world" if isinstance(self, World) else "group"
    make = getattr(self, f"_bag_{item.__name__}" + _route_suffix(self, route, "bag", rank))
    return Bag(make(buffer_bytes), item, self.size, rank, where)


for _on in (World, Group):
    _on.counting_set = _counting_set
    _on.set = _set
    _on.disjoint_set = _disjoint_set
    _on.map = _map
    _on.array = _array
    _on.bag = _bag
