#pragma once
/// \file
/// Point-to-point of values (a mixin of `world`): `w.send(x, dest, tag)`,
/// `T v = w.recv<T>(source, tag)`, `w.isend(x, dest, tag)`, `value_request<T> r =
/// w.irecv<T>(source, tag)`, for every cairn::sendable type.
///
/// How a value travels: a trivially copyable value as its bytes (no copy on either side); a
/// contiguous range of trivially copyable elements (vector, string, span, ...) as its elements
/// (through world::send's range form), so `recv<std::vector<double>>` receives what
/// `send(vector)` sent, sized by the message; every other type serialized (cairn/runtime/
/// serialize.hpp). Sizes travel with the message: the receiver never passes a byte count.

#include <memory>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "cairn/runtime/detail/fail.hpp"
#include "cairn/runtime/detail/sized_receive.hpp"
#include "cairn/runtime/detail/transferable.hpp"
#include "cairn/runtime/operation.hpp"
#include "cairn/runtime/request.hpp"
#include "cairn/runtime/serialize.hpp"
#include "cairn/runtime/status.hpp"
#include "cairn/runtime/value_request.hpp"

namespace cairn {

namespace detail {
/// A contiguous range of transferable elements a receiver can size (vector, basic_string).
template <class T>
concept resizable_data = contiguous_data<T> && std::is_default_constructible_v<T> &&
    requires(T& t, std::size_t n) {
  t.resize(n);
};

/// A single value (not a range of elements, not a pointer) that a value form moves.
template <class T>
concept single_value = sendable<T> && !contiguous_data<T> && !std::is_pointer_v<T>;

/// What a value receive accepts: single values and sizable ranges of elements.
template <class T>
concept receivable_value = single_value<T> || resizable_data<T>;

/// Throws unless a message of `bytes` bytes holds one T (trivially copyable: exactly its
/// size) or whole elements of a resizable range.
template <class T>
void check_value_bytes(const char* call, int rank, const status& st) {
  if constexpr (resizable_data<T>) {
    using E = std::ranges::range_value_t<T>;
    if (st.bytes % sizeof(E) != 0)
      fail(call, rank, "message of ", st.bytes, " bytes from rank ", st.source, " (tag ", st.tag,
           ") is not a whole number of ", sizeof(E), "-byte elements");
  } else if constexpr (transferable<T>) {
    if (st.bytes != sizeof(T))
      fail(call, rank, "message of ", st.bytes, " bytes from rank ", st.source, " (tag ", st.tag,
           ") does not hold one ", sizeof(T), "-byte value");
  }
}

/// The sink of a value receive (world::irecv_sized): sizes a range by the message, or receives
/// the bytes and deserializes them into the slot's value.
template <class T>
sized_sink value_sink(value_slot<T>* slot) {
  sized_sink sink;
  sink.target = slot;
  sink.buffer = [](void* target, const status& st) -> void* {
    auto& s = *static_cast<value_slot<T>*>(target);
    check_value_bytes<T>(s.call, s.rank, st);
    if constexpr (resizable_data<T>) {
      s.value.resize(st.bytes / sizeof(std::ranges::range_value_t<T>));
      return std::ranges::data(s.value);
    } else {
      s.bytes.resize(st.bytes);
      return s.bytes.data();
    }
  };
  sink.complete = [](void* target, const status& st) {
    auto& s = *static_cast<value_slot<T>*>(target);
    s.st = st;
    if constexpr (!resizable_data<T>) {
      deserialize_into(s.bytes, s.value, s.call, s.rank);
      s.bytes = {};
    }
  };
  return sink;
}

/// Sends serialized bytes it owns.
template <class World>
class owned_send final : public operation {
 public:
  owned_send(World w, std::vector<std::byte> bytes, int dest, int tag)
      : bytes_(std::move(bytes)),
        inner_(w.isend_bytes("isend", bytes_.data(), bytes_.size(), dest, tag)) {}
  bool advance() override { return inner_.test(); }
  [[nodiscard]] std::string describe() const override { return "send of a serialized value"; }

 private:
  std::vector<std::byte> bytes_;
  request inner_;
};
}  // namespace detail

/// The value forms of point-to-point (a mixin of `world`: `World` provides iprobe, probe and
/// the byte-level calls).
template <class World>
class p2p_value_calls {
 public:
  /// Sends one value to rank `dest`: a trivially copyable one as its bytes, any other
  /// serialized. (Ranges of trivially copyable elements go through the range form.)
  template <detail::single_value T>
  void send(const T& value, int dest, int tag = 0) {
    if constexpr (detail::transferable<T>) {
      self().send_bytes("send", &value, sizeof(T), dest, tag);
    } else {
      const std::vector<std::byte> bytes = serialize(value);
      self().send_bytes("send", bytes.data(), bytes.size(), dest, tag);
    }
  }

  /// Starts sending one value. A trivially copyable value is sent from where it is (no copy),
  /// so it must outlive the request: temporaries do not compile. Any other value is
  /// serialized at once into a buffer the request owns (temporaries welcome).
  template <detail::single_value T>
  request isend(const T& value, int dest, int tag = 0) {
    if constexpr (detail::transferable<T>) {
      return self().isend_bytes("isend", &value, sizeof(T), dest, tag);
    } else {
      return start_operation(
          self(), "isend",
          std::make_unique<detail::owned_send<World>>(self(), serialize(value), dest, tag));
    }
  }
  /// Rejected: the request would read the temporary after it is gone.
  template <detail::single_value T>
  requires detail::transferable<T> request isend(const T&& value, int dest, int tag = 0)
  = delete;

  /// Receives one value from `source` (or any_source) with `tag` (or any_tag): a trivially
  /// copyable T exactly its size; a vector or string sized by the message; any other T
  /// deserialized. A message that does not hold a T is a cairn::error.
  template <detail::receivable_value T>
  T recv(int source, int tag = 0) {
    status st;
    return recv<T>(source, tag, st);
  }
  /// As above, also giving the status of the message.
  template <detail::receivable_value T>
  T recv(int source, int tag, status& st) {
    World& w = self();
    if constexpr (detail::transferable<T> && !detail::resizable_data<T>) {
      T value;
      st = w.recv_bytes("recv", &value, sizeof(T), source, tag);
      detail::check_value_bytes<T>("recv", w.rank(), st);
      return value;
    } else {
      detail::value_slot<T> slot;
      slot.call = "recv";
      slot.rank = w.rank();
      w.irecv_sized("recv", source, tag, detail::value_sink(&slot)).wait();
      st = slot.st;
      return std::move(slot.value);
    }
  }

  /// Starts receiving one value (see recv<T>); the request yields it.
  template <detail::receivable_value T>
  value_request<T> irecv(int source, int tag = 0) {
    World& w = self();
    auto slot = std::make_unique<detail::value_slot<T>>();
    slot->rank = w.rank();
    if constexpr (detail::transferable<T> && !detail::resizable_data<T>) {
      slot->check = [](detail::value_slot<T>& s, const status& st) {
        s.st = st;
        detail::check_value_bytes<T>("irecv", s.rank, st);
      };
      request r = w.irecv_bytes("irecv", &slot->value, sizeof(T), source, tag);
      return value_request<T>(std::move(r), std::move(slot));
    } else {
      slot->call = "irecv";
      request r = w.irecv_sized("irecv", source, tag, detail::value_sink(slot.get()));
      return value_request<T>(std::move(r), std::move(slot));
    }
  }

 private:
  World& self() { return static_cast<World&>(*this); }
};

}  // namespace cairn
