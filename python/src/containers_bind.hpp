#pragma once
// The containers for Python: each batch of keys is converted once (int64 keys are read in the
// numpy array's memory, str keys copied out of the list), then every key goes to cairn's
// container with the GIL released: the work per key is C++, never a Python call. Every
// container is bound once per route (bind_routed<Route>), each route in a translation unit of
// its own (containers.cpp, containers_grid.cpp) so that they compile side by side.
#include "containers.hpp"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "buffer.hpp"
#include "cairn/containers/array.hpp"
#include "cairn/containers/bag.hpp"
#include "cairn/containers/counting_set.hpp"
#include "cairn/containers/disjoint_set.hpp"
#include "cairn/containers/map.hpp"
#include "cairn/containers/set.hpp"
#include "collectives.hpp"
#include "gil.hpp"
#include "numpy.hpp"
#include "rank_scope.hpp"

namespace cairn_python::containers_detail {

namespace cc = cairn::containers;

// A batch of keys as a span: int64 keys in the memory of the array given (the Python side
// makes it a contiguous int64 array), str keys copied out of the sequence given.
template <class K>
class key_batch;

template <>
class key_batch<std::int64_t> {
 public:
  key_batch(nb::handle keys, const char* call, int rank, const char* what = "keys")
      : b_(keys.ptr(), false, call, rank, what) {
    if (b_.type() != element::int64)
      refuse(call, rank, std::string(what) + " must be int64, not " + b_.describe());
  }
  [[nodiscard]] std::span<const std::int64_t> keys() const { return b_.as<const std::int64_t>(); }

 private:
  buffer b_;
};

template <>
class key_batch<std::string> {
 public:
  key_batch(nb::handle keys, const char* call, int rank, const char* what = "keys") {
    if (nb::isinstance<nb::str>(keys) || !nb::try_cast(keys, v_))
      refuse(call, rank,
             std::string(what) + " must be a sequence of str, not " +
                 nb::cast<std::string>(nb::str(keys.type())));
  }
  [[nodiscard]] std::span<const std::string> keys() const { return v_; }

 private:
  std::vector<std::string> v_;
};

// Keys handed back: a numpy int64 array, or a list of str.
inline nb::object keys_out(std::vector<std::int64_t>&& v) { return numpy_of(std::move(v)); }
inline nb::object keys_out(std::vector<std::string>&& v) { return nb::cast(std::move(v)); }

// The values of a batch: V's numpy array of exactly `n` elements.
template <class V>
std::span<const V> values_of(const buffer& b, std::size_t n, const char* call, int rank,
                             const char* what) {
  const element want = std::is_same_v<V, double>          ? element::float64
                       : std::is_same_v<V, std::uint64_t> ? element::uint64
                                                          : element::int64;
  if (b.type() != want || b.count() != n)
    refuse(call, rank,
           std::string(what) + " holds " + b.describe() + ", not " + std::to_string(n) + " " +
               to_string(want) + " values (one per key)");
  return b.as<const V>();
}

// A container as Python holds it: ended by close(), when Python drops it, or when the function
// of the rank that made it returns (rank_scope), with the GIL released, since ending a
// container with calls still buffered ends the run.
template <class C>
class held : public ends_with_scope<held<C>> {
 public:
  held(const cairn::world& w, std::unique_ptr<C> c) : w_(w), c_(std::move(c)) {}
  ~held() { close(); }

  // f(container) with the GIL released (cairn::error naming `call` once closed); its result.
  template <class F>
  auto run(const char* call, F&& f) {
    if (!c_) refuse(call, w_.rank(), "the container is closed");
    unlocked gil_free;
    return f(*c_);
  }
  // f(container, keys) for a batch of keys of type K, with the GIL released; its result.
  template <class K, class F>
  auto run_batch(const char* call, nb::handle keys, F&& f) {
    const key_batch<K> k(keys, call, rank());
    return run(call, [&](C& c) { return f(c, k.keys()); });
  }
  // The container, with the GIL held (reading this rank's part).
  const C& part(const char* call) {
    if (!c_) refuse(call, w_.rank(), "the container is closed");
    return *c_;
  }
  [[nodiscard]] int rank() const { return w_.rank(); }
  void close() {
    this->leave_scope();
    if (!c_) return;
    unlocked gil_free;
    c_.reset();
  }

