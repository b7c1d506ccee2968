"""Point-to-point: buffers of every element type and any picklable object, against what the
sender generated (random data, fixed seeds)."""

import gc
import weakref

import cairn
import numpy as np
import pytest

DTYPES = [np.int8, np.uint16, np.int32, np.int64, np.uint64, np.float32, np.float64,
          np.complex128, np.bool_]


def data(seed, n, dtype):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "c":
        return (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dtype)
    if np.dtype(dtype).kind == "b":
        return rng.integers(0, 2, n).astype(dtype)
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(n).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)


def test_ring_of_buffers(run):
    def main(w):
        left, right = (w.rank - 1) % w.size, (w.rank + 1) % w.size
        for k, dtype in enumerate(DTYPES):
            n = 1 + 37 * k
            out = data(1000 * w.rank + k, n, dtype)
            got = np.empty(n, dtype)
            req = w.Irecv(got, left, tag=k)
            w.Send(out, right, tag=k)
            req.wait()
            assert req.status.source == left and req.status.tag == k
            assert req.status.nbytes == got.nbytes
            np.testing.assert_array_equal(got, data(1000 * left + k, n, dtype))
    run(main)


def test_large_and_empty_messages(run):
    def main(w):
        if w.size < 2:
            return
        for n in (0, 1, 1 << 20):
            if w.rank == 0:
                w.Send(data(n, n, np.float64), 1, tag=n % 1000)
            elif w.rank == 1:
                got = np.full(n, -1.0)
                st = w.Recv(got, 0, tag=n % 1000)
                assert st.nbytes == 8 * n
                np.testing.assert_array_equal(got, data(n, n, np.float64))
    run(main)


