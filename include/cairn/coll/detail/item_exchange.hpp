#pragma once
/// \file
/// Internal: the collectives of values whose sizes the receivers do not know (serialized
/// values, lists of items): the sizes first (a block collective of chunk sizes), then the bytes
/// (a v-collective, or a bcast), then the items unpacked. Trivially copyable items travel as
/// their elements, straight from and into the callers' buffers where one chunk is involved;
/// other items are serialized into one buffer per rank (no allocation per item).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <optional>
#include <ranges>
#include <span>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include "cairn/coll/algorithms.hpp"
#include "cairn/coll/detail/prepare.hpp"
#include "cairn/coll/in_place.hpp"
#include "cairn/runtime/detail/fail.hpp"
#include "cairn/runtime/detail/transferable.hpp"
#include "cairn/runtime/operation.hpp"
#include "cairn/runtime/p2p_values.hpp"
#include "cairn/runtime/request.hpp"
#include "cairn/runtime/serialize.hpp"
#include "cairn/runtime/value_request.hpp"

namespace cairn::detail {

/// An item of a list a collective moves: trivially copyable (as its bytes) or serializable,
/// and default constructible (a receiver makes the items it loads into).
template <class E>
concept coll_item = std::is_default_constructible_v<E> &&(transferable<E> || serializable<E>);

/// True for std::vector of serializable items.
template <class T>
struct is_vector_of_serializable : std::false_type {};
/// A std::vector of serializable items.
template <class E, class A>
struct is_vector_of_serializable<std::vector<E, A>> : std::bool_constant<serializable<E>> {};

/// A value the collectives move as a list of items: a resizable range of trivially copyable
/// elements (std::vector, std::string), sized by the message, or a std::vector of
/// serializable items (each serialized into one buffer).
template <class T>
concept item_list = std::is_default_constructible_v<T> &&
    (resizable_data<T> || is_vector_of_serializable<T>::value);

/// A single value of the value collectives: trivially copyable or serializable, not a range of
/// trivially copyable elements, default constructible.
template <class T>
concept coll_single = single_value<T> && std::is_default_constructible_v<T> &&
    !std::is_same_v<std::remove_cv_t<T>, in_place_t>;

/// Every value the value collectives take (bcast, gather, allgather, scatter, alltoall): a
/// single value or a list of items.
template <class T>
concept coll_value = coll_single<T> || item_list<T>;

/// A single trivially copyable value: the value collectives run the buffer collectives on it.
template <class T>
concept trivial_single = coll_single<T> && transferable<T>;

/// Items a v-collective takes from a rank: a sized range of serializable items, or a
/// contiguous range of trivially copyable ones.
template <class R>
concept item_range = std::ranges::sized_range<R> && std::ranges::input_range<R> &&
    coll_item<std::ranges::range_value_t<R>> &&
    (contiguous_data<R> || serializable<std::ranges::range_value_t<R>>);

/// The items of a list value (its elements).
template <class T>
using list_item_t = std::ranges::range_value_t<T>;

/// The size of one rank's chunk of items.
struct chunk_size {
  std::uint64_t items = 0;  ///< how many items
  std::uint64_t bytes = 0;  ///< how many bytes they take on the wire
};

/// The pattern of an item exchange.
enum class exchange_kind : std::uint8_t { bcast, gather, allgather, scatter, alltoall };

/// One collective of items of type E: packing, its two stages (sizes, data) and unpacking.
/// Chunks go out in group-rank order (one per destination for scatter and alltoall, one
/// otherwise) and come in in group-rank order (one per source for gather, allgather and
/// alltoall, one otherwise).
template <coll_item E>
class item_exchange {
 public:
  /// Trivially copyable items travel as their bytes.
  static constexpr bool by_bytes = transferable<E>;

