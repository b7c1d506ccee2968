"""cairn for Python: cairn's threads and MPI engines, collectives and messages from Python.

Run a function on every rank::

    import cairn, numpy as np

    def main(w):
        x = np.full(4, w.rank, dtype=np.float64)
        w.Allreduce(cairn.IN_PLACE, x, op=cairn.SUM)   # numpy buffers, no copies
        total = w.allreduce(w.rank, op=cairn.SUM)      # any picklable object
        return total

    cairn.launch(main, ranks=4)       # 4 threads in this process (the threads engine)
    # mpirun -np 4 python script.py   # the same script on the MPI engine

Methods with capitals (``Send``, ``Allreduce``, ...) move the memory of objects that export a
buffer (numpy arrays, bytes, bytearray, memoryview) without copies, with the element type
checked; lowercase ones (``send``, ``allreduce``, ...) move any picklable object, as mpi4py's do.
Errors are :class:`cairn.Error` carrying cairn's message (the call, the rank and the values).
"""

from __future__ import annotations

import atexit
import functools
import operator
import pickle
import sys
import traceback
from typing import Any, Callable, Iterable, Optional, Sequence

from . import _cairn
from ._cairn import (
    ANY_SOURCE,
    ANY_TAG,
    IN_PLACE,
    Channel,
    Error,
    Group,
    Op,
    PersistentRequest,
    ReduceBalancer,
    Request,
    RunAborted,
    Status,
    Tasks,
    World,
)
from ._on import Distributed, rank_and_group

__all__ = [
    "ANY_SOURCE", "ANY_TAG", "IN_PLACE", "Channel", "Error", "Group", "Op", "Request", "RunAborted",
    "Status", "World", "SUM", "PROD", "MIN", "MAX", "LAND", "LOR", "LXOR", "BAND", "BOR", "BXOR",
    "launch", "detect_engine", "mpi_available", "wait_all", "DArray", "redistribute",
    "iredistribute", "Tasks", "PersistentRequest", "MPISession", "world_from_mpi4py",
    "CountingSet", "Set", "DisjointSet", "Map", "Array", "Bag", "FFTPlan", "fft_arrays",
    "GhostedArray", "HaloExchange", "ReduceBalancer",
]

SUM = Op.SUM
PROD = Op.PROD
MIN = Op.MIN
MAX = Op.MAX
LAND = Op.LAND
LOR = Op.LOR
LXOR = Op.LXOR
BAND = Op.BAND
BOR = Op.BOR
BXOR = Op.BXOR

_PROTOCOL = pickle.HIGHEST_PROTOCOL


def launch(fn: Callable[[World], Any], ranks: Optional[int] = None, *,
           engine: Optional[str] = None, comm: Any = None, nodes: Optional[int] = None,
           watchdog_s: Optional[float] = None, progress: Optional[str] = None) -> None:
    """Runs ``fn(world)`` once per rank and returns when every rank has returned.

    The engine is MPI under an MPI launcher (``mpirun -np 4 python script.py``: one rank per
    process, ``ranks`` ignored), else threads: ``ranks`` threads in this process (default
    ``CAIRN_RANKS``, else the hardware threads), which take turns holding the GIL and release it
    whenever cairn waits or copies. ``engine`` ("threads" or "mpi") overrides the choice.

    ``comm``: an mpi4py communicator to run on (the MPI engine over its processes, world rank =
    its rank), for programs that use mpi4py beside cairn. ``nodes``, ``watchdog_s`` and
    ``progress`` are cairn's launch options (``CAIRN_NODES``, ``CAIRN_WATCHDOG_S``,
    ``CAIRN_PROGRESS``); ``--cairn-*`` flags in ``sys.argv`` are read too.

    If ``fn`` raises on a rank, the other ranks are released and, on the threads engine, the
    exception is raised here; on the MPI engine the job ends with a non-zero exit code after the
    message. A run that cannot start (a bad setting) raises :class:`cairn.Error`.
    """
    comm_f = None if comm is None else comm.py2f()
    _cairn.launch(fn, ranks, engine, nodes, watchdog_s, progress, comm_f, list(sys.argv))