def test_any_source_probe_and_sendrecv(run):
    def main(w):
        if w.rank != 0:
            w.Send(np.full(w.rank, w.rank, np.int32), 0, tag=w.rank)
        else:
            seen = set()
            for _ in range(w.size - 1):
                st = w.Probe()
                got = np.empty(st.nbytes // 4, np.int32)
                st2 = w.Recv(got, st.source, st.tag)
                assert st2.source == st.source and len(got) == st.source
                assert (got == st.source).all()
                seen.add(st.source)
            assert seen == set(range(1, w.size))
        w.Barrier()  # no Sendrecv message may meet the any-tag probe above
        right, left = (w.rank + 1) % w.size, (w.rank - 1) % w.size
        got = np.empty(3, np.int64)
        w.Sendrecv(np.arange(3) + 10 * w.rank, right, got, left, sendtag=5, recvtag=5)
        np.testing.assert_array_equal(got, np.arange(3) + 10 * left)
    run(main)


def test_objects(run):
    def main(w):
        right, left = (w.rank + 1) % w.size, (w.rank - 1) % w.size
        obj = {"rank": w.rank, "list": list(range(w.rank)), "big": 10**30 + w.rank,
               "text": "é" * w.rank, "array": np.arange(w.rank, dtype=np.float32)}
        req = w.irecv(left, tag=1)
        w.isend(obj, right, tag=1).wait()
        got = req.wait()
        assert got["rank"] == left and got["list"] == list(range(left))
        assert got["big"] == 10**30 + left and got["text"] == "é" * left
        np.testing.assert_array_equal(got["array"], np.arange(left, dtype=np.float32))
        w.send(("tuple", w.rank), right)
        status = []
        assert w.recv(left, status=status) == ("tuple", left)
        assert status[0].source == left
    run(main)


def test_bytes_bytearray_memoryview(run):
    def main(w):
        if w.size < 2:
            return
        if w.rank == 0:
            w.Send(b"abc", 1)
            w.Send(memoryview(bytearray(b"defg"))[1:3], 1)
        elif w.rank == 1:
            a = bytearray(3)
            w.Recv(a, 0)
            b = bytearray(2)
            w.Recv(memoryview(b), 0)
            assert bytes(a) == b"abc" and bytes(b) == b"ef"
    run(main)


def test_bad_buffers_are_refused(run):
    def main(w):
        ro = np.zeros(4)
        ro.flags.writeable = False
        with pytest.raises(cairn.Error, match=rf"cairn.Recv: rank {w.rank}: buf is read-only"):
            w.Recv(ro, w.rank)
        with pytest.raises(cairn.Error, match=r"buf is not C-contiguous"):
            w.Send(np.zeros((4, 4))[:, 1], 0)
        with pytest.raises(cairn.Error, match=r"buf is a list, which exports no buffer"):
            w.Send([1, 2], 0)
        with pytest.raises(cairn.Error, match=rf"rank {w.rank}.*{w.size}"):
            w.Send(np.zeros(1), w.size)
    run(main)


def test_persistent_send_and_receive_restart(run):
    # A ring: each rank's Send_init to the next and Recv_init from the previous, started five
    # times with new data; any-source receives report who sent.
    def main(w):
        p, me = w.size, w.rank
        out = np.empty(9, np.int64)
        got = np.empty(9, np.int64)
        send = w.Send_init(out, (me + 1) % p, tag=4)
        recv = w.Recv_init(got, (me + p - 1) % p, tag=4)
        assert "send of 72 bytes to rank" in send.plan and "receive of up to 72 bytes" in recv.plan
        for it in range(5):
            out[:] = data(100 * it + me, 9, np.int64)
            recv.start()
            send.start()
            send.wait()
            while not recv.test():
                pass
            assert not recv.active
            np.testing.assert_array_equal(got, data(100 * it + (me + p - 1) % p, 9, np.int64))
            assert recv.status.source == (me + p - 1) % p and recv.status.nbytes == 72
        anyone = w.Recv_init(got, tag=5)
        assert "any rank" in anyone.plan
        if me == 0:
            for _ in range(p - 1):
                anyone.start()
                anyone.wait()
                assert 1 <= anyone.status.source < p and got[0] == anyone.status.source
        else:
            out[0] = me
            w.Send(out, 0, tag=5)
        with pytest.raises(cairn.Error, match=rf"rank {me}"):
            w.Send_init(out, p + 3)  # no such rank: refused at init, before any start
    run(main)


# numpy arrays are read from their own fields (python/src/buffer.cpp), everything else through
# the buffer protocol: an array and a memoryview of it must meet the same element type, the
# same refusals and the same bytes.
ODD_DTYPES = [np.dtype(">f8"), np.dtype(">i4"), np.float16, np.longdouble, np.clongdouble,
              np.dtype([("a", np.int32), ("b", np.float64)]), np.dtype("S3")]


class Tagged(np.ndarray):
    """A subclass: served by the buffer protocol, not read from numpy's fields."""


def test_numpy_arrays_read_as_their_buffers(run):
    def main(w):
        kinds = [np.dtype(d) for d in DTYPES + [np.uint8, np.int16, np.uint32, np.complex64]]
        for k, dtype in enumerate(kinds + [np.dtype(d) for d in ODD_DTYPES]):
            n = 3 + k
            raw = np.random.default_rng(7 * k + w.rank).integers(0, 256, n * dtype.itemsize)
            mine = raw.astype(np.uint8).view(dtype)
            outcomes = []
            for wrap in (lambda a: a, memoryview, lambda a: a.view(Tagged)):
                out = np.zeros(n, dtype)
                try:
                    w.Allreduce(wrap(mine), wrap(out), op=cairn.BOR)
                    outcomes.append(("ok", out.tobytes()))
                except cairn.Error as e:
                    outcomes.append(("refused", str(e)))
            assert outcomes[0] == outcomes[1] == outcomes[2], (dtype, outcomes)
            # Bitwise OR is defined on the integers and bool of native byte order alone.
            odd = k >= len(kinds)
            assert outcomes[0][0] == ("ok" if dtype.kind in "biu" and not odd else "refused")
            # Any element type travels as bytes.
            right, left = (w.rank + 1) % w.size, (w.rank - 1) % w.size
            got = np.zeros(n, dtype)
            w.Sendrecv(mine, right, got, left, sendtag=k, recvtag=k)
            want = np.random.default_rng(7 * k + left).integers(0, 256, n * dtype.itemsize)
            assert got.tobytes() == want.astype(np.uint8).tobytes()
    run(main)


def test_arrays_numpy_does_not_export_are_refused_alike(run):
    # numpy exports no buffer of datetimes: an exact array and a subclass view are refused with
    # numpy's reason, on every rank, before anything is sent.
    def main(w):
        for dtype in ("datetime64[D]", "timedelta64[s]"):
            a = np.zeros(3, dtype)
            for arr, name in ((a, "numpy.ndarray"), (a.view(Tagged), "Tagged")):
                with pytest.raises(cairn.Error, match=rf"cairn.Send: rank {w.rank}: buf is a "
                                   rf"{name} that exports no buffer: .*dtype"):
                    w.Send(arr, w.rank)
        w.Barrier()
    run(main)


def test_requests_hold_the_arrays_they_were_given(run):
    # A request's arrays stay alive until it completes, even with no other reference, and are
    # let go then.
    def main(w):
        right, left = (w.rank + 1) % w.size, (w.rank - 1) % w.size
        got, out = np.zeros(1000, np.int64), np.arange(1000, dtype=np.int64) * (w.rank + 1)
        held = [weakref.ref(got), weakref.ref(out)]
        recv = w.Irecv(got, left, tag=3)
        send = w.Isend(out, right, tag=3)
        del got, out
        gc.collect()
        assert all(r() is not None for r in held)
        np.testing.assert_array_equal(held[1](), np.arange(1000) * (w.rank + 1))
        send.wait()
        recv.wait()
        assert recv.status.nbytes == 8000
        gc.collect()
        assert all(r() is None for r in held)
    run(main)