  /// An exchange of `kind` on `t` (group size `p`), rooted at `root` for bcast, gather and
  /// scatter.
  item_exchange(coll_target t, const char* call, exchange_kind kind, int p, int root = -1)
      : t_(std::move(t)), call_(call), kind_(kind), p_(p), root_(root) {
    if (kind == exchange_kind::bcast || kind == exchange_kind::gather ||
        kind == exchange_kind::scatter) {
      if (root < 0 || root >= p)
        fail(call, t_.world_rank, "root ", root, " is outside the group of ", p, " ranks");
    }
  }
  item_exchange(const item_exchange&) = delete;
  item_exchange& operator=(const item_exchange&) = delete;

  /// This member's rank in the group.
  [[nodiscard]] int rank() const noexcept { return t_.group_rank; }
  /// The root (-1 where there is none).
  [[nodiscard]] int root() const noexcept { return root_; }
  /// Whether this member receives anything (not a bcast's root, not a gather's non-root).
  [[nodiscard]] bool receives() const noexcept {
    if (kind_ == exchange_kind::bcast) return rank() != root_;
    if (kind_ == exchange_kind::gather) return rank() == root_;
    return true;
  }

  /// Reserves room for the outgoing chunks (their number).
  void expect_chunks(std::size_t n) { send_sizes_.reserve(n); }

  /// Appends an outgoing chunk: `items`, packed (copied or serialized) into this exchange.
  template <class R>
  void add_chunk(const R& items) {
    chunk_size c;
    const std::size_t before = send_owned_.size();
    if constexpr (by_bytes) {
      const std::size_t n = std::ranges::size(items);
      const std::size_t b = checked_bytes(call_, t_.world_rank, n, sizeof(E));
      send_owned_.resize(before + b);
      if (b != 0) std::memcpy(send_owned_.data() + before, std::ranges::data(items), b);
      c.items = n;
    } else if constexpr (std::is_same_v<E, std::string>) {
      // Strings in cereal's form (a 64-bit size, the characters), written in one pass.
      std::size_t b = 0;
      for (const std::string& x : items) b += sizeof(std::uint64_t) + x.size();
      send_owned_.resize(before + b);
      std::byte* at = send_owned_.data() + before;
      for (const std::string& x : items) {
        const std::uint64_t n = x.size();
        std::memcpy(at, &n, sizeof n);
        if (n != 0) std::memcpy(at + sizeof n, x.data(), x.size());
        at += sizeof n + x.size();
        ++c.items;
      }
    } else {
      byte_writer ar(send_owned_);
      for (const auto& x : items) {
        ar(x);
        ++c.items;
      }
    }
    c.bytes = send_owned_.size() - before;
    send_sizes_.push_back(c);
    send_data_ = send_owned_.data();
    send_len_ = send_owned_.size();
  }
  /// Appends one outgoing chunk of one item.
  void add_item(const E& x) { add_chunk(std::span<const E>(&x, 1)); }
  /// The one outgoing chunk, sent from the caller's elements (trivially copyable items; they
  /// must stay untouched until the exchange completed).
  void view_chunk(std::span<const E> items) requires by_bytes {
    const std::size_t b = checked_bytes(call_, t_.world_rank, items.size(), sizeof(E));
    send_sizes_.push_back({items.size(), b});
    send_data_ = reinterpret_cast<const std::byte*>(items.data());
    send_len_ = b;
  }

  /// Stage 1: the chunk sizes (started at once, in issue order).
  prepared sizes() {
    const auto me = static_cast<std::size_t>(rank());
    const auto p = static_cast<std::size_t>(p_);
    constexpr std::size_t cs = sizeof(chunk_size);
    switch (kind_) {
      case exchange_kind::bcast:
        if (rank() == root_) bcast_size_ = send_sizes_.at(0);
        return prepare_bcast(t_, call_, &bcast_size_, cs, root_, bcast_algorithm::automatic);
      case exchange_kind::gather:
        recv_sizes_.resize(me == static_cast<std::size_t>(root_) ? p : 0);
        return prepare_gather(t_, call_, sizes_buffers(1, recv_sizes_.size()), root_);
      case exchange_kind::allgather:
        recv_sizes_.resize(p);
        return prepare_allgather(t_, call_, sizes_buffers(1, p), allgather_algorithm::automatic);
      case exchange_kind::scatter:
        recv_sizes_.resize(1);
        return prepare_scatter(t_, call_, sizes_buffers(rank() == root_ ? p : 0, 1), root_);
      case exchange_kind::alltoall:
        recv_sizes_.resize(p);
        return prepare_alltoall(t_, call_, sizes_buffers(p, p), alltoall_algorithm::automatic);
    }
    return {};
  }