class MPISession:
    """cairn beside an mpi4py program that keeps its own structure: the MPI engine over the
    processes of ``comm`` (an mpi4py communicator; world rank = rank in ``comm``), open from here
    to :meth:`close`, without handing a function to :func:`launch`::

        from mpi4py import MPI
        with cairn.MPISession(MPI.COMM_WORLD) as s:
            w = s.world
            total = w.allreduce(w.rank)   # cairn's calls beside the program's own MPI calls

    Opening and closing are collective over ``comm``; closing waits for every process to close
    its own. ``nodes``, ``watchdog_s`` and ``progress`` are as for :func:`launch`, and so are
    cairn's flags (``--cairn-*``, read from ``argv``, by default ``sys.argv``, which is left as
    it is) and the ``CAIRN_*`` variables. While a session is open, an exception
    that leaves its ``with`` block, or that no code catches, ends the whole job with a non-zero
    exit after the traceback, since the other processes may be waiting for this one (as a
    raising rank does under :func:`launch`). Containers and channels made while the session is
    open end when it closes. Sessions still open when Python exits are closed
    then, before mpi4py finalizes MPI. A bad ``comm`` or setting raises :class:`cairn.Error`.
    """

    def __init__(self, comm: Any, *, nodes: Optional[int] = None,
                 watchdog_s: Optional[float] = None, progress: Optional[str] = None,
                 argv: Optional[Sequence[str]] = None) -> None:
        if not hasattr(_cairn, "_Session"):
            raise Error("cairn.MPISession: needs the MPI engine, which this build of cairn lacks")
        self._session = _cairn._Session(comm.py2f(), nodes, watchdog_s, progress,
                                        list(sys.argv if argv is None else argv))
        #: This process's rank of the session; it refuses calls once the session is closed.
        self.world: World = self._session.world
        _watch_sessions()
        _open_sessions.append(self)

    @property
    def is_open(self) -> bool:
        """True until :meth:`close`."""
        return self._session.is_open

    def close(self) -> None:
        """Ends the session (collective; does nothing if closed already)."""
        if self in _open_sessions:
            _open_sessions.remove(self)
        self._session.close()

    def abort(self, what: str) -> None:
        """Ends the whole job now (exit code 1) after printing ``cairn: rank <r> failed: what``."""
        sys.stdout.flush()
        sys.stderr.flush()
        self._session.abort(what)

    def __enter__(self) -> MPISession:
        return self

    def __exit__(self, kind, value, tb) -> None:
        if kind is None:
            self.close()
            return
        traceback.print_exception(kind, value, tb)
        self.abort(f"{kind.__name__}: {value}")


def world_from_mpi4py(comm: Any, *, nodes: Optional[int] = None,
                      watchdog_s: Optional[float] = None, progress: Optional[str] = None,
                      argv: Optional[Sequence[str]] = None) -> World:
    """Opens an :class:`MPISession` on the mpi4py communicator ``comm`` and returns its world;
    the session stays open until Python exits (collective over ``comm``)."""
    return MPISession(comm, nodes=nodes, watchdog_s=watchdog_s, progress=progress,
                      argv=argv).world


_open_sessions: list[MPISession] = []  # oldest first
_watching = False


def _watch_sessions() -> None:
    """Once: an uncaught exception ends the job while sessions are open; exit closes them."""
    global _watching
    if _watching:
        return
    _watching = True
    previous = sys.excepthook

    def hook(kind, value, tb):
        previous(kind, value, tb)
        if _open_sessions:
            _open_sessions[-1].abort(f"{kind.__name__}: {value}")

    sys.excepthook = hook
    # Registered after mpi4py was imported, whose MPI_Finalize runs later still (at C level).
    atexit.register(lambda: [s.close() for s in reversed(list(_open_sessions))])


def detect_engine() -> str:
    """The engine :func:`launch` would choose here: "mpi" under an MPI launcher, else "threads"
    (``CAIRN_ENGINE`` and ``--cairn-engine`` override)."""
    return _cairn.detect_engine(list(sys.argv))


def mpi_available() -> bool:
    """True when this build of cairn has the MPI engine."""
    return _cairn.mpi_available()


def wait_all(requests: Iterable[Request]) -> list:
    """Waits for every request; their results (objects of ``irecv``, else None) in order."""
    return [r.wait() for r in requests]


# -- Objects (pickled) -----------------------------------------------------------------------