 private:
  cairn::world w_;
  std::unique_ptr<C> c_;
};

// Binds what every container has: close(), size() (collective but for the array's) and the
// collective clear() where there is one. `kind`
// names the Python class in messages ("CountingSet").
template <class C>
nb::class_<held<C>> bind_held(nb::module_& m, const char* name, const char* kind, const char* doc) {
  nb::class_<held<C>> cls(m, name, doc);
  cls.def("close", &held<C>::close);
  cls.def("size", [call = std::string(kind) + ".size"](held<C>& self) {
    return self.run(call.c_str(), [](C& c) { return c.size(); });
  });
  if constexpr (requires(C & c) { c.clear(); })
    cls.def("clear", [call = std::string(kind) + ".clear"](held<C>& self) {
      self.run(call.c_str(), [](C& c) { c.clear(); });
    });
  return cls;
}

// Makes a container on `w` from `make()` with the GIL released (creation is collective).
template <class C, class Make>
std::unique_ptr<held<C>> create(const cairn::world& w, Make&& make) {
  std::unique_ptr<C> c;
  {
    unlocked gil_free;
    c = make();
  }
  return std::make_unique<held<C>>(w, std::move(c));
}

// The classes a container factory is defined on: World, and Group (a container on a group's
// members, its ranks the group's).
struct factories {
  nb::class_<cairn::world>& world;
  nb::class_<cairn::group>& group;
};

// Defines `name(args...)` on World and on Group: `make(on, args...)` makes the container on the
// ranks of either (collectively on them). Errors name the world rank.
template <class C, class... A, class Make>
void def_factory(const factories& f, const char* name, Make make) {
  f.world.def(name, [make](const cairn::world& w, A... a) {
    return create<C>(w, [&] { return make(w, a...); });
  });
  f.group.def(name, [make](const cairn::group& g, A... a) {
    return create<C>(g.world(), [&] { return make(g, a...); });
  });
}

inline cc::container_options options_of(std::size_t buffer_bytes, std::size_t cache_slots,
                                        bool combine_hops = false) {
  cc::container_options o;
  o.buffer_bytes = buffer_bytes;
  o.cache_slots = cache_slots;
  o.combine_hops = combine_hops;
  return o;
}

// Defines the factory of a keyed container C: (buffer_bytes, cache_slots, combine_hops).
template <class C>
void def_keyed_factory(const factories& on, const char* factory) {
  def_factory<C, std::size_t, std::size_t, bool>(
      on, factory,
      [](const auto& ranks, std::size_t buffer_bytes, std::size_t cache_slots, bool hops) {
        return std::make_unique<C>(ranks, options_of(buffer_bytes, cache_slots, hops));
      });
}

// A dict of this rank's part: key -> value (count, parent).
template <class Map>
nb::dict dict_of(const Map& part) {
  nb::dict d;
  for (const auto& [key, value] : part) d[nb::cast(key)] = nb::cast(value);
  return d;
}

// A merge of values by op (cairn.SUM, MIN or MAX), refused for any other op before anything
// is sent: f(merge) with merge one of cairn::plus, min, max.
template <class F>
void with_merge(op_kind op, const char* call, int rank, F&& f) {
  switch (op) {
    case op_kind::sum: return f(cairn::plus{});
    case op_kind::min: return f(cairn::min{});
    case op_kind::max: return f(cairn::max{});
    default: refuse(call, rank, "op must be cairn.SUM, MIN or MAX");
  }
}

template <class K, class Route>
void bind_counting_set(nb::module_& m, const factories& on, const std::string& name,
                       const std::string& factory) {
  using C = cc::counting_set<K, cc::default_hash<K>, Route>;
  auto cls =
      bind_held<C>(m, name.c_str(), "CountingSet", "A counting set (cairn.CountingSet's engine)");
  cls.def(
      "insert",
      [](held<C>& self, nb::handle keys, nb::handle counts) {
        const char* call = "CountingSet.insert";
        const std::optional<buffer> n =
            buffer_or_none(counts.ptr(), false, call, self.rank(), "counts");
        self.template run_batch<K>(call, keys, [&](C& c, std::span<const K> k) {
          const auto add = n ? values_of<std::uint64_t>(*n, k.size(), call, self.rank(), "counts")
                             : std::span<const std::uint64_t>();
          for (std::size_t i = 0; i < k.size(); ++i) c.async_insert(k[i], add.empty() ? 1 : add[i]);
        });
      },
      nb::arg("keys"), nb::arg("counts").none());
  cls.def("count", [](held<C>& self, const K& key) {
    return self.run("CountingSet.count", [&](C& c) { return c.count(key); });
  });
  cls.def("counts_of", [](held<C>& self, nb::handle keys) {
    return numpy_of(self.template run_batch<K>(
        "CountingSet.counts_of", keys, [](C& c, std::span<const K> k) { return c.counts_of(k); }));
  });
  cls.def("topk", [](held<C>& self, std::size_t k) {
    return self.run("CountingSet.topk", [&](C& c) { return c.topk(k); });
  });
  cls.def("local", [](held<C>& self) { return dict_of(self.part("CountingSet.local").local()); });
  def_keyed_factory<C>(on, factory.c_str());
}

template <class K, class Route>
void bind_set(nb::module_& m, const factories& on, const std::string& name,
              const std::string& factory) {
  using C = cc::set<K, cc::default_hash<K>, Route>;
  auto cls = bind_held<C>(m, name.c_str(), "Set", "A set (cairn.Set's engine)");
  cls.def("insert", [](held<C>& self, nb::handle keys) {
    self.template run_batch<K>("Set.insert", keys, [](C& c, std::span<const K> k) {
      for (const K& key : k) c.async_insert(key);
    });
  });
  cls.def("erase", [](held<C>& self, nb::handle keys) {
    self.template run_batch<K>("Set.erase", keys, [](C& c, std::span<const K> k) {
      for (const K& key : k) c.async_erase(key);
    });
  });
  cls.def("contains", [](held<C>& self, const K& key) {
    return self.run("Set.contains", [&](C& c) { return c.contains(key); });
  });
  cls.def("contains_each", [](held<C>& self, nb::handle keys) {
    const std::vector<bool> found = self.template run_batch<K>(
        "Set.contains_each", keys, [](C& c, std::span<const K> k) { return c.contains_each(k); });
    return numpy_of(std::vector<std::uint8_t>(found.begin(), found.end()));
  });
  cls.def("local", [](held<C>& self) {
    const auto& mine = self.part("Set.local").local();
    return keys_out(std::vector<K>(mine.begin(), mine.end()));
  });
  def_keyed_factory<C>(on, factory.c_str());
}

template <class K, class Route>
void bind_disjoint_set(nb::module_& m, const factories& on, const std::string& name,
                       const std::string& factory) {
  using C = cc::disjoint_set<K, cc::default_hash<K>, Route>;
  auto cls =
      bind_held<C>(m, name.c_str(), "DisjointSet", "A disjoint set (cairn.DisjointSet's engine)");
  cls.def("union", [](held<C>& self, nb::handle a, nb::handle b) {
    const char* call = "DisjointSet.union";
    const key_batch<K> y(b, call, self.rank(), "b");
    self.template run_batch<K>(call, a, [&](C& c, std::span<const K> x) {
      if (x.size() != y.keys().size())
        refuse(call, self.rank(),
               "a holds " + std::to_string(x.size()) + " keys and b " +
                   std::to_string(y.keys().size()) + ": they pair up one to one");
      for (std::size_t i = 0; i < x.size(); ++i) c.async_union(x[i], y.keys()[i]);
    });
  });
  cls.def("insert", [](held<C>& self, nb::handle keys) {
    self.template run_batch<K>("DisjointSet.insert", keys, [](C& c, std::span<const K> k) {
      for (const K& key : k) c.async_insert(key);
    });
  });
  cls.def("compress", [](held<C>& self) {
    return self.run("DisjointSet.compress", [](C& c) { return c.compress(); });
  });
  cls.def("find", [](held<C>& self, const K& key) {
    return self.run("DisjointSet.find", [&](C& c) { return c.find(key); });
  });
  cls.def("roots_of", [](held<C>& self, nb::handle keys) {
    return keys_out(self.template run_batch<K>(
        "DisjointSet.roots_of", keys, [](C& c, std::span<const K> k) { return c.roots_of(k); }));
  });
  cls.def("num_sets", [](held<C>& self) {
    return self.run("DisjointSet.num_sets", [](C& c) { return c.num_sets(); });
  });
  cls.def("local", [](held<C>& self) { return dict_of(self.part("DisjointSet.local").local()); });
  def_keyed_factory<C>(on, factory.c_str());
}

template <class K, class V, class Route>
void bind_map(nb::module_& m, const factories& on, const std::string& name,
              const std::string& factory) {
  using C = cc::map<K, V, cc::default_hash<K>, Route>;
  auto cls = bind_held<C>(m, name.c_str(), "Map", "A map (cairn.Map's engine)");
  // f(container, key, value) for each (keys[i], values[i]) of a batch, as `call`.
  auto each_pair = [](held<C>& self, const char* call, nb::handle keys, nb::handle values,
                      auto&& f) {
    const buffer vb(values.ptr(), false, call, self.rank(), "values");
    self.template run_batch<K>(call, keys, [&](C& c, std::span<const K> k) {
      const auto v = values_of<V>(vb, k.size(), call, self.rank(), "values");
      for (std::size_t i = 0; i < k.size(); ++i) f(c, k[i], v[i]);
    });
  };
  cls.def("insert", [each_pair](held<C>& self, nb::handle keys, nb::handle values) {
    each_pair(self, "Map.insert", keys, values,
              [](C& c, const K& k, const V& v) { c.async_insert(k, v); });
  });
  cls.def("insert_or_assign", [each_pair](held<C>& self, nb::handle keys, nb::handle values) {
    each_pair(self, "Map.insert_or_assign", keys, values,
              [](C& c, const K& k, const V& v) { c.async_insert_or_assign(k, v); });
  });
  cls.def("reduce", [each_pair](held<C>& self, nb::handle keys, nb::handle values, op_kind op) {
    with_merge(op, "Map.reduce", self.rank(), [&](auto merge) {
      each_pair(self, "Map.reduce", keys, values,
                [merge](C& c, const K& k, const V& v) { c.async_reduce(k, v, merge); });
    });
  });
  cls.def("erase", [](held<C>& self, nb::handle keys) {
    self.template run_batch<K>("Map.erase", keys, [](C& c, std::span<const K> k) {
      for (const K& key : k) c.async_erase(key);
    });
  });
  cls.def("value_of", [](held<C>& self, const K& key) {
    return self.run("Map.value_of", [&](C& c) { return c.value_of(key); });
  });
  // (values, found): numpy arrays in the order of `keys`; an absent key's value is 0.
  cls.def("values_of", [](held<C>& self, nb::handle keys) {
    const std::vector<std::optional<V>> got = self.template run_batch<K>(
        "Map.values_of", keys, [](C& c, std::span<const K> k) { return c.values_of(k); });
    std::vector<V> values(got.size());
    std::vector<std::uint8_t> found(got.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      values[i] = got[i].value_or(V{});
      found[i] = got[i].has_value();
    }
    return nb::make_tuple(numpy_of(std::move(values)), numpy_of(std::move(found)));
  });
  cls.def("local", [](held<C>& self) { return dict_of(self.part("Map.local").local()); });
  def_keyed_factory<C>(on, factory.c_str());
}

// Indices (uint64, checked below n by the Python side) and their values, one each.
template <class C, class V, class F>
void each_index(held<C>& self, const char* call, nb::handle indices, nb::handle values, F&& f) {
  const buffer ib(indices.ptr(), false, call, self.rank(), "indices");
  const buffer vb(values.ptr(), false, call, self.rank(), "values");
  if (ib.type() != element::uint64)
    refuse(call, self.rank(), "indices must be uint64, not " + ib.describe());
  const auto v = values_of<V>(vb, ib.count(), call, self.rank(), "values");
  const auto i = ib.as<const std::uint64_t>();
  self.run(call, [&](C& c) {
    for (std::size_t j = 0; j < i.size(); ++j) f(c, i[j], v[j]);
  });
}

template <class T, class Route>
void bind_array(nb::module_& m, const factories& on, const std::string& name,
                const std::string& factory) {
  using C = cc::array<T, Route>;
  auto cls = bind_held<C>(m, name.c_str(), "Array", "An array (cairn.Array's engine)");
  cls.def("set", [](held<C>& self, nb::handle indices, nb::handle values) {
    each_index<C, T>(self, "Array.set", indices, values,
                     [](C& c, std::uint64_t i, const T& v) { c.async_set(i, v); });
  });
  cls.def("reduce", [](held<C>& self, nb::handle indices, nb::handle values, op_kind op) {
    with_merge(op, "Array.reduce", self.rank(), [&](auto merge) {
      each_index<C, T>(self, "Array.reduce", indices, values,
                       [merge](C& c, std::uint64_t i, const T& v) { c.async_reduce(i, v, merge); });
    });
  });
  cls.def("local", [](held<C>& self) {
    const C& c = self.part("Array.local");
    return numpy_of(std::vector<T>(c.local().begin(), c.local().end()));  // a copy
  });
  cls.def("local_first",
          [](held<C>& self) { return self.part("Array.local_first").local_first(); });
  cls.def("gather", [](held<C>& self, int root) {
    return numpy_of(self.run("Array.gather", [&](C& c) { return c.gather(root); }));
  });
  def_factory<C, std::uint64_t, T, std::size_t, std::size_t, bool>(
      on, factory.c_str(),
      [](const auto& ranks, std::uint64_t n, T init, std::size_t buffer_bytes,
         std::size_t cache_slots, bool hops) {
        return std::make_unique<C>(ranks, n, init, options_of(buffer_bytes, cache_slots, hops));
      });
}

// A bag's items handed back: numpy for numbers, a list of str.
template <class T>
nb::object items_out(std::vector<T>&& v) {
  if constexpr (std::is_same_v<T, std::string>)
    return nb::cast(std::move(v));
  else
    return numpy_of(std::move(v));
}

template <class T, class Route>
void bind_bag(nb::module_& m, const factories& on, const std::string& name,
              const std::string& factory) {
  using C = cc::bag<T, Route>;
  auto cls = bind_held<C>(m, name.c_str(), "Bag", "A bag (cairn.Bag's engine)");
  // items to round-robin ranks, or items[i] to rank ranks[i] (int32, checked by the Python side).
  cls.def(
      "insert",
      [](held<C>& self, nb::handle items, nb::handle ranks) {
        const char* call = "Bag.insert";
        const std::optional<buffer> to =
            buffer_or_none(ranks.ptr(), false, call, self.rank(), "ranks");
        if (to && to->type() != element::int32)
          refuse(call, self.rank(), "ranks must be int32, not " + to->describe());
        auto put = [&](std::span<const T> x) {
          if (to && to->count() != x.size())
            refuse(call, self.rank(),
                   "ranks holds " + to->describe() + ", not one rank per item (" +
                       std::to_string(x.size()) + ")");
          const auto dest = to ? to->as<const std::int32_t>() : std::span<const std::int32_t>();
          self.run(call, [&](C& c) {
            for (std::size_t i = 0; i < x.size(); ++i) {
              if (to)
                c.async_insert(x[i], dest[i]);
              else
                c.async_insert(x[i]);
            }
          });
        };
        if constexpr (std::is_same_v<T, std::string>) {
          const key_batch<std::string> k(items, call, self.rank(), "items");
          put(k.keys());
        } else {
          const buffer b(items.ptr(), false, call, self.rank(), "items");
          put(values_of<T>(b, b.count(), call, self.rank(), "items"));
        }
      },
      nb::arg("items"), nb::arg("ranks").none());
  cls.def("rebalance",
          [](held<C>& self) { self.run("Bag.rebalance", [](C& c) { c.rebalance(); }); });
  cls.def("shuffle", [](held<C>& self, std::uint64_t seed) {
    self.run("Bag.shuffle", [&](C& c) { c.shuffle(seed); });
  });
  cls.def("local", [](held<C>& self) {
    const auto& mine = self.part("Bag.local").local();
    return items_out(std::vector<T>(mine.begin(), mine.end()));
  });
  def_factory<C, std::size_t>(on, factory.c_str(), [](const auto& ranks, std::size_t buffer_bytes) {
    return std::make_unique<C>(ranks, options_of(buffer_bytes, 0));
  });
}

// Binds every container class and factory for `Route`, their names ending in `suffix`
// ("_CountingSet_int" + suffix, "_counting_set_int" + suffix, ...).
// (nanobind copies the names it is given, so temporaries do.)
template <class Route>
void bind_routed(nb::module_& m, const factories& on, const std::string& suffix) {
  const auto n = [&](const char* base) { return base + suffix; };
  bind_counting_set<std::int64_t, Route>(m, on, n("_CountingSet_int"), n("_counting_set_int"));
  bind_counting_set<std::string, Route>(m, on, n("_CountingSet_str"), n("_counting_set_str"));
  bind_set<std::int64_t, Route>(m, on, n("_Set_int"), n("_set_int"));
  bind_set<std::string, Route>(m, on, n("_Set_str"), n("_set_str"));
  bind_disjoint_set<std::int64_t, Route>(m, on, n("_DisjointSet_int"), n("_disjoint_set_int"));
  bind_disjoint_set<std::string, Route>(m, on, n("_DisjointSet_str"), n("_disjoint_set_str"));
  bind_map<std::int64_t, std::int64_t, Route>(m, on, n("_Map_int_int"), n("_map_int_int"));
  bind_map<std::int64_t, double, Route>(m, on, n("_Map_int_float"), n("_map_int_float"));
  bind_map<std::string, std::int64_t, Route>(m, on, n("_Map_str_int"), n("_map_str_int"));
  bind_map<std::string, double, Route>(m, on, n("_Map_str_float"), n("_map_str_float"));
  bind_array<std::int64_t, Route>(m, on, n("_Array_int"), n("_array_int"));
  bind_array<double, Route>(m, on, n("_Array_float"), n("_array_float"));
  bind_bag<std::int64_t, Route>(m, on, n("_Bag_int"), n("_bag_int"));
  bind_bag<double, Route>(m, on, n("_Bag_float"), n("_bag_float"));
  bind_bag<std::string, Route>(m, on, n("_Bag_str"), n("_bag_str"));
}

/// The grid route's classes (containers_grid.cpp).
void bind_grid(nb::module_& m, const factories& on);

}  // namespace cairn_python::containers_detail