  /// Stage 2: the data, once the sizes are in. `by_messages`: the collective must run by
  /// messages (a reserved start), so a bcast's algorithm is forced off the board.
  prepared data(bool by_messages) {
    const auto me = static_cast<std::size_t>(rank());
    switch (kind_) {
      case exchange_kind::bcast: {
        if (rank() != root_) recv_sizes_.assign(1, bcast_size_);
        void* buf = rank() == root_ ? const_cast<std::byte*>(send_data_) : alloc_recv();
        const auto bytes = static_cast<std::size_t>(bcast_size_.bytes);
        bcast_algorithm alg = bcast_algorithm::automatic;
        if (by_messages)
          alg = bytes >= (std::size_t{512} << 10) && p_ > 2 ? bcast_algorithm::scatter_allgather
                                                            : bcast_algorithm::binomial;
        return prepare_bcast(t_, call_, buf, bytes, root_, alg);
      }
      case exchange_kind::gather: {
        void* out = nullptr;
        std::size_t total = 0;
        if (me == static_cast<std::size_t>(root_)) {
          out = alloc_recv();
          total = layout(recv_sizes_, rcounts_);
        }
        return prepare_gatherv(t_, call_, {send_data_, send_len_, out, total, 1}, {rcounts_, {}},
                               root_);
      }
      case exchange_kind::allgather: {
        void* out = alloc_recv();
        const std::size_t total = layout(recv_sizes_, rcounts_);
        return prepare_allgatherv(t_, call_, {send_data_, send_len_, out, total, 1},
                                  {rcounts_, {}});
      }
      case exchange_kind::scatter: {
        void* out = alloc_recv();
        if (rank() == root_) layout(send_sizes_, scounts_);
        return prepare_scatterv(
            t_, call_,
            {send_data_, send_len_, out, static_cast<std::size_t>(recv_sizes_[0].bytes), 1},
            {scounts_, {}}, root_);
      }
      case exchange_kind::alltoall: {
        void* out = alloc_recv();
        layout(send_sizes_, scounts_);
        const std::size_t total = layout(recv_sizes_, rcounts_);
        return prepare_alltoallv(t_, call_, {send_data_, send_len_, out, total, 1}, {scounts_, {}},
                                 {rcounts_, {}});
      }
    }
    return {};
  }

  /// The incoming chunks' items, concatenated in rank order.
  std::vector<E> items() {
    if constexpr (by_bytes) {
      return std::move(elems_);
    } else {
      std::vector<E> out(total_items());
      std::size_t at = 0, item = 0;
      for (std::size_t r = 0; r < recv_sizes_.size(); ++r) {
        const auto b = static_cast<std::size_t>(recv_sizes_[r].bytes);
        const auto n = static_cast<std::size_t>(recv_sizes_[r].items);
        load(incoming().subspan(at, b), out.data() + item, n, r);
        at += b;
        item += n;
      }
      return out;
    }
  }

  /// The incoming chunks, one list of type L per chunk (rank order).
  template <class L>
  std::vector<L> lists() {
    std::vector<L> out(recv_sizes_.size());
    std::size_t at = 0, item = 0;
    for (std::size_t r = 0; r < recv_sizes_.size(); ++r) {
      const auto n = static_cast<std::size_t>(recv_sizes_[r].items);
      out[r].resize(n);
      if constexpr (by_bytes) {
        if (n != 0) std::memcpy(std::ranges::data(out[r]), elems_.data() + item, n * sizeof(E));
      } else {
        const auto b = static_cast<std::size_t>(recv_sizes_[r].bytes);
        load(incoming().subspan(at, b), std::ranges::data(out[r]), n, r);
        at += b;
      }
      item += n;
    }
    return out;
  }