_OBJECT_OPS = {
    Op.SUM: operator.add,
    Op.PROD: operator.mul,
    Op.MIN: min,
    Op.MAX: max,
    Op.LAND: lambda a, b: a and b,
    Op.LOR: lambda a, b: a or b,
    Op.LXOR: lambda a, b: bool(a) != bool(b),
    Op.BAND: operator.and_,
    Op.BOR: operator.or_,
    Op.BXOR: operator.xor,
}
_NUMBER_OPS = (Op.SUM, Op.PROD, Op.MIN, Op.MAX)
_INT64 = (-(2**63), 2**63 - 1)


def _dumps(obj: Any) -> bytes:
    return pickle.dumps(obj, _PROTOCOL)


def _send(self, obj: Any, dest: int, tag: int = 0) -> None:
    """Sends any picklable object to rank ``dest``."""
    self._send_bytes(_dumps(obj), dest, tag)


def _recv(self, source: int = ANY_SOURCE, tag: int = ANY_TAG, status: Optional[list] = None):
    """Receives an object sent with :meth:`send`; ``status``, a list, gets the Status appended."""
    data, st = self._recv_bytes(source, tag)
    if status is not None:
        status.append(st)
    return pickle.loads(data)


def _isend(self, obj: Any, dest: int, tag: int = 0) -> Request:
    """Starts sending an object (pickled at once); the request completes with the send."""
    return self._isend_bytes(_dumps(obj), dest, tag)


def _irecv(self, source: int = ANY_SOURCE, tag: int = ANY_TAG) -> Request:
    """Starts receiving an object; ``wait()`` returns it."""
    return self._irecv_bytes(source, tag, pickle.loads)


def _bcast(self, obj: Any = None, root: int = 0) -> Any:
    """The root's object on every member (read on the root only)."""
    return pickle.loads(self._bcast_bytes(_dumps(obj) if self.rank == root else None, root))


def _ibcast(self, obj: Any = None, root: int = 0) -> Request:
    """Starts a :meth:`bcast`; ``wait()`` returns the root's object (pickled at the call)."""
    return self._ibcast_bytes(_dumps(obj) if self.rank == root else None, root, pickle.loads)


def _fold_of(self, op: Any, call: str) -> Callable[[Any, Any], Any]:
    """The function of two objects that ``op`` (a cairn.Op or such a function) stands for."""
    fold = _OBJECT_OPS.get(op, op) if isinstance(op, Op) else op
    if not callable(fold):
        raise Error(f"cairn.{call}: rank {self.rank}: op must be a cairn.Op or a function of two "
                    f"objects, not {op!r}")
    return fold


def _prefix(self, obj: Any, op: Any, call: str, exclusive: bool) -> Any:
    fold = _fold_of(self, op, call)
    everyone = self.allgather(obj)
    upto = self.rank if exclusive else self.rank + 1
    return functools.reduce(fold, everyone[:upto]) if upto > 0 else None


def _scan(self, obj: Any, op: Any = Op.SUM) -> Any:
    """``obj`` of members 0 to this one combined with ``op`` (a cairn.Op or an associative
    function of two objects) in rank order. The objects are pickled and gathered, and every
    member folds its prefix (as :meth:`allreduce` does for objects)."""
    return _prefix(self, obj, op, "scan", False)


def _exscan(self, obj: Any, op: Any = Op.SUM) -> Any:
    """As :meth:`scan` without this member's own object: None on member 0, as mpi4py's."""
    return _prefix(self, obj, op, "exscan", True)


def _gather(self, obj: Any, root: int = 0) -> Optional[list]:
    """Every member's object, in rank order, on the root; None elsewhere."""
    parts = self._gather_bytes(_dumps(obj), root)
    return [pickle.loads(p) for p in parts] if self.rank == root else None


def _allgather(self, obj: Any) -> list:
    """Every member's object, in rank order, on every member."""
    return [pickle.loads(p) for p in self._allgather_bytes(_dumps(obj))]


def _scatter(self, objs: Optional[list] = None, root: int = 0) -> Any:
    """Object i of the root's list (of ``size`` objects) on member i."""
    if self.rank == root:
        if objs is None or len(objs) != self.size:
            n = "None" if objs is None else f"{len(objs)} objects"
            raise Error(f"cairn.scatter: rank {self.rank}: the root passes {self.size} objects, "
                        f"not {n}")
        parts = [_dumps(o) for o in objs]
    else:
        parts = []
    return pickle.loads(self._scatter_bytes(parts, root))


