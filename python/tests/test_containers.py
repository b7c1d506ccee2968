"""The distributed containers from Python, against a sequential reference: every rank
regenerates every rank's random batches (fixed seeds) and applies them in one sequence."""

import collections

import cairn
import numpy as np
import pytest
from conftest import threads_only


def words(rng, n):
    """Skewed words, so that keys repeat within and across ranks (some long, some non-ASCII)."""
    ids = np.where(rng.random(n) < 0.5, rng.integers(0, 7, n), rng.integers(0, 311, n))
    return [f"w{i}" + ("z" * (i % 40) if i % 5 == 0 else "") + ("é" if i % 11 == 0 else "")
            for i in ids]


def int_batch(rank, n=700):
    rng = np.random.default_rng(1000 + rank)
    return rng.integers(-300, 300, n) * 1_000_003  # negative and large keys


@pytest.mark.parametrize("route", ["direct", "grid"])
@pytest.mark.parametrize("key", [int, str])
def test_counting_set_matches_a_counter(run, key, route):
    def make(r):
        rng = np.random.default_rng(2000 + r)
        keys = int_batch(r) if key is int else words(rng, 800)
        counts = rng.integers(1, 4, len(keys)).astype(np.uint64)
        return keys, counts

    def main(w):
        p, me = w.size, w.rank
        for cache in (0, 64, 4096):
            cs = w.counting_set(key, cache_slots=cache, buffer_bytes=512, route=route,
                                combine_hops=cache != 64)
            engine = f"_CountingSet_{key.__name__}" + ("_grid" if route == "grid" else "")
            assert type(cs._c).__name__ == engine  # the route's own class
            keys, counts = make(me)
            half = len(keys) // 2
            cs.insert(keys[:half])  # count 1 each
            cs.insert(keys[half:], counts[half:])
            cs.insert([] if key is str else np.empty(0, np.int64))  # an empty batch
            w.quiesce()
            ref = collections.Counter()
            for r in range(p):
                k, n = make(r)
                for i, x in enumerate(k):
                    ref[x.item() if key is int else x] += 1 if i < len(k) // 2 else int(n[i])
            assert cs.size() == len(ref)
            mine = cs.local()
            everything = {}
            for part in w.allgather(mine):
                assert not set(part) & set(everything)  # each key on one rank
                everything.update(part)
            assert everything == dict(ref)
            probe = sorted(ref)[len(ref) // 3]
            assert cs.count(probe) == ref[probe]
            absent = 7 if key is int else "never"
            batch = list(sorted(ref))[me::p][:50] + [absent] * (me % 2)
            got = cs.counts_of(np.array(batch, np.int64) if key is int else batch)
            assert got.dtype == np.uint64 and list(got) == [ref.get(x, 0) for x in batch]
            top = cs.topk(5)
            want = sorted(ref.items(), key=lambda kv: (-kv[1], kv[0]))[:5]
            assert [tuple(t) for t in top] == want
            cs.clear()
            assert cs.size() == 0
            cs.close()
    run(main)


@pytest.mark.parametrize("route", ["direct", "grid"])
@pytest.mark.parametrize("key", [int, str])
def test_set_and_disjoint_set_match_the_reference(run, key, route):
    def main(w):
        p, me = w.size, w.rank
        batches = [int_batch(r, 300) if key is int else words(np.random.default_rng(3000 + r), 300)
                   for r in range(p)]
        with w.set(key, route=route, cache_slots=0 if key is str else 32768) as s:
            s.insert(batches[me])
            w.quiesce()
            gone = batches[me][::3]
            s.erase(gone)
            w.quiesce()
            ref = set()
            for b in batches:
                ref.update(x.item() if key is int else x for x in b)
            for b in batches:
                ref.difference_update(x.item() if key is int else x for x in b[::3])
            assert s.size() == len(ref)
            held = [x.item() if key is int else x for x in s.local()]
            assert sorted(x for part in w.allgather(held) for x in part) == sorted(ref)
            ask = list(batches[(me + 1) % p][:40])
            found = s.contains_each(np.array(ask, np.int64) if key is int else ask)
            assert found.dtype == bool
            assert list(found) == [(x.item() if key is int else x) in ref for x in ask]
            some = sorted(ref)[0] if ref else batches[0][0]
            assert s.contains(some) == (some in ref)
            w.quiesce()

        # Union-find: pairs from every rank, checked against a sequential union-find.
        # (combine_hops: int keys drop repeated steps on the grid's hops; str keys have no filter.)
        with w.disjoint_set(key, route=route, combine_hops=key is int) as ds:
            rng = np.random.default_rng(4000 + me)
            a = rng.integers(0, 400, 200)
            b = rng.integers(0, 400, 200)
            conv = (lambda v: v) if key is int else (lambda v: [f"v{x}" for x in v])
            ds.union(conv(a), conv(b))
            ds.compress()
            parent = {}

            def find(x):
                while parent.setdefault(x, x) != x:
                    x = parent[x]
                return x
            for r in range(p):
                g = np.random.default_rng(4000 + r)
                ra, rb = g.integers(0, 400, 200), g.integers(0, 400, 200)
                for x, y in zip(conv(ra), conv(rb)):
                    x, y = (x.item(), y.item()) if key is int else (x, y)
                    fx, fy = find(x), find(y)
                    if fx != fy:
                        parent[max(fx, fy)] = min(fx, fy)  # the smallest key is the root
            for x, root in ds.local().items():
                assert root == find(x)
            assert ds.size() == len(parent)
            assert ds.num_sets() == sum(1 for x in parent if find(x) == x)
            ask = conv(np.arange(me, 420, p))  # some never joined: their own roots
            roots = ds.roots_of(ask)
            assert [(r.item() if key is int else r) for r in roots] == [
                find(x.item() if key is int else x) if (x.item() if key is int else x) in parent
                else (x.item() if key is int else x) for x in ask]
            probe = sorted(parent)[0]
            assert ds.find(probe) == find(probe)
    run(main)


@pytest.mark.parametrize("route", ["direct", "grid"])
@pytest.mark.parametrize("key,value", [(int, float), (str, int)])
def test_map_matches_the_reference(run, key, value, route):
    def keys_of(r, n):
        rng = np.random.default_rng(5000 + r)
        return int_batch(r, n) if key is int else words(rng, n)

    def values_of(r, n):
        rng = np.random.default_rng(6000 + r)
        return rng.integers(-50, 50, n).astype(np.float64 if value is float else np.int64)

    def main(w):
        p, me = w.size, w.rank
        for op, fold in ((cairn.SUM, lambda a, b: a + b), (cairn.MAX, max), (cairn.MIN, min)):
            m = w.map(key, value, cache_slots=64, route=route)
            m.reduce(keys_of(me, 400), values_of(me, 400), op=op)
            w.quiesce()
            ref = {}
            for r in range(p):
                for k, v in zip(keys_of(r, 400), values_of(r, 400)):
                    k = k.item() if key is int else k
                    ref[k] = fold(ref[k], v.item()) if k in ref else v.item()
            assert m.size() == len(ref)
            merged = {}
            for part in w.allgather(m.local()):
                merged.update(part)
            assert merged == ref
            # Assignments of keys each rank alone writes, then erases of some of them.
            mine = sorted(ref)[me::p][:30]
            m.insert_or_assign(np.array(mine, np.int64) if key is int else mine,
                               np.full(len(mine), 7, np.float64 if value is float else np.int64))
            w.quiesce()
            m.erase(mine[::2])
            w.quiesce()
            for part in w.allgather(mine):
                for i, k in enumerate(part):
                    if i % 2:
                        ref[k] = 7
                    else:
                        del ref[k]
            ask = sorted(ref)[:20] + ([3] if key is int else ["never"])
            vals, found = m.values_of(np.array(ask, np.int64) if key is int else ask)
            assert list(found) == [k in ref for k in ask]
            assert [v.item() for v, f in zip(vals, found) if f] == [ref[k] for k in ask if k in ref]
            some = sorted(ref)[0]
            assert m.value_of(some) == ref[some]
            # insert (if missing) keeps what is there.
            m.insert([some] if key is str else np.array([some]), np.array([99], np.float64 if value is float else np.int64))
            w.quiesce()
            assert m.value_of(some) == ref[some]
            m.close()
    run(main)


def test_bad_batches_are_refused(run):
    def main(w):
        r = w.rank
        with w.counting_set(int) as cs:
            with pytest.raises(cairn.Error, match=rf"cairn.CountingSet.insert: rank {r}: keys must be integers, not float64"):
                cs.insert([1.5, 2.0])
            with pytest.raises(cairn.Error, match=rf"cairn.CountingSet.insert: rank {r}: counts holds values outside uint64"):
                cs.insert([1, 2], [1, -1])
            with pytest.raises(cairn.Error, match=rf"cairn.CountingSet.insert: rank {r}: counts holds uint64\[1\], not 2"):
                cs.insert([1, 2], [1])
            with pytest.raises(cairn.Error, match=rf"cairn.CountingSet.insert: rank {r}: keys holds values outside int64"):
                cs.insert(np.array([2**63], np.uint64))
        with w.set(str) as s:
            with pytest.raises(cairn.Error, match=rf"cairn.Set.insert: rank {r}: keys must be a sequence of str, not one str"):
                s.insert("word")
            with pytest.raises(cairn.Error, match=rf"cairn.Set.insert: rank {r}: keys must be a sequence of str"):
                s.insert([1, 2])
        with w.disjoint_set(int) as ds:
            with pytest.raises(cairn.Error, match=rf"cairn.DisjointSet.union: rank {r}: a holds 2 keys and b 1"):
                ds.union([1, 2], [3])
        with w.map(int, int) as m:
            with pytest.raises(cairn.Error, match=rf"cairn.Map.insert: rank {r}: values must be integers, not float64"):
                m.insert([1], [0.5])
            with pytest.raises(cairn.Error, match=r"op must be cairn.SUM, MIN or MAX"):
                m.reduce([1], [1], op=cairn.PROD)
        with pytest.raises(cairn.Error, match=rf"cairn.World.map: rank {r}: key must be int or str"):
            w.map(bytes)
        for make, name in ((w.counting_set, "counting_set"), (w.map, "map"), (w.bag, "bag"),
                           (lambda route: w.array(4, route=route), "array")):
            with pytest.raises(cairn.Error, match=rf"cairn.World.{name}: rank {r}: route must be "
                                                  r"'direct' or 'grid', not 'ring'"):
                make(route="ring")
        cs = w.counting_set(str)
        cs.close()
        with pytest.raises(cairn.Error, match=rf"cairn.CountingSet.insert: rank {r}: the container is closed"):
            cs.insert(["a"])
    run(main)


@pytest.mark.parametrize("route", ["direct", "grid"])
@pytest.mark.parametrize("value", [int, float])
def test_array_matches_the_reference(run, value, route):
    dtype = np.int64 if value is int else np.float64

    def main(w):
        p, me = w.size, w.rank
        for n in (0, 1, 5, 1000):
            a = w.array(n, value, init=3, route=route)
            assert a.size() == n
            ref = np.full(n, 3, dtype)
            if n:
                # Reductions that commute (SUM), then sets of indices each owned by one rank.
                for r in range(p):
                    g = np.random.default_rng(7000 + 10 * n + r)
                    i, v = g.integers(0, n, 400).astype(np.uint64), g.integers(-9, 9, 400).astype(dtype)
                    if r == me:
                        a.reduce(i, v, op=cairn.SUM)
                    np.add.at(ref, i.astype(np.int64), v)
                w.quiesce()
                for r in range(p):
                    g = np.random.default_rng(8000 + 10 * n + r)
                    i = np.unique(g.integers(0, n, 100))
                    i = i[i % p == r].astype(np.uint64)  # rank r alone writes these
                    v = g.integers(0, 100, len(i)).astype(dtype)
                    if r == me:
                        a.set(i, v)
                    ref[i.astype(np.int64)] = v
                w.quiesce()
            whole = a.gather(root=p - 1)
            if me == p - 1:
                assert whole.dtype == dtype and np.array_equal(whole, ref)
            else:
                assert whole is None
            mine = a.local()
            assert np.array_equal(mine, ref[a.local_first:a.local_first + len(mine)])
            assert w.allreduce(len(mine)) == n
            if n:
                with pytest.raises(cairn.Error, match=rf"cairn.Array.set: rank {me}: index {n} is outside the array of {n} values"):
                    a.set([n], [1])
            with pytest.raises(cairn.Error, match="op must be cairn.SUM, MIN or MAX"):
                a.reduce([], [], op=cairn.BXOR)
            a.close()
    run(main)


@pytest.mark.parametrize("route", ["direct", "grid"])
@pytest.mark.parametrize("item", [int, float, str])
def test_bag_keeps_every_item(run, item, route):
    def items_of(r):
        g = np.random.default_rng(9000 + r)
        n = int(g.integers(0, 200)) * (r % 2)  # odd ranks only: unbalanced
        raw = g.integers(-1000, 1000, n)
        return [f"i{x}" for x in raw] if item is str else raw.astype(np.int64 if item is int else np.float64)

    def main(w):
        p, me = w.size, w.rank
        with w.bag(item, route=route) as b:
            mine = items_of(me)
            b.insert(mine[: len(mine) // 2])
            b.insert(mine[len(mine) // 2:], ranks=np.zeros(len(mine) - len(mine) // 2, np.int32))
            w.quiesce()
            every = sorted(x for r in range(p) for x in (items_of(r) if item is str else items_of(r).tolist()))

            def gathered():
                parts = w.allgather(list(b.local()) if item is str else b.local().tolist())
                return [x for part in parts for x in part]
            assert b.size() == len(every) and sorted(gathered()) == every
            before = gathered()
            b.rebalance()
            assert len(b.local()) == len(every) // p + (me < len(every) % p)
            assert gathered() == before  # the order by (rank, position) is kept
            b.shuffle(7)
            assert sorted(gathered()) == every
            with pytest.raises(cairn.Error, match=rf"cairn.Bag.insert: rank {me}: target rank {p} is outside the world of {p} ranks"):
                b.insert(mine[:1] if len(mine) else (["x"] if item is str else [1]), ranks=[p])
            b.clear()
            assert b.size() == 0
    run(main)


def test_containers_on_a_group(run):
    """A counting set, a map, an array and a bag on a group whose ranks run opposite to the
    world's and leave every other rank out: made and updated by the members only, completed by
    g.quiesce(), owners and roots numbered by group rank."""
    def batch(r):
        return np.random.default_rng(3000 + r).integers(0, 40, 300)

    def main(w):
        g = w.group(list(range(w.size - 1, -1, -2)))  # every other rank, the last first
        if g.rank < 0:
            with pytest.raises(cairn.Error, match=rf"cairn.Group.map: rank {w.rank}: this rank "
                                                  rf"is not a member of the group \({g.size} ranks\)"):
                g.map(str, int)
            return
        n, me = g.size, g.rank
        cs = g.counting_set(int, cache_slots=64, buffer_bytes=512)
        m = g.map(str, int, cache_slots=64)
        a = g.array(50, int)
        b = g.bag(int)
        keys = batch(me)
        cs.insert(keys)
        m.reduce([f"k{k}" for k in keys], keys.astype(np.int64), cairn.Op.SUM)
        a.reduce(keys.astype(np.uint64), np.ones(len(keys), np.int64))
        b.insert(keys, np.full(len(keys), n - 1, np.int32))  # all to the group's last rank
        g.quiesce()
        ref = collections.Counter()
        for r in range(n):
            ref.update(batch(r).tolist())
        every = sorted(ref)
        assert cs.size() == len(ref) and m.size() == len(ref)
        assert list(cs.counts_of(np.array(every, np.int64))) == [ref[k] for k in every]
        values, found = m.values_of([f"k{k}" for k in every])
        assert found.all() and list(values) == [k * ref[k] for k in every]
        parts = g.allgather(sorted(cs.local()))
        assert sorted(k for part in parts for k in part) == every  # each key on one rank
        full = a.gather(n - 1)
        if me == n - 1:
            assert list(full) == [ref.get(i, 0) for i in range(50)]
        else:
            assert full is None
        assert len(b.local()) == (300 * n if me == n - 1 else 0)
        with pytest.raises(cairn.Error, match=rf"cairn.Bag.insert: rank {w.rank}: target rank "
                                              rf"{n} is outside the group of {n} ranks"):
            b.insert([1], ranks=[n])
        cs.clear()
        assert cs.size() == 0
    run(main)


def test_a_container_ends_with_the_rank_that_made_it(run):
    kept = []

    def main(w):
        cs = w.counting_set(str)
        cs.insert(["a", "b"])
        w.quiesce()
        kept.append(cs)  # outlives the run: closed when the rank's function returns
    run(main)
    with pytest.raises(cairn.Error, match="cairn.CountingSet.size: rank .*: the container is closed"):
        kept[0].size()


@threads_only
def test_calls_never_sent_fail_the_run():
    def main(w):
        m = w.map(str, float)
        if w.rank == 0:
            m.insert(["a"], [1.0])  # buffered, and the rank returns without w.quiesce()
    with pytest.raises(cairn.Error, match="the run ended with exit code"):
        cairn.launch(main, ranks=2)