  /// The one incoming chunk as a list of type L.
  template <class L>
  L list() {
    if constexpr (std::is_same_v<L, std::vector<E>>) {
      return items();
    } else {
      auto all = lists<L>();
      return std::move(all.at(0));
    }
  }

  /// The one incoming chunk's one item.
  E item() {
    if (total_items() != 1)
      fail(call_, t_.world_rank, "received ", total_items(),
           " values where one was expected; do all ranks call the same form?");
    if constexpr (by_bytes) {
      return elems_[0];
    } else {
      E v{};
      load(incoming(), &v, 1, 0);
      return v;
    }
  }

 private:
  // The sizes' buffers for stage 1: `outgoing` and `incoming` chunk sizes.
  block_buffers sizes_buffers(std::size_t outgoing, std::size_t incoming) {
    if (send_sizes_.size() < outgoing) send_sizes_.resize(outgoing);
    return {send_sizes_.data(), outgoing, recv_sizes_.data(), incoming, sizeof(chunk_size)};
  }

  [[nodiscard]] std::size_t total_items() const {
    std::size_t n = 0;
    for (const chunk_size& c : recv_sizes_) n += static_cast<std::size_t>(c.items);
    return n;
  }

  // The incoming bytes (serialized items).
  [[nodiscard]] std::span<const std::byte> incoming() const { return {bytes_.get(), bytes_len_}; }

  // Byte counts per chunk (packed in rank order) in `counts`; returns their sum.
  std::size_t layout(const std::vector<chunk_size>& sizes, std::vector<std::size_t>& counts) {
    counts.resize(sizes.size());
    std::size_t total = 0;
    for (std::size_t r = 0; r < sizes.size(); ++r) {
      counts[r] = static_cast<std::size_t>(sizes[r].bytes);
      total += counts[r];
    }
    return total;
  }

  // The receive buffer for the incoming chunks (elements, or bytes to load from).
  void* alloc_recv() {
    std::size_t items = 0, bytes = 0;
    for (const chunk_size& c : recv_sizes_) {
      items += static_cast<std::size_t>(c.items);
      bytes += static_cast<std::size_t>(c.bytes);
    }
    if constexpr (by_bytes) {
      if (bytes != items * sizeof(E))
        fail(call_, t_.world_rank, "a peer announced ", items, " items in ", bytes,
             " bytes; do all ranks use the same type?");
      elems_.resize(items);
      return elems_.data();
    } else {
      bytes_ = std::make_unique_for_overwrite<std::byte[]>(bytes);  // (no zero fill)
      bytes_len_ = bytes;
      return bytes_.get();
    }
  }

  // Loads `n` items from exactly `in` into `to` (chunk `r`).
  void load(std::span<const std::byte> in, E* to, std::size_t n,
            std::size_t r) requires(!by_bytes) {
    if constexpr (std::is_same_v<E, std::string>) {
      // The form add_chunk wrote (cereal's), read in one pass.
      std::size_t at = 0;
      for (std::size_t i = 0; i < n; ++i) {
        std::uint64_t len = 0;
        if (in.size() - at < sizeof len) truncated(in.size(), n, r);
        std::memcpy(&len, in.data() + at, sizeof len);
        at += sizeof len;
        if (in.size() - at < len) truncated(in.size(), n, r);
        to[i].assign(reinterpret_cast<const char*>(in.data() + at), static_cast<std::size_t>(len));
        at += static_cast<std::size_t>(len);
      }
      if (at != in.size()) left_over(in.size(), n, r, in.size() - at);
      return;
    }
    std::size_t left = 0;
    try {
      byte_reader ar(in);
      for (std::size_t i = 0; i < n; ++i) ar(to[i]);
      left = ar.remaining();
    } catch (const std::exception& e) {
      fail(call_, t_.world_rank, "the ", in.size(), " bytes of chunk ", r, " do not hold ", n, " ",
           typeid(E).name(), " (", e.what(), "); do all ranks use the same type?");
    }
    if (left != 0) left_over(in.size(), n, r, left);
  }
  [[noreturn]] void truncated(std::size_t bytes, std::size_t n, std::size_t r) const {
    fail(call_, t_.world_rank, "the ", bytes, " bytes of chunk ", r, " do not hold ", n, " ",
         typeid(E).name(), "; do all ranks use the same type?");
  }
  [[noreturn]] void left_over(std::size_t bytes, std::size_t n, std::size_t r,
                              std::size_t left) const {
    fail(call_, t_.world_rank, "the ", bytes, " bytes of chunk ", r, " hold ", n, " ",
         typeid(E).name(), " and ", left, " bytes more; do all ranks use the same type?");
  }