def _alltoall(self, objs: list) -> list:
    """Object j of this member's list to member j; the objects sent here, in rank order."""
    if len(objs) != self.size:
        raise Error(f"cairn.alltoall: rank {self.rank}: pass {self.size} objects, not {len(objs)}")
    return [pickle.loads(p) for p in self._alltoall_bytes([_dumps(o) for o in objs])]


def _number_of(x: Any) -> tuple:
    if type(x) is int and _INT64[0] <= x <= _INT64[1]:
        return (0, x, 0.0)
    if type(x) is float:
        return (1, 0, x)
    return (2, 0, 0.0)


def _allreduce(self, obj: Any, op: Any = Op.SUM) -> Any:
    """``obj`` of every member combined with ``op`` (a cairn.Op or a function of two objects,
    associative), in rank order, on every member.

    Ints that fit 64 bits and floats with SUM, PROD, MIN or MAX reduce as one 24-byte value
    through cairn's allreduce; anything else (or an int sum beyond 64 bits) is pickled and
    gathered, and every member folds the objects in rank order.
    """
    numeric = op in _NUMBER_OPS
    kind, i, f = _number_of(obj) if numeric else (2, 0, 0.0)
    kind, i, f = self._allreduce_number(kind, i, f, op if numeric else Op.SUM)
    if kind == 0:
        return i
    if kind == 1:
        return f
    return functools.reduce(_fold_of(self, op, "allreduce"), self.allgather(obj))


def _reduce(self, obj: Any, op: Any = Op.SUM, root: int = 0, *,
            participants: Optional[Iterable[int]] = None,
            receivers: Optional[Iterable[int]] = None, out: Any = None,
            **options: Any) -> Any:
    """``obj`` of every member combined with ``op`` on the root (None elsewhere).

    With ``participants`` and ``receivers`` (world ranks; World only): Aspen's generalized
    reduce of numpy arrays. Every participant passes its array, every receiver gets the
    element-wise reduction (a new array, or ``out``), and each rank in either set calls. A
    receiver that does not participate passes ``obj=None`` and ``out`` (the shape and type of
    the result). Returns the result on receivers, None elsewhere. ``options`` are
    :meth:`World.ireduce`'s.
    """
    if participants is None and receivers is None:
        if options:
            raise Error(f"cairn.reduce: rank {self.rank}: {sorted(options)} are options of the "
                        "generalized reduce (pass participants and receivers)")
        result = self.allreduce(obj, op)
        return result if self.rank == root else None
    if participants is None or receivers is None:
        raise Error(f"cairn.reduce: rank {self.rank}: pass both participants and receivers")
    receivers = list(receivers)
    if self.rank in receivers and out is None:
        if obj is None:
            raise Error(f"cairn.reduce: rank {self.rank}: a receiver that does not participate "
                        "passes out= (an array of the result's shape and type)")
        import numpy
        out = numpy.empty_like(obj)
    _ireduce(self, obj, op, participants=participants, receivers=receivers, out=out,
             **options).wait()
    return out if self.rank in receivers else None


def _ireduce(self, x: Any, op: Any = Op.SUM, *, participants: Iterable[int],
             receivers: Iterable[int], out: Any = None, algorithm: str = "automatic",
             load_balance: bool = False, direct_delivery: bool = True, stream: int = 0,
             balancer: Optional[ReduceBalancer] = None) -> Request:
    """Starts Aspen's generalized reduce of numpy arrays (World only; ranks are world ranks):
    every participant passes ``x``, every receiver ``out`` (where the reduction lands once the
    request completes); every rank in either set calls.

    ``algorithm``: "automatic", "butterfly" (section 3.2's messages), "shared_memory" (one
    node), "shared_memory_staged" (one node, through node memory in pipelined chunks) or
    "hierarchical" (section 3.1: by one leader per node). ``load_balance``: section 3.3's greedy balancing; ``balancer`` (a
    :class:`cairn.ReduceBalancer`) balances against earlier reductions recorded in it (every
    rank passes one with the same history; ``record`` the reductions a rank does not call).
    ``direct_delivery``: skip forwarding hops. ``stream``: reductions of different streams
    match independently, so ranks may start them in any order relative to each other.
    """
    if not isinstance(self, World):
        raise Error(f"cairn.reduce: rank {self.rank}: the generalized reduce runs on the World "
                    "(participants and receivers are world ranks)")
    participants, receivers = list(participants), list(receivers)
    me = self.rank
    if me in receivers and out is None:
        raise Error(f"cairn.ireduce: rank {me}: a receiver passes out= (where the result lands)")
    return self._ireduce_generalized(participants, receivers, x if me in participants else None,
                                     out if me in receivers else None, op, algorithm,
                                     load_balance, direct_delivery, stream, balancer)


