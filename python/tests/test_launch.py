"""launch: the engines, what a rank's failure does, and mpi4py beside cairn."""

import sys
import threading

import cairn
import numpy as np
import pytest

from conftest import ENGINE, threads_only


def test_world_describes_the_run(run, ranks):
    seen = []

    def main(w):
        assert w.engine == ENGINE
        assert 0 <= w.rank < w.size and 0 <= w.node < w.node_count
        assert w.size == (ranks if ENGINE == "threads" else w.size)
        seen.append(w.rank)

    run(main)
    if ENGINE == "threads":
        assert sorted(seen) == list(range(ranks))


@threads_only
def test_ranks_run_concurrently_and_release_the_gil():
    # Rank 0 waits in a receive (GIL released) for a message rank 1 sends only after a
    # plain Python thread of its own has run: a receive that kept the GIL would hang here.
    def main(w):
        if w.rank == 0:
            assert w.recv(1) == "after the thread"
        else:
            t = threading.Thread(target=lambda: None)
            t.start()
            t.join()
            w.send("after the thread", 0)

    cairn.launch(main, ranks=2, watchdog_s=30)


@threads_only
@pytest.mark.parametrize("n", [1, 4])
def test_a_raising_rank_raises_in_launch(n):
    class Boom(Exception):
        pass

    def main(w):
        if w.rank == n - 1:
            raise Boom(f"boom on rank {w.rank}")
        w.Barrier()  # the others wait here until released

    with pytest.raises(Boom, match=f"boom on rank {n - 1}"):
        cairn.launch(main, ranks=n)


@threads_only
def test_a_cairn_error_escaping_a_rank_is_raised_with_its_message():
    def main(w):
        w.Bcast(np.zeros(1), root=w.size + 3)

    with pytest.raises(cairn.Error, match=r"rank \d: .*root"):
        cairn.launch(main, ranks=3)


@threads_only
def test_bad_settings_are_refused():
    with pytest.raises(cairn.Error, match="engine must be 'threads' or 'mpi', not 'gpu'"):
        cairn.launch(lambda w: None, engine="gpu")
    with pytest.raises(cairn.Error, match="exit code 2"):
        cairn.launch(lambda w: None, ranks=0)


@threads_only
def test_a_world_kept_after_its_run_refuses_calls():
    kept = []
    cairn.launch(lambda w: kept.append(w), ranks=2)
    with pytest.raises(cairn.Error, match="run"):
        kept[0].Barrier()


mpi4py = pytest.importorskip("mpi4py.MPI") if ENGINE == "mpi" else None


@pytest.mark.skipif(ENGINE != "mpi", reason="mpi4py communicators need the MPI engine")
def test_mpi4py_beside_cairn():
    from mpi4py import MPI

    def main(w):
        comm = w.to_mpi4py()
        assert comm.Get_rank() == w.rank and comm.Get_size() == w.size
        assert comm.allreduce(w.rank) == w.allreduce(w.rank)
        g = w.group(list(range(0, w.size, 2)))
        gc = g.to_mpi4py()
        if g.rank >= 0:
            assert gc.Get_rank() == g.rank and gc.Get_size() == g.size
        else:
            assert gc == MPI.COMM_NULL

    cairn.launch(main)

    # A run on each half of an mpi4py split: world rank = rank in the half.
    world = MPI.COMM_WORLD
    half = world.Split(world.Get_rank() % 2, world.Get_rank())

    def in_half(w):
        assert w.size == half.Get_size() and w.rank == half.Get_rank()
        assert w.allgather(world.Get_rank()) == list(range(world.Get_rank() % 2, world.Get_size(), 2))

    cairn.launch(in_half, comm=half)
    half.Free()


@pytest.mark.skipif(ENGINE != "mpi", reason="sessions run on the MPI engine")
def test_a_session_beside_mpi4py_without_launch():
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    me, n = comm.Get_rank(), comm.Get_size()
    rng = np.random.default_rng(0x5E55 + me)
    with cairn.MPISession(comm) as s:
        assert s.is_open
        w = s.world
        assert w.engine == "mpi" and w.rank == me and w.size == n and w.args == sys.argv
        for count in (1, 1000, 70000):
            x = rng.integers(-1000, 1000, count)
            mine = np.empty_like(x)
            w.Allreduce(x, mine, op=cairn.SUM)
            theirs = np.empty_like(x)
            comm.Allreduce(x, theirs, op=MPI.SUM)  # the program's own MPI call between cairn's
            assert np.array_equal(mine, theirs)
            g = w.group(list(range(1, n, 2)))
            if g.rank >= 0:
                assert g.allreduce(int(x[0])) == g.to_mpi4py().allreduce(int(x[0]))
            # A ring of objects.
            r = w.irecv((me + n - 1) % n, tag=5)
            w.send((me, count), (me + 1) % n, tag=5)
            assert r.wait() == ((me + n - 1) % n, count)
    assert not s.is_open
    s.close()  # closing again does nothing
    with pytest.raises(cairn.Error, match="use after the run ended"):
        w.allreduce(1)

    # A session on each half of a split, at once.
    half = comm.Split(me % 2, me)
    with cairn.MPISession(half) as s:
        assert s.world.size == half.Get_size() and s.world.rank == half.Get_rank()
        assert s.world.allgather(me) == list(range(me % 2, n, 2))
    half.Free()

    # A container made while the session is open ends when it closes.
    with cairn.MPISession(comm) as s:
        cs = s.world.counting_set(int)
        cs.insert([me + 1, 0])
        s.world.quiesce()
        assert cs.count(0) == n
    with pytest.raises(cairn.Error, match="the container is closed"):
        cs.size()

    # cairn's flags from argv, up to "--"; the rest are the world's args.
    with cairn.MPISession(comm, argv=["prog", f"--cairn-nodes={n}", "x", "--", "--cairn-ranks=3"]) as s:
        assert s.world.node_count == n
        assert s.world.args == ["prog", "x", "--", "--cairn-ranks=3"]
        assert s.world.allreduce(me) == n * (n - 1) // 2


@pytest.mark.skipif(ENGINE != "mpi", reason="sessions run on the MPI engine")
def test_a_session_refuses_bad_settings_before_communicating():
    from mpi4py import MPI

    with pytest.raises(cairn.Error, match="cairn::mpi_session: the session was given MPI_COMM_NULL"):
        cairn.MPISession(MPI.COMM_NULL)
    with pytest.raises(cairn.Error, match="cairn.MPISession: progress must be"):
        cairn.MPISession(MPI.COMM_WORLD, progress="bogus")
    with pytest.raises(cairn.Error, match=r"cairn::mpi_session: launch_options::nodes = 0"):
        cairn.MPISession(MPI.COMM_WORLD, nodes=0)
    with pytest.raises(cairn.Error, match=r"cairn::mpi_session: unknown flag --cairn-bogus=1"):
        cairn.MPISession(MPI.COMM_WORLD, argv=["prog", "--cairn-bogus=1"])
