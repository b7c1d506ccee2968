"""Channels from numpy batches: every item arrives once at its key's owner (or merged, with
combining), against a sequential reference built from every rank's regenerated keys (random
data, fixed seeds)."""

import cairn
import numpy as np
import pytest


def keys_of(rank, n, count, seed=0):
    return np.random.default_rng(1000 * seed + rank).integers(0, n, count, dtype=np.int64)


def block(n, size, rank):
    b = -(-n // size)
    return min(rank * b, n), min((rank + 1) * b, n)


@pytest.mark.parametrize("route", ["direct", "grid"])
@pytest.mark.parametrize("combine", [None, cairn.SUM])
def test_histogram(run, route, combine):
    def main(w):
        n, count = 97 * w.size + 3, 20000
        table = None

        def handler(local, values):
            np.add.at(table, local, values)

        ch = w.channel(n, handler, values=np.int64, combine=combine, route=route, batch=777)
        table = np.zeros(ch.local_size, np.int64)
        mine = keys_of(w.rank, n, count)
        ch.send_many(mine, (mine % 5 + 1).astype(np.int64))
        ch.quiesce()
        lo, hi = block(n, w.size, w.rank)
        want = np.zeros(n, np.int64)
        for r in range(w.size):
            k = keys_of(r, n, count)
            np.add.at(want, k, k % 5 + 1)
        np.testing.assert_array_equal(table, want[lo:hi])
        ch.close()

    run(main)


@pytest.mark.parametrize("route", ["direct", "grid"])
def test_channels_on_overlapping_groups(run, route):
    """Two channels at once on overlapping groups (the first half of the ranks, and every rank
    in reverse order): keys owned by group ranks, handlers that send on, g.quiesce() on the
    members; a non-member is refused."""
    def main(w):
        p = w.size
        half = w.group(list(range(0, (p + 1) // 2)))
        back = w.group(list(range(p - 1, -1, -1)))  # group rank = p - 1 - world rank
        chans = []
        for g, seed in ((half, 1), (back, 2)):
            if g.rank < 0:
                with pytest.raises(cairn.Error, match=rf"cairn::channel: rank {w.rank}: this "
                                                      rf"rank is not a member of the group"):
                    g.channel(10, lambda local, values: None)
                continue
            n = 31 * g.size + 5
            table = np.zeros(-(-n // g.size), np.int64)
            box = {"table": table}

            def handler(local, values, box=box, n=n):
                np.add.at(box["table"], local, values)
                again = values > 1  # halve and send on to the key one past, until 1
                if again.any():
                    lo = box["lo"]
                    box["ch"].send_many((lo + local[again] + 1) % n, values[again] // 2)

            ch = g.channel(n, handler, values=np.int64, route=route, batch=101)
            box["ch"], box["lo"] = ch, block(n, g.size, g.rank)[0]
            box["table"] = table[:ch.local_size]
            mine = keys_of(g.rank, n, 3000, seed)
            ch.send_many(mine, np.full(len(mine), 8, np.int64))
            chans.append((g, ch, box, n, seed))
        for g, ch, box, n, seed in chans:
            ch.quiesce()
            want = np.zeros(n, np.int64)
            for r in range(g.size):
                k = keys_of(r, n, 3000, seed)
                for step, v in enumerate((8, 4, 2, 1)):
                    np.add.at(want, (k + step) % n, v)
            lo, hi = block(n, g.size, g.rank)
            np.testing.assert_array_equal(box["table"], want[lo:hi])
            ch.close()

    run(main)


def test_keys_only_and_min_merge(run):
    def main(w):
        n = 50 * w.size + 1
        counts, best = None, None

        def count(local, values):
            assert values is None and local.dtype == np.int64
            np.add.at(counts, local, 1)

        def keep_min(local, values):
            np.minimum.at(best, local, values)

        a = w.channel(n, count, route="grid", batch=64)
        b = w.channel(n, keep_min, values=np.float64, combine=cairn.MIN, batch=64)
        counts = np.zeros(a.local_size, np.int64)
        best = np.full(b.local_size, np.inf)
        mine = keys_of(w.rank, n, 5000, seed=1).astype(np.uint32)
        vals = np.random.default_rng(w.rank).standard_normal(len(mine))
        a.send_many(mine)
        b.send_many(mine, vals)
        a.quiesce()
        b.quiesce()
        lo, hi = block(n, w.size, w.rank)
        want_counts = np.zeros(n, np.int64)
        want_best = np.full(n, np.inf)
        for r in range(w.size):
            k = keys_of(r, n, 5000, seed=1)
            np.add.at(want_counts, k, 1)
            np.minimum.at(want_best, k, np.random.default_rng(r).standard_normal(len(k)))
        np.testing.assert_array_equal(counts, want_counts[lo:hi])
        np.testing.assert_array_equal(best, want_best[lo:hi])
        a.close()
        b.close()

    run(main)


def test_dedup_delivers_every_key_sent(run):
    def main(w):
        n = 300 * w.size
        seen = None

        def mark(local, values):
            seen[local] = True

        ch = w.channel(n, mark, combine="dedup")
        seen = np.zeros(ch.local_size, bool)
        ch.send_many(keys_of(w.rank, n, 4000, seed=2))
        ch.quiesce()
        lo, hi = block(n, w.size, w.rank)
        sent = np.zeros(n, bool)
        for r in range(w.size):
            sent[keys_of(r, n, 4000, seed=2)] = True
        np.testing.assert_array_equal(seen, sent[lo:hi])
        ch.close()

    run(main)


def test_handlers_send_on(run):
    # Each item carries its remaining hops; a handler sends it on to the next key until 0.
    def main(w):
        n, hops = 40 * w.size, 5
        arrivals = None
        ch = None

        def forward(local, values):
            np.add.at(arrivals, local, 1)
            more = values > 0
            if more.any():
                lo = block(n, w.size, w.rank)[0]
                ch.send_many((local[more] + lo + 1) % n, values[more] - 1)

        ch = w.channel(n, forward, values=np.int64, route="grid", batch=50)
        arrivals = np.zeros(ch.local_size, np.int64)
        mine = keys_of(w.rank, n, 1000, seed=3)
        ch.send_many(mine, np.full(len(mine), hops, np.int64))
        ch.quiesce()
        want = np.zeros(n, np.int64)
        for r in range(w.size):
            k = keys_of(r, n, 1000, seed=3)
            for h in range(hops + 1):
                np.add.at(want, (k + h) % n, 1)
        lo, hi = block(n, w.size, w.rank)
        np.testing.assert_array_equal(arrivals, want[lo:hi])
        ch.close()

    run(main)


def test_bad_items_are_refused_before_sending(run):
    def main(w):
        r = w.rank
        ch = w.channel(10, lambda local, values: None, values=np.int64)
        with pytest.raises(cairn.Error, match=rf"Channel.send_many: rank {r}: key -1 \(at 1\) is negative"):
            ch.send_many(np.array([0, -1]), np.zeros(2, np.int64))
        with pytest.raises(cairn.Error, match=rf"rank {r}: values holds float64\[2\], not int64\[2\]"):
            ch.send_many(np.array([0, 1]), np.zeros(2))
        with pytest.raises(cairn.Error, match=rf"rank {r}: this channel's items carry values"):
            ch.send_many(np.array([0, 1]))
        with pytest.raises(cairn.Error, match=rf"rank {r}: keys hold float64\[1\]"):
            ch.send_many(np.array([0.5]), np.zeros(1, np.int64))
        with pytest.raises(cairn.Error, match=rf"rank {r}: key 10 is outside the distribution's domain \[0, 10\)"):
            ch.send_many(np.array([10]), np.zeros(1, np.int64))  # one past the end
        ch.quiesce()
        ch.close()
        with pytest.raises(cairn.Error, match=rf"Channel.flush: rank {r}: the channel is closed"):
            ch.flush()
        with pytest.raises(cairn.Error, match=r"merges values, and this channel's items have none"):
            w.channel(10, print, combine=cairn.SUM)
        with pytest.raises(cairn.Error, match=r"values must be None, numpy.int64 or numpy.float64"):
            w.channel(10, print, values=np.float32)

    run(main)


def test_a_channel_ends_with_the_rank_that_made_it(run):
    kept = []

    def main(w):
        ch = w.channel(10 * w.size, lambda local, values: None)
        ch.send_many(np.arange(10 * w.size, dtype=np.int64))
        ch.quiesce()
        kept.append(ch)  # outlives the run: closed when the rank's function returns
    run(main)
    with pytest.raises(cairn.Error, match="cairn.Channel.local_size: rank .*: the channel is closed"):
        kept[0].local_size
