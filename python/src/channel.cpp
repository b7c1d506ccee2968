// cairn.Channel: items are sent by the batch in C++ on cairn's channel hot path; arrivals
// collect in C++ arrays, and the Python handler gets them as numpy arrays (local indices and
// values), a batch at a time, never one Python call per item.
#include "channel.hpp"

#include <algorithm>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "collectives.hpp"
#include "gil.hpp"
#include "numpy.hpp"

namespace cairn_python {
namespace {

/// An item with a value.
template <class V>
struct keyed {
  std::uint64_t key;
  V value;
};

/// The value type of an item type (char, unused, for bare keys).
template <class T>
struct value_of {
  using type = char;
};
template <class V>
struct value_of<keyed<V>> {
  using type = V;
};
template <class T>
using value_t = typename value_of<T>::type;
template <class T>
inline constexpr bool has_value = !std::is_same_v<T, std::uint64_t>;

template <class T>
std::uint64_t key_of(const T& x) {
  if constexpr (has_value<T>)
    return x.key;
  else
    return x;
}

/// An item's key, for combining.
struct key_field {
  template <class T>
  std::uint64_t operator()(const T& x) const noexcept {
    return key_of(x);
  }
};

/// combine=SUM, MIN or MAX, chosen when the channel is made.
struct value_merge {
  op_kind k = op_kind::sum;
  template <class V>
  void operator()(keyed<V>& buffered, const keyed<V>& x) const {
    switch (k) {
      case op_kind::min: buffered.value = std::min(buffered.value, x.value); break;
      case op_kind::max: buffered.value = std::max(buffered.value, x.value); break;
      default: buffered.value += x.value; break;
    }
  }
};

/// The channel's distribution: of keys, or of items by their key.
template <class T>
using distribution_t =
    std::conditional_t<has_value<T>,
                       cairn::msg::keyed_distribution<cairn::block_distribution, key_field>,
                       cairn::block_distribution>;

template <class T>
distribution_t<T> distribution_of(const cairn::block_distribution& d) {
  if constexpr (has_value<T>)
    return d.of(key_field{});
  else
    return d;
}

template <class T, class Route, class Combine>
class channel_impl final : public channel_base {
 public:
  /// The channel's handler: called per item on the rank's thread, with the GIL released.
  struct collect {
    channel_impl* self;
    void operator()(const T& x) const { self->arrive(x); }
  };

  template <class Ranks>
  channel_impl(const Ranks& on, std::uint64_t n, std::size_t batch, Route route, Combine combine,
               cairn::channel_options options)
      : dist_(n, on.size()),
        batch_(std::max<std::size_t>(1, batch)),
        channel_(on, distribution_of<T>(dist_), collect{this}, std::move(route), std::move(combine),
                 options) {}

  void send_many(int rank, const buffer& keys, const buffer* values) override {
    using V = value_t<T>;
    std::span<const V> vals;
    if constexpr (has_value<T>) {
      if (values == nullptr) refuse("Channel.send_many", rank, "this channel's items carry values");
      const element want = std::is_same_v<V, double> ? element::float64 : element::int64;
      if (values->type() != want || values->count() != keys.count())
        refuse("Channel.send_many", rank,
               "values holds " + values->describe() + ", not " + to_string(want) + "[" +
                   std::to_string(keys.count()) + "] (one per key)");
      vals = values->as<const V>();
    } else if (values != nullptr) {
      refuse("Channel.send_many", rank, "this channel's items have no values");
    }
    const bool integers = with_element(keys.type(), [&]<class K>() {
      if constexpr (std::is_integral_v<K> && sizeof(K) >= 4) {
        const auto k = keys.as<const K>();
        if constexpr (std::is_signed_v<K>)  // before anything is sent
          for (std::size_t i = 0; i < k.size(); ++i)
            if (k[i] < 0)
              refuse("Channel.send_many", rank,
                     "key " + std::to_string(k[i]) + " (at " + std::to_string(i) + ") is negative");
        unlocked gil_free;
        for (std::size_t i = 0; i < k.size(); ++i) {
          const auto key = static_cast<std::uint64_t>(k[i]);
          if constexpr (has_value<T>)
            channel_.send(T{key, vals[i]});
          else
            channel_.send(key);
        }
      } else {
        refuse("Channel.send_many", rank,
               "keys hold " + keys.describe() + ": pass int32, uint32, int64 or uint64 keys");
      }
    });
    if (!integers)
      refuse("Channel.send_many", rank, "keys hold " + keys.describe() + ": not integers");
    sent_ += keys.count();
  }

  void flush() override {
    unlocked gil_free;
    channel_.flush();
  }

