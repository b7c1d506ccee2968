"""world_from_mpi4py: a session that the program never closes is closed when Python exits,
before mpi4py finalizes MPI (then its world refuses calls: "closed at exit"); with an
argument, the last rank raises while the others wait for it, which ends the job non-zero with
its traceback (python/tests/CMakeLists.txt checks both)."""

import atexit
import sys

from mpi4py import MPI

import cairn


def after_cairn_closed_it():  # registered first, so it runs after cairn's own exit hook
    try:
        w.allreduce(1)
    except cairn.Error as e:
        if w_rank == 0 and "use after the run ended" in str(e):
            print("closed at exit", flush=True)


atexit.register(after_cairn_closed_it)
w = cairn.world_from_mpi4py(MPI.COMM_WORLD)
w_rank = w.rank
assert w.allreduce(w.rank) == w.size * (w.size - 1) // 2
if len(sys.argv) > 1 and w.rank == w.size - 1:
    raise ValueError(f"rank {w.rank} gives up")
if len(sys.argv) > 1:
    w.recv(w.size - 1)  # never sent: the job ends instead
