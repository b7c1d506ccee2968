#pragma once
/// \file
/// Values of any type: which types cairn moves as their bytes (trivially copyable: zero copy,
/// no serialization), which it serializes (everything cereal can save and load: standard
/// containers, strings, tuples, pairs, optionals, variants, maps, sets, and user types with a
/// `serialize` member or free function, or `save`/`load`), and the serialization itself.
///
/// The wire form of a serialized value is cereal's binary form (host byte order; sizes as
/// 64-bit integers), written straight into a byte vector: no iostreams on the way.

#include <cereal/cereal.hpp>
#include <cereal/types/array.hpp>
#include <cereal/types/bitset.hpp>
#include <cereal/types/chrono.hpp>
#include <cereal/types/complex.hpp>
#include <cereal/types/deque.hpp>
#include <cereal/types/list.hpp>
#include <cereal/types/map.hpp>
#include <cereal/types/optional.hpp>
#include <cereal/types/set.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/tuple.hpp>
#include <cereal/types/unordered_map.hpp>
#include <cereal/types/unordered_set.hpp>
#include <cereal/types/utility.hpp>
#include <cereal/types/variant.hpp>
#include <cereal/types/vector.hpp>
#include <cstddef>
#include <cstring>
#include <exception>
#include <span>
#include <type_traits>
#include <typeinfo>
#include <vector>

#include "cairn/runtime/detail/fail.hpp"
#include "cairn/runtime/detail/transferable.hpp"

namespace cairn::detail {

/// cereal output archive that appends to a byte vector (cereal's binary form).
class byte_writer : public cereal::OutputArchive<byte_writer, cereal::AllowEmptyClassElision> {
 public:
  /// Appends to `out`.
  explicit byte_writer(std::vector<std::byte>& out)
      : cereal::OutputArchive<byte_writer, cereal::AllowEmptyClassElision>(this), out_(out) {}
  /// Appends `n` bytes at `data`.
  void save_binary(const void* data, std::size_t n) {
    const std::size_t at = out_.size();
    out_.resize(at + n);
    if (n != 0) std::memcpy(out_.data() + at, data, n);
  }

 private:
  std::vector<std::byte>& out_;
};

/// cereal input archive over a byte span; reading past its end throws cereal::Exception.
class byte_reader : public cereal::InputArchive<byte_reader, cereal::AllowEmptyClassElision> {
 public:
  /// Reads from `in`.
  explicit byte_reader(std::span<const std::byte> in)
      : cereal::InputArchive<byte_reader, cereal::AllowEmptyClassElision>(this), in_(in) {}
  /// Reads the next `n` bytes into `data`.
  void load_binary(void* data, std::size_t n) {
    if (n > in_.size() - at_) throw cereal::Exception("read past the end of the message");
    if (n != 0) std::memcpy(data, in_.data() + at_, n);
    at_ += n;
  }
  /// Bytes not read yet.
  [[nodiscard]] std::size_t remaining() const noexcept { return in_.size() - at_; }

 private:
  std::span<const std::byte> in_;
  std::size_t at_ = 0;
};

// The archives' primitives, found by argument-dependent lookup from cereal (as cereal's own
// binary archive defines them for its archives).
/// Saves an arithmetic value as its bytes.
template <class T>
requires std::is_arithmetic_v<T>
void CEREAL_SAVE_FUNCTION_NAME(byte_writer& ar, const T& t) { ar.save_binary(&t, sizeof t); }
/// Loads an arithmetic value from its bytes.
template <class T>
requires std::is_arithmetic_v<T>
void CEREAL_LOAD_FUNCTION_NAME(byte_reader& ar, T& t) { ar.load_binary(&t, sizeof t); }
/// Names are not stored.
template <class Archive, class T>
requires std::is_same_v<Archive, byte_writer> || std::is_same_v<Archive, byte_reader>
void CEREAL_SERIALIZE_FUNCTION_NAME(Archive& ar, cereal::NameValuePair<T>& t) { ar(t.value); }
/// Sizes are stored as cereal::size_type.
template <class Archive, class T>
requires std::is_same_v<Archive, byte_writer> || std::is_same_v<Archive, byte_reader>
void CEREAL_SERIALIZE_FUNCTION_NAME(Archive& ar, cereal::SizeTag<T>& t) { ar(t.size); }
/// Contiguous data (strings, vectors of numbers) in one copy.
template <class T>
void CEREAL_SAVE_FUNCTION_NAME(byte_writer& ar, const cereal::BinaryData<T>& bd) {
  ar.save_binary(bd.data, static_cast<std::size_t>(bd.size));
}
/// Contiguous data in one copy.
template <class T>
void CEREAL_LOAD_FUNCTION_NAME(byte_reader& ar, cereal::BinaryData<T>& bd) {
  ar.load_binary(bd.data, static_cast<std::size_t>(bd.size));
}

}  // namespace cairn::detail

CEREAL_SETUP_ARCHIVE_TRAITS(cairn::detail::byte_reader, cairn::detail::byte_writer)

namespace cairn {

/// Types cairn serializes: not trivially copyable (those move as their bytes), default
/// constructible (a receiver makes one to load into), and saved and loaded by cereal: the
/// standard containers, strings, tuples, pairs, optionals and variants of such types, and user
/// types with a `serialize(Archive&)` member or free function (or `save`/`load`).
template <class T>
concept serializable = !detail::transferable<T> && std::is_default_constructible_v<T> &&
                       cereal::traits::is_output_serializable<T, detail::byte_writer>::value &&
                       cereal::traits::is_input_serializable<T, detail::byte_reader>::value;

/// Every type a value form (send/recv of a value, bcast/gather/... of values) accepts:
/// trivially copyable types (moved as their bytes) and serializable ones.
template <class T>
concept sendable = detail::transferable<T> || serializable<T>;

/// Appends the serialized form of `value` to `out`.
template <serializable T>
void serialize_append(const T& value, std::vector<std::byte>& out) {
  detail::byte_writer ar(out);
  ar(value);
}

/// The serialized form of `value`.
template <serializable T>
[[nodiscard]] std::vector<std::byte> serialize(const T& value) {
  std::vector<std::byte> out;
  serialize_append(value, out);
  return out;
}

/// Loads `value` from exactly the bytes `in` (the form serialize made). Throws cairn::error
/// naming `call`, `rank` and the type when the bytes do not hold one T: too few, some left
/// over, or rejected by T's loader (a sender and receiver that disagree on the type).
template <serializable T>
void deserialize_into(std::span<const std::byte> in, T& value, const char* call = "deserialize",
                      int rank = -1) {
  std::size_t left = 0;
  try {
    detail::byte_reader ar(in);
    ar(value);
    left = ar.remaining();
  } catch (const std::exception& e) {
    detail::fail(call, rank, "a message of ", in.size(), " bytes does not hold a ",
                 typeid(T).name(), " (", e.what(), "); do sender and receiver use the same type?");
  }
  if (left != 0)
    detail::fail(call, rank, "a message of ", in.size(), " bytes holds a ", typeid(T).name(),
                 " and ", left, " bytes more; do sender and receiver use the same type?");
}

/// The T that `in` holds (see deserialize_into).
template <serializable T>
[[nodiscard]] T deserialize(std::span<const std::byte> in, const char* call = "deserialize",
                            int rank = -1) {
  T value{};
  deserialize_into(in, value, call, rank);
  return value;
}

}  // namespace cairn
