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

import functools
import operator
import pickle
import sys
from typing import Any, Callable, Iterable, Optional

from . import _cairn
from ._cairn import (
    ANY_SOURCE,
    ANY_TAG,
    IN_PLACE,
    Error,
    Group,
    Op,
    Request,
    RunAborted,
    Status,
    World,
)

__all__ = [
    "ANY_SOURCE", "ANY_TAG", "IN_PLACE", "Error", "Group", "Op", "Request", "RunAborted",
    "Status", "World", "SUM", "PROD", "MIN", "MAX", "LAND", "LOR", "LXOR", "BAND", "BOR", "BXOR",
    "launch", "detect_engine", "mpi_available", "wait_all",
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
    fold = _OBJECT_OPS.get(op, op) if isinstance(op, Op) else op
    if not callable(fold):
        raise Error(f"cairn.allreduce: rank {self.rank}: op must be a cairn.Op or a function of "
                    f"two objects, not {op!r}")
    return functools.reduce(fold, self.allgather(obj))


def _reduce(self, obj: Any, op: Any = Op.SUM, root: int = 0, *,
            participants: Optional[Iterable[int]] = None,
            receivers: Optional[Iterable[int]] = None, out: Any = None) -> Any:
    """``obj`` of every member combined with ``op`` on the root (None elsewhere).

    With ``participants`` and ``receivers`` (world ranks; World only): Aspen's generalized
    reduce of numpy arrays. Every participant passes its array, every receiver gets the
    element-wise reduction (a new array, or ``out``), and each rank in either set calls. A
    receiver that does not participate passes ``obj=None`` and ``out`` (the shape and type of
    the result). Returns the result on receivers, None elsewhere.
    """
    if participants is None and receivers is None:
        result = self.allreduce(obj, op)
        return result if self.rank == root else None
    if participants is None or receivers is None:
        raise Error(f"cairn.reduce: rank {self.rank}: pass both participants and receivers")
    if not isinstance(self, World):
        raise Error(f"cairn.reduce: rank {self.rank}: the generalized reduce runs on the World "
                    "(participants and receivers are world ranks)")
    participants, receivers = list(participants), list(receivers)
    me = self.rank
    if me in receivers and out is None:
        if obj is None:
            raise Error(f"cairn.reduce: rank {me}: a receiver that does not participate passes "
                        "out= (an array of the result's shape and type)")
        import numpy
        out = numpy.empty_like(obj)
    self._reduce_generalized(participants, receivers, obj if me in participants else None,
                             out if me in receivers else None, op)
    return out if me in receivers else None


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
    _cls.gather = _gather
    _cls.allgather = _allgather
    _cls.scatter = _scatter
    _cls.alltoall = _alltoall
    _cls.allreduce = _allreduce
    _cls.reduce = _reduce
    _cls.barrier = _barrier
    _cls.to_mpi4py = _to_mpi4py
World.send = _send
World.recv = _recv
World.isend = _isend
World.irecv = _irecv
del _cls
