"""cairn from Python against mpi4py, in the same run: latency 8 B and bandwidth 1 MiB (ping-pong
on numpy arrays), allreduce of 8 B and 64 KiB float64 arrays.

    python python/bench/bench.py [--json] [--quick]

runs the MPI rows in a child ``scripts/mpiexec -np 2`` (``MPIEXEC`` overrides) (cairn's MPI engine and mpi4py in the same
processes, rounds alternating), then the threads engine's rows in this process (2 ranks),
each against the child's mpi4py figure. Times are medians over samples of one-way or per-call
microseconds; a ratio below 1 means cairn is faster. Needs mpi4py.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

CASES = [  # (name, bytes)
    ("pingpong", 8),
    ("pingpong", 1 << 20),
    ("allreduce", 8),
    ("allreduce", 64 << 10),
]


def iterations(name, nbytes, quick):
    n = 2000 if nbytes <= 4096 else (200 if nbytes >= (1 << 20) else 1000)
    return max(20, n // 10) if quick else n


def time_cairn(w, name, nbytes, iters):
    """Microseconds per one-way message (pingpong) or per call (allreduce)."""
    import cairn

    a = np.zeros(nbytes // 8)
    b = np.zeros(nbytes // 8)
    peer = 1 - w.rank
    w.Barrier()
    t0 = time.perf_counter()
    if name == "pingpong":
        for _ in range(iters):
            if w.rank == 0:
                w.Send(a, peer)
                w.Recv(b, peer)
            else:
                w.Recv(b, peer)
                w.Send(a, peer)
        return (time.perf_counter() - t0) / (2 * iters) * 1e6
    for _ in range(iters):
        w.Allreduce(a, b, op=cairn.SUM)
    return (time.perf_counter() - t0) / iters * 1e6


def time_mpi4py(comm, name, nbytes, iters):
    from mpi4py import MPI

    a = np.zeros(nbytes // 8)
    b = np.zeros(nbytes // 8)
    peer = 1 - comm.Get_rank()
    comm.Barrier()
    t0 = time.perf_counter()
    if name == "pingpong":
        for _ in range(iters):
            if comm.Get_rank() == 0:
                comm.Send(a, peer)
                comm.Recv(b, peer)
            else:
                comm.Recv(b, peer)
                comm.Send(a, peer)
        return (time.perf_counter() - t0) / (2 * iters) * 1e6
    for _ in range(iters):
        comm.Allreduce(a, b, op=MPI.SUM)
    return (time.perf_counter() - t0) / iters * 1e6


def mpi_part(quick, samples):
    """Under mpiexec -n 2: cairn's MPI engine and mpi4py alternate; rank 0 prints JSON."""
    from mpi4py import MPI

    import cairn

    comm = MPI.COMM_WORLD
    rows = []
    for name, nbytes in CASES:
        iters = iterations(name, nbytes, quick)
        c, m = [], []

        def body(w):
            c.append(time_cairn(w, name, nbytes, iters))

        time_cairn_warm = iters // 10 + 1
        cairn.launch(lambda w: time_cairn(w, name, nbytes, time_cairn_warm))
        time_mpi4py(comm, name, nbytes, time_cairn_warm)
        for _ in range(samples):
            cairn.launch(body)
            m.append(time_mpi4py(comm, name, nbytes, iters))
        rows.append({"name": name, "bytes": nbytes, "cairn_mpi_us": statistics.median(c),
                     "mpi4py_us": statistics.median(m)})
    if comm.Get_rank() == 0:
        print(json.dumps({"rows": rows, "mpi_thread_level": MPI.Query_thread(),
                          "mpi": MPI.Get_library_version().splitlines()[0]}))


def threads_part(quick, samples):
    import cairn

    rows = []
    for name, nbytes in CASES:
        iters = iterations(name, nbytes, quick)
        c = []

        def body(w):
            t = time_cairn(w, name, nbytes, iters)
            if w.rank == 0:
                c.append(t)

        cairn.launch(lambda w: time_cairn(w, name, nbytes, iters // 10 + 1), ranks=2,
                     engine="threads")
        for _ in range(samples):
            cairn.launch(body, ranks=2, engine="threads")
        rows.append(statistics.median(c))
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", action="store_true", help="one JSON object per row")
    p.add_argument("--quick", action="store_true", help="fewer iterations and samples")
    p.add_argument("--mpi-part", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    samples = 3 if args.quick else 7
    if args.mpi_part:
        mpi_part(args.quick, samples)
        return
    # scripts/mpiexec: the flags this machine needs, ranks bound to cores (as cairn-bench runs).
    here = os.path.dirname(os.path.abspath(__file__))
    wrapper = os.path.join(here, "..", "..", "scripts", "mpiexec")
    cmd = [os.environ.get("MPIEXEC", wrapper), "-np", "2"]
    cmd += [sys.executable, os.path.abspath(__file__), "--mpi-part"] + (["--quick"] if args.quick else [])
    env = dict(os.environ, CAIRN_ENGINE="mpi")
    child = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if child.returncode != 0:
        sys.exit(f"bench.py: the MPI part failed ({child.returncode}):\n{child.stderr}")
    mpi = json.loads(child.stdout.strip().splitlines()[-1])
    threads = threads_part(args.quick, samples)
    out = []
    for row, t in zip(mpi["rows"], threads):
        what = f"{row['name']} {row['bytes']} B"
        out.append({"benchmark": what, "engine": "mpi", "cairn_us": row["cairn_mpi_us"],
                    "baseline": "mpi4py", "baseline_us": row["mpi4py_us"],
                    "ratio": row["cairn_mpi_us"] / row["mpi4py_us"]})
        out.append({"benchmark": what, "engine": "threads", "cairn_us": t, "baseline": "mpi4py",
                    "baseline_us": row["mpi4py_us"], "ratio": t / row["mpi4py_us"]})
    if args.json:
        for r in out:
            print(json.dumps(dict(r, mpi=mpi["mpi"], mpi_thread_level=mpi["mpi_thread_level"])))
        return
    print(f"# {mpi['mpi']}; mpi4py's thread level {mpi['mpi_thread_level']} (3 = multiple)")
    print(f"{'benchmark':<24}{'engine':<9}{'cairn us':>11}{'mpi4py us':>11}{'ratio':>8}")
    for r in out:
        print(f"{r['benchmark']:<24}{r['engine']:<9}{r['cairn_us']:>11.3f}{r['baseline_us']:>11.3f}"
              f"{r['ratio']:>8.2f}")


if __name__ == "__main__":
    main()