def _channel(self, n: int, handler: Callable[[Any, Any], Any], *, values: Any = None,
             combine: Any = None, route: str = "direct", batch: int = 1 << 16,
             buffer_items: int = 0) -> Channel:
    """A channel of items (key, value) to the owners of keys in [0, n), block-distributed over
    the ranks of this world or group (rank r owns keys [r b, (r + 1) b), b = ceil(n / size);
    on a group, r is the group rank). Every rank (a group's members) makes its channels in the
    same order.

    ``ch.send_many(keys, values)`` sends from numpy arrays (integer keys; ``values`` of the
    channel's type, one per key, or none for a channel without values); items travel
    aggregated in buffers (``buffer_items`` per buffer, 0: cairn's default), on the ``route``
    "direct" or "grid". Where they arrive, ``handler(local, values)`` gets numpy arrays: the
    items' indices in this rank's part (``0 .. ch.local_size - 1``) and their values (None
    without values), ``batch`` items at most at a time. ``ch.quiesce()``, on every rank of the
    channel, returns once every item sent (also by handlers) has been handed to its handler.

    ``values``: None, numpy.int64 or numpy.float64. ``combine``: None; cairn.SUM, MIN or MAX to
    merge the items of one key that meet in a buffer, at the source and on every hop; or
    "dedup" (items without values) to drop repeated keys within a phase.
    """
    import numpy

    call = f"cairn.{type(self).__name__}.channel"
    rank = self._world_rank_here  # errors name it
    kinds = {None: _cairn._ItemValue.none}
    value = None if values is None else numpy.dtype(values)
    if value is not None:
        kinds[value] = {numpy.dtype(numpy.int64): _cairn._ItemValue.int64,
                        numpy.dtype(numpy.float64): _cairn._ItemValue.float64}.get(value)
    if kinds.get(value) is None:
        raise Error(f"{call}: rank {rank}: values must be None, numpy.int64 or numpy.float64, "
                    f"not {values!r}")
    if combine is None:
        combining, op = _cairn._Combining.none, Op.SUM
    elif combine == "dedup":
        combining, op = _cairn._Combining.dedup, Op.SUM
    elif isinstance(combine, Op):
        combining, op = _cairn._Combining.merge, combine
    else:
        raise Error(f"{call}: rank {rank}: combine must be None, 'dedup', cairn.SUM, MIN or "
                    f"MAX, not {combine!r}")
    routes = {"direct": _cairn._Route.direct, "grid": _cairn._Route.grid}
    if route not in routes:
        raise Error(f"{call}: rank {rank}: route must be 'direct' or 'grid', not {route!r}")
    return self._channel(n, handler, kinds[value], combining, op, routes[route], batch,
                         buffer_items)


class DArray(Distributed):
    """One rank's part of a distributed array (cairn's darray): a global shape spread over the
    ranks of a group by a distribution per dimension, on a process grid.

    ``local`` is this rank's part as a writable numpy array (C order, ``local_shape``; empty on
    ranks outside the group), a view of cairn's memory: no copy. ``global_indices(d)`` gives
    the global index of each local position along dimension ``d``. Move data between two
    arrays of the same shape and type, any layouts and groups, with :func:`redistribute`.
    """

    @property
    def local_shape(self) -> tuple:
        """This rank's local extents."""
        return tuple(self._a.local_shape)

    @property
    def local(self):
        """This rank's part: a numpy view of cairn's memory (writable, C order)."""
        return self._a.local_bytes().view(self.dtype).reshape(self.local_shape)

    def __repr__(self) -> str:
        return f"DArray({self.dtype}, {self._a.describe()})"


def _dim_specs(dist, rank):
    specs = []
    for d in dist:
        if isinstance(d, tuple) and len(d) == 2 and d[0] == "block_cyclic":
            specs.append(("block_cyclic", int(d[1])))
        elif d in ("block", "cyclic", "replicated"):
            specs.append((d, 0))
        elif d == "*":
            specs.append(("replicated", 0))
        else:
            raise Error(f"cairn.darray: rank {rank}: distribution {d!r}: 'block', 'cyclic', "
                        "'replicated' ('*') or ('block_cyclic', k)")
    return specs