  std::uint64_t deliver() override {
    std::uint64_t handed = 0;
    while (handler_ && !local_.empty()) {
      handed += local_.size();
      nb::object local = numpy_of(std::exchange(local_, {}));
      nb::object values = nb::none();
      if constexpr (has_value<T>) values = numpy_of(std::exchange(values_, {}));
      handler_(local, values);  // may send (and so collect) more
    }
    return handed;
  }

  [[nodiscard]] std::uint64_t sent() const override { return sent_; }
  [[nodiscard]] std::uint64_t local_size(int r) const override { return dist_.local_size(r); }
  void set_handler(nb::object h) override { handler_ = std::move(h); }
  nb::object release_handler() override { return std::move(handler_); }

 private:
  void arrive(const T& x) {
    local_.push_back(static_cast<std::int64_t>(dist_.local_index(key_of(x))));
    if constexpr (has_value<T>) values_.push_back(x.value);
    if (local_.size() >= batch_) {
      locked python;  // this thread released the GIL in the call that got here
      deliver();
    }
  }

  cairn::block_distribution dist_;
  nb::object handler_;
  std::size_t batch_;
  std::vector<std::int64_t> local_;
  std::vector<value_t<T>> values_;
  std::uint64_t sent_ = 0;
  cairn::msg::channel<T, distribution_t<T>, collect, Route, Combine> channel_;
};

template <class T, class Ranks, class Route, class Combine>
std::unique_ptr<channel_base> make_with(const Ranks& w, std::uint64_t n, std::size_t batch,
                                        Route route, Combine combine,
                                        const cairn::channel_options& o) {
  return std::make_unique<channel_impl<T, Route, Combine>>(w, n, batch, route, std::move(combine),
                                                           o);
}

template <class Ranks, class Route>
std::unique_ptr<channel_base> make_routed(const Ranks& w, std::uint64_t n, item_value value,
                                          combining c, op_kind merge_op, Route route,
                                          std::size_t batch, const cairn::channel_options& o) {
  const auto merge = cairn::combine::merge(key_field{}, value_merge{merge_op});
  switch (value) {
    case item_value::none:
      if (c == combining::dedup)
        return make_with<std::uint64_t>(w, n, batch, route, cairn::combine::dedup{}, o);
      return make_with<std::uint64_t>(w, n, batch, route, cairn::combine::none{}, o);
    case item_value::int64:
      if (c == combining::merge)
        return make_with<keyed<std::int64_t>>(w, n, batch, route, merge, o);
      return make_with<keyed<std::int64_t>>(w, n, batch, route, cairn::combine::none{}, o);
    case item_value::float64:
      if (c == combining::merge) return make_with<keyed<double>>(w, n, batch, route, merge, o);
      return make_with<keyed<double>>(w, n, batch, route, cairn::combine::none{}, o);
  }
  return nullptr;
}

}  // namespace

template <class Ranks>
std::unique_ptr<channel_base> make_channel(const Ranks& w, std::uint64_t n, item_value value,
                                           combining c, op_kind merge_op, route_kind route,
                                           std::size_t batch, std::size_t buffer_items) {
  const int rank = cairn::msg::detail::world_of(w).rank();
  const char* call = std::is_same_v<Ranks, cairn::group> ? "Group.channel" : "World.channel";
  if (value == item_value::none && c == combining::merge)
    refuse(call, rank,
           "combine=" + std::string(to_string(merge_op)) +
               " merges values, and this channel's items have none");
  if (value != item_value::none && c == combining::dedup)
    refuse(call, rank,
           "combine='dedup' drops repeated keys; items with values merge "
           "(combine=SUM, MIN or MAX)");
  if (c == combining::merge && merge_op != op_kind::sum && merge_op != op_kind::min &&
      merge_op != op_kind::max)
    refuse(call, rank,
           "combine=" + std::string(to_string(merge_op)) + ": SUM, MIN, MAX or 'dedup'");
  cairn::channel_options o;
  o.buffer_items = buffer_items;
  o.name = "Channel";
  if (route == route_kind::grid)
    return make_routed(w, n, value, c, merge_op, cairn::route::grid{}, batch, o);
  return make_routed(w, n, value, c, merge_op, cairn::route::direct{}, batch, o);
}

template std::unique_ptr<channel_base> make_channel(const cairn::world&, std::uint64_t, item_value,
                                                    combining, op_kind, route_kind, std::size_t,
                                                    std::size_t);
template std::unique_ptr<channel_base> make_channel(const cairn::group&, std::uint64_t, item_value,
                                                    combining, op_kind, route_kind, std::size_t,
                                                    std::size_t);

}  // namespace cairn_python