  coll_target t_;
  const char* call_;
  exchange_kind kind_;
  int p_;
  int root_;
  std::vector<chunk_size> send_sizes_, recv_sizes_;
  chunk_size bcast_size_{};
  std::vector<std::byte> send_owned_;
  const std::byte* send_data_ = nullptr;
  std::size_t send_len_ = 0;
  std::vector<std::size_t> scounts_, rcounts_;
  std::vector<E> elems_;                // by_bytes: the incoming items
  std::unique_ptr<std::byte[]> bytes_;  // serialized: the incoming bytes
  std::size_t bytes_len_ = 0;
};

/// Runs an exchange to its end (a blocking call): sizes, then data.
template <class E>
void run_exchange(item_exchange<E>& x) {
  run_blocking(x.sizes());
  run_blocking(x.data(false));
}

/// A non-blocking exchange: stage 1 started at construction, stage 2 (numbered in issue
/// order at construction) once the sizes are in, then `finish(exchange)` makes the result.
template <class E, class Finish>
class exchange_operation final : public operation {
 public:
  /// Takes the exchange (already packed) and starts its first stage.
  exchange_operation(std::unique_ptr<item_exchange<E>> x, const coll_target& t, Finish finish)
      : x_(std::move(x)), finish_(std::move(finish)), target_(t) {
    req_ = start_prepared(x_->sizes());
    seq_ = reserve_collective(t);
  }
  ~exchange_operation() override {
    if (stage_ == 1) release_collective(target_, seq_);  // withdrawn before its data stage
  }
  bool advance() override {
    if (stage_ == 1) {
      if (!req_.test()) return false;
      req_ = start_reserved(x_->data(true), seq_);
      stage_ = 2;
    }
    if (!req_.test()) return false;
    finish_(*x_);
    x_.reset();
    return true;
  }
  [[nodiscard]] std::string describe() const override {
    return stage_ == 1 ? "value collective (exchanging sizes)"
                       : "value collective (exchanging the data)";
  }

 private:
  std::unique_ptr<item_exchange<E>> x_;
  Finish finish_;
  request req_;
  coll_target target_;
  std::uint32_t seq_ = 0;
  int stage_ = 1;
};

/// Starts a non-blocking exchange; `finish(exchange)` runs once it completed.
template <class E, class Finish>
request start_exchange_request(const coll_target& t, const char* call,
                               std::unique_ptr<item_exchange<E>> x, Finish finish) {
  auto op = std::make_unique<exchange_operation<E, Finish>>(std::move(x), t, std::move(finish));
  return start_operation(*t.ctx, call, std::move(op));
}

/// Starts a non-blocking exchange whose value `finish(exchange, value)` makes.
template <class T, class E, class Finish>
value_request<T> start_exchange(const coll_target& t, const char* call,
                                std::unique_ptr<item_exchange<E>> x, Finish finish) {
  auto slot = std::make_unique<value_slot<T>>();
  slot->rank = t.world_rank;
  T* v = &slot->value;
  request r = start_exchange_request(
      t, call, std::move(x),
      [v, f = std::move(finish)](item_exchange<E>& ex) mutable { f(ex, *v); });
  return value_request<T>(std::move(r), std::move(slot));
}

}  // namespace cairn::detail
