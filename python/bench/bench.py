"""cairn from Python against mpi4py, in the same run: latency 8 B and bandwidth 1 MiB (ping-pong
on numpy arrays), allreduce of 8 B and 64 KiB float64 arrays, allgather of 8 B and 64 KiB
blocks per rank; the histogram from numpy batches against the C++ benchmark (`cairn-bench
histogram`, same updates and table); and a word count in a cairn.CountingSet against mpi4py
with numpy.

    python python/bench/bench.py [--json] [--quick]

runs the MPI rows in a child ``scripts/mpiexec -np 2`` (``MPIEXEC`` overrides) (cairn's MPI engine and mpi4py in the same
processes, rounds alternating), then the threads engine's rows in this process (2 ranks),
each against the child's mpi4py figure. Times are medians over samples of one-way or per-call
microseconds; a ratio below 1 means cairn is faster. Needs mpi4py.

The histogram rows: every rank sends 10^6 uniform keys (``--updates``) over a table of 2^20
counters per rank (``--counters``) in batches of 10^6 keys (``send_many``) on a channel without
values (route direct), and the handler counts each arriving batch with numpy.add.at; the figure
is updates/s over all ranks (the slowest rank's time), against ``cairn-bench histogram`` with
the same parameters on the same engine (``--cpp-bench``, default build/bench/cairn-bench); the
ratio is Python / C++ (higher is better; the goal is 0.5).

The counting_set rows: every rank counts 10^6 keys (``--count-keys``) drawn Zipf(1.3) over 10^6
values, as a word count does: ``cs.insert(keys)`` on a ``cairn.CountingSet`` then
``w.quiesce()``, against the same count by hand with mpi4py and numpy (keys to their owners,
key mod 2, by ``Alltoallv``, then ``numpy.unique`` with counts there); milliseconds of the
slowest rank, both checked to count every key.
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
    ("allgather", 8),
    ("allgather", 64 << 10),
]


def iterations(name, nbytes, quick):
    n = 2000 if nbytes <= 4096 else (200 if nbytes >= (1 << 20) else 1000)
    return max(20, n // 10) if quick else n


def time_calls(rank, barrier, send, recv, collectives, name, nbytes, iters):
    """Microseconds per one-way message (pingpong) or per call (the collectives by name), on 2
    ranks; `nbytes` is the allgather's block per rank."""
    a = np.zeros(nbytes // 8)
    b = np.zeros(nbytes // 8 * (2 if name == "allgather" else 1))
    peer = 1 - rank
    barrier()
    t0 = time.perf_counter()
    if name == "pingpong":
        for _ in range(iters):
            if rank == 0:
                send(a, peer)
                recv(b, peer)
            else:
                recv(b, peer)
                send(a, peer)
        return (time.perf_counter() - t0) / (2 * iters) * 1e6
    call = collectives[name]
    for _ in range(iters):
        call(a, b)
    return (time.perf_counter() - t0) / iters * 1e6


def time_cairn(w, name, nbytes, iters):
    import cairn

    collectives = {"allreduce": lambda a, b: w.Allreduce(a, b, op=cairn.SUM),
                   "allgather": w.Allgather}
    return time_calls(w.rank, w.Barrier, w.Send, w.Recv, collectives, name, nbytes, iters)


def time_mpi4py(comm, name, nbytes, iters):
    from mpi4py import MPI

    collectives = {"allreduce": lambda a, b: comm.Allreduce(a, b, op=MPI.SUM),
                   "allgather": comm.Allgather}
    return time_calls(comm.Get_rank(), comm.Barrier, comm.Send, comm.Recv, collectives, name,
                      nbytes, iters)


def histogram_cairn(w, updates, counters):
    """Updates per second over all ranks of the histogram from numpy batches."""
    import cairn

    n = counters * w.size
    table = None

    def count(local, values):
        np.add.at(table, local, 1)

    ch = w.channel(n, count)
    table = np.zeros(ch.local_size, np.int64)
    keys = np.random.default_rng(w.rank + 1).integers(0, n, updates)
    w.Barrier()
    t0 = time.perf_counter()
    for i in range(0, updates, 1_000_000):
        ch.send_many(keys[i:i + 1_000_000])
    ch.quiesce()
    seconds = w.allreduce(time.perf_counter() - t0, op=cairn.MAX)
    total = w.allreduce(int(table.sum()))
    if total != updates * w.size:
        raise RuntimeError(f"histogram: counters sum to {total}, not {updates * w.size}")
    ch.close()
    return updates * w.size / seconds


def counting_keys(rank, n):
    """This rank's keys of the counting_set rows: Zipf(1.3) over 10^6 values."""
    return (np.random.default_rng(77 + rank).zipf(1.3, n) % 1_000_000).astype(np.int64)


def counting_set_cairn(w, n):
    """Milliseconds (the slowest rank) to count n keys per rank in a cairn.CountingSet."""
    import cairn

    keys = counting_keys(w.rank, n)
    with w.counting_set(int) as cs:
        w.Barrier()
        t0 = time.perf_counter()
        cs.insert(keys)
        w.quiesce()
        ms = w.allreduce((time.perf_counter() - t0) * 1e3, op=cairn.MAX)
        if w.allreduce(sum(cs.local().values())) != n * w.size:
            raise RuntimeError("counting_set: the counts do not add up to every key")
    return ms


def counting_set_mpi4py(comm, n):
    """The same count by hand: keys to their owners (key mod size) by Alltoallv, numpy.unique
    with counts there."""
    from mpi4py import MPI

    p = comm.Get_size()
    keys = counting_keys(comm.Get_rank(), n)
    comm.Barrier()
    t0 = time.perf_counter()
    owner = keys % p
    send = keys[np.argsort(owner, kind="stable")]
    send_counts = np.bincount(owner, minlength=p).astype(np.int64)
    recv_counts = np.empty(p, np.int64)
    comm.Alltoall(send_counts, recv_counts)
    recv = np.empty(int(recv_counts.sum()), np.int64)
    comm.Alltoallv([send, send_counts, MPI.INT64_T], [recv, recv_counts, MPI.INT64_T])
    _, counts = np.unique(recv, return_counts=True)
    ms = comm.allreduce((time.perf_counter() - t0) * 1e3, op=MPI.MAX)
    if comm.allreduce(int(counts.sum())) != n * p:
        raise RuntimeError("counting_set baseline: the counts do not add up to every key")
    return ms


def histogram_median(samples, updates, counters, **launch):
    """The median rate over samples (rank 0's figure; every rank computes the same)."""
    import cairn

    rates = []

    def body(w):
        rate = histogram_cairn(w, updates, counters)
        if w.rank == 0:
            rates.append(rate)

    for _ in range(samples):
        cairn.launch(body, **launch)
    return statistics.median(rates) if rates else None


def cpp_histogram(binary, engine, updates, counters, samples):
    """updates/s of `cairn-bench histogram` with the same parameters, 2 ranks."""
    args = [binary, "histogram", "--json", f"--updates={updates}", f"--counters={counters}",
            "--route=direct", f"--samples={samples}"]
    env = dict(os.environ, CAIRN_ENGINE=engine, CAIRN_RANKS="2")
    if engine == "mpi":
        args = [mpiexec_command()[0], "-np", "2"] + args
    out = subprocess.run(args, capture_output=True, text=True, env=env)
    if out.returncode != 0:
        sys.exit(f"bench.py: cairn-bench histogram failed ({out.returncode}):\n{out.stderr}")
    rows = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    return rows[-1]["cairn"]


def mpiexec_command():
    """scripts/mpiexec: the flags this machine needs, ranks bound to cores (as cairn-bench
    runs); MPIEXEC overrides."""
    here = os.path.dirname(os.path.abspath(__file__))
    return [os.environ.get("MPIEXEC", os.path.join(here, "..", "..", "scripts", "mpiexec"))]


def mpi_part(quick, samples, histogram, count_keys):
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

        warm = iters // 10 + 1
        cairn.launch(lambda w: time_cairn(w, name, nbytes, warm))
        time_mpi4py(comm, name, nbytes, warm)
        for _ in range(samples):
            cairn.launch(body)
            m.append(time_mpi4py(comm, name, nbytes, iters))
        rows.append({"name": name, "bytes": nbytes, "cairn_mpi_us": statistics.median(c),
                     "mpi4py_us": statistics.median(m)})
    hist = histogram_median(samples, *histogram) if histogram else None
    c, m = [], []
    for _ in range(samples):
        cairn.launch(lambda w: c.append(counting_set_cairn(w, count_keys)))
        m.append(counting_set_mpi4py(comm, count_keys))
    counting = {"cairn_mpi_ms": statistics.median(c), "mpi4py_ms": statistics.median(m)}
    if comm.Get_rank() == 0:
        print(json.dumps({"rows": rows, "histogram": hist, "counting_set": counting,
                          "mpi_thread_level": MPI.Query_thread(),
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
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", action="store_true", help="one JSON object per row")
    p.add_argument("--quick", action="store_true", help="fewer iterations and samples")
    p.add_argument("--updates", type=int, default=1_000_000, help="histogram keys per rank")
    p.add_argument("--counters", type=int, default=1 << 20, help="histogram counters per rank")
    p.add_argument("--count-keys", type=int, default=1_000_000,
                   help="counting_set keys per rank")
    p.add_argument("--cpp-bench", default=os.path.join(here, "..", "..", "build", "bench",
                                                         "cairn-bench"),
                   help="the C++ benchmark the histogram rows compare with ('' skips them)")
    p.add_argument("--mpi-part", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    samples = 3 if args.quick else 7
    histogram = (args.updates, args.counters) if args.cpp_bench else None
    if args.mpi_part:
        mpi_part(args.quick, samples, histogram, args.count_keys)
        return
    if histogram and not os.path.exists(args.cpp_bench):
        sys.exit(f"bench.py: no {args.cpp_bench} (build it, or pass --cpp-bench='')")
    cmd = mpiexec_command() + ["-np", "2", sys.executable, os.path.abspath(__file__), "--mpi-part",
                               f"--updates={args.updates}", f"--counters={args.counters}",
                               f"--count-keys={args.count_keys}", f"--cpp-bench={args.cpp_bench}"]
    cmd += ["--quick"] if args.quick else []
    child = subprocess.run(cmd, capture_output=True, text=True,
                           env=dict(os.environ, CAIRN_ENGINE="mpi"))
    if child.returncode != 0:
        sys.exit(f"bench.py: the MPI part failed ({child.returncode}):\n{child.stderr}")
    mpi = json.loads(child.stdout.strip().splitlines()[-1])
    threads = threads_part(args.quick, samples)
    out = []
    for row, t in zip(mpi["rows"], threads):
        what = f"{row['name']} {row['bytes']} B"
        out.append({"benchmark": what, "engine": "mpi", "metric": "us", "cairn": row["cairn_mpi_us"],
                    "baseline": "mpi4py", "baseline_value": row["mpi4py_us"],
                    "ratio": row["cairn_mpi_us"] / row["mpi4py_us"]})
        out.append({"benchmark": what, "engine": "threads", "metric": "us", "cairn": t,
                    "baseline": "mpi4py", "baseline_value": row["mpi4py_us"],
                    "ratio": t / row["mpi4py_us"]})
    if histogram:
        py_threads = histogram_median(samples, *histogram, ranks=2, engine="threads")
        for engine, py in (("mpi", mpi["histogram"]), ("threads", py_threads)):
            cpp = cpp_histogram(args.cpp_bench, engine, *histogram, samples)
            out.append({"benchmark": "histogram", "engine": engine, "metric": "updates/s",
                        "cairn": py, "baseline": "cairn-bench (C++)", "baseline_value": cpp,
                        "ratio": py / cpp, "updates": histogram[0], "counters": histogram[1]})
    counted = []

    def count_threads(w):
        ms = counting_set_cairn(w, args.count_keys)
        if w.rank == 0:
            counted.append(ms)

    import cairn

    for _ in range(samples):
        cairn.launch(count_threads, ranks=2, engine="threads")
    base = mpi["counting_set"]["mpi4py_ms"]
    for engine, ms in (("mpi", mpi["counting_set"]["cairn_mpi_ms"]),
                       ("threads", statistics.median(counted))):
        out.append({"benchmark": "counting_set", "engine": engine, "metric": "ms", "cairn": ms,
                    "baseline": "mpi4py Alltoallv + numpy.unique", "baseline_value": base,
                    "ratio": ms / base, "keys": args.count_keys})
    if args.json:
        for r in out:
            print(json.dumps(dict(r, mpi=mpi["mpi"], mpi_thread_level=mpi["mpi_thread_level"])))
        return
    print(f"# {mpi['mpi']}; mpi4py's thread level {mpi['mpi_thread_level']} (3 = multiple)")
    print(f"{'benchmark':<20}{'engine':<9}{'metric':<10}{'cairn':>12}{'baseline':>12}{'ratio':>7}"
          "  baseline")
    for r in out:
        print(f"{r['benchmark']:<20}{r['engine']:<9}{r['metric']:<10}{r['cairn']:>12.4g}"
              f"{r['baseline_value']:>12.4g}{r['ratio']:>7.2f}  {r['baseline']}")


if __name__ == "__main__":
    main()