def _darray(self, shape, dtype: Any = "float64", dist: Optional[Sequence] = None,
            grid: Optional[Sequence[int]] = None) -> DArray:
    """A distributed array of ``shape`` (1 to 4 dimensions) over this world's or group's ranks,
    elements of numpy type ``dtype`` (1, 2, 4, 8 or 16 bytes), zero-initialized. ``dist``: one
    distribution per dimension, 'block' (default), 'cyclic', 'replicated' or
    ``('block_cyclic', k)``; ``grid``: the process grid (default: balanced). Every rank may
    make it (ranks outside a group hold an empty part); no communication.
    """
    import numpy

    dtype = numpy.dtype(dtype)
    rank, group = rank_and_group(self)
    shape = [int(n) for n in shape]
    specs = _dim_specs(dist if dist is not None else ["block"] * len(shape), rank)
    grid = [int(g) for g in grid] if grid is not None else []
    return DArray(_cairn._darray(group, shape, specs, grid, dtype.itemsize, dtype.kind, rank),
                  dtype, rank)


def iredistribute(src: DArray, dst: DArray) -> Request:
    """Starts moving ``src`` into ``dst`` (same global shape and type; any layouts; the same
    group or two groups, disjoint or overlapping). Every rank of either group calls it, in the
    same order as other redistributions between those groups; the plan is cached. ``src``
    must stay untouched and ``dst`` unread until the request completes."""
    if src.dtype != dst.dtype:
        raise Error(f"cairn.redistribute: rank {src._rank}: the arrays hold {src.dtype} and "
                    f"{dst.dtype}")
    return _cairn._iredistribute(src._a, dst._a, src._rank)


def redistribute(src: DArray, dst: DArray) -> None:
    """Moves ``src`` into ``dst`` (see :func:`iredistribute`) and waits."""
    iredistribute(src, dst).wait()


def _tasks_isend(self, a: DArray, to: int, tag: int = 0) -> Request:
    """Starts sending ``a`` (laid out over this rank's task) to task ``to``, which receives it
    with the same tag into an array of the same shape and type (any layout)."""
    return self._isend(a._a, to, tag)


def _tasks_irecv(self, b: DArray, source: int, tag: int = 0) -> Request:
    """Starts receiving into ``b`` (laid out over this rank's task) from task ``source``."""
    return self._irecv(b._a, source, tag)


Tasks.isend = _tasks_isend
Tasks.irecv = _tasks_irecv
Tasks.send = lambda self, a, to, tag=0: self.isend(a, to, tag).wait()
Tasks.send.__doc__ = "Blocking isend."
Tasks.recv = lambda self, b, source, tag=0: self.irecv(b, source, tag).wait()
Tasks.recv.__doc__ = "Blocking irecv."


def _barrier(self) -> None:
    """Waits until every member has called it."""
    self.Barrier()


def _to_mpi4py(self):
    """An mpi4py communicator over the same ranks (rank = this one's rank), for MPI calls of
    the program's own beside cairn's (MPI engine only; collective over the members for a
    Group, MPI.COMM_NULL on a rank that is not a member). cairn frees it when the run ends."""
    from mpi4py import MPI

    return MPI.Comm.f2py(self._mpi_comm_f())


for _cls in (World, Group):
    _cls.bcast = _bcast
    _cls.ibcast = _ibcast
    _cls.scan = _scan
    _cls.exscan = _exscan
    _cls.gather = _gather
    _cls.allgather = _allgather
    _cls.scatter = _scatter
    _cls.alltoall = _alltoall
    _cls.allreduce = _allreduce
    _cls.reduce = _reduce
    _cls.barrier = _barrier
    _cls.to_mpi4py = _to_mpi4py
    _cls.darray = _darray
World.send = _send
World.recv = _recv
World.isend = _isend
World.irecv = _irecv
World.channel = _channel
Group.channel = _channel
World.ireduce = _ireduce
del _cls

from ._containers import (  # noqa: E402 (adds World.map, ...)
    Array,
    Bag,
    CountingSet,
    DisjointSet,
    Map,
    Set,
)
from ._fft import FFTPlan, fft_arrays  # noqa: E402
from ._halo import GhostedArray, HaloExchange  # noqa: E402
