#pragma once
/// \file
/// Internal: values in the payload of a record (serialized items, async arguments, container
/// operations). A trivially copyable value is its bytes; any other serializable value is
/// cereal's binary form (cairn/runtime/serialize.hpp). Several values follow one another.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <exception>
#include <span>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <vector>

#include "cairn/runtime/detail/transferable.hpp"
#include "cairn/runtime/serialize.hpp"

namespace cairn::msg::detail {

/// What a record may carry: values cairn moves as bytes or serializes.
template <class T>
concept packable = cairn::detail::transferable<T> || cairn::serializable<T>;

/// Strings and vectors of trivially copyable elements: packed as a 4-byte count and their
/// bytes (cereal would spend 8 bytes on the count; short keys are the common item).
template <class T>
concept flat_sequence = (std::is_same_v<T, std::basic_string<typename T::value_type>> ||
                         std::is_same_v<T, std::vector<typename T::value_type>>)&&cairn::detail::
                            transferable<typename T::value_type> &&
                        !std::is_same_v<T, std::vector<bool>>;

/// Appends `x` to `out`.
template <class T>
void pack(cairn::detail::byte_writer& out, const T& x) {
  static_assert(packable<T>,
                "a channel item or async argument must be trivially copyable or serializable "
                "(cairn::serializable: cereal saves and loads it)");
  if constexpr (cairn::detail::transferable<T>) {
    out.save_binary(&x, sizeof(T));
  } else if constexpr (flat_sequence<T>) {
    if (x.size() > 0xffffffffu)
      throw cereal::Exception("a string or vector of more than 2^32 - 1 elements");
    const auto n = static_cast<std::uint32_t>(x.size());
    out.save_binary(&n, 4);
    out.save_binary(x.data(), x.size() * sizeof(typename T::value_type));
  } else {
    out(x);
  }
}

/// Reads the next value into `x`.
template <class T>
void unpack(cairn::detail::byte_reader& in, T& x) {
  if constexpr (cairn::detail::transferable<T>) {
    in.load_binary(&x, sizeof(T));
  } else if constexpr (flat_sequence<T>) {
    std::uint32_t n;
    in.load_binary(&n, 4);
    if (std::size_t{n} * sizeof(typename T::value_type) > in.remaining())
      throw cereal::Exception("a count past the end of the record");
    x.resize(n);
    in.load_binary(x.data(), std::size_t{n} * sizeof(typename T::value_type));
  } else {
    in(x);
  }
}

/// Values whose packed size is known before packing them: trivially copyable ones and flat
/// sequences (a call of only such arguments is written straight into its buffer).
template <class T>
concept sized_packable = cairn::detail::transferable<T> || flat_sequence<T>;

/// Bytes `x` takes packed.
template <sized_packable T>
std::size_t packed_size(const T& x) noexcept {
  if constexpr (cairn::detail::transferable<T>)
    return sizeof(T);
  else
    return 4 + x.size() * sizeof(typename T::value_type);
}

/// Writes `x` packed at `at` (packed_size(x) bytes; a flat sequence of at most 2^32 - 1
/// elements) and advances `at`.
template <sized_packable T>
void pack_to(std::byte*& at, const T& x) noexcept {
  if constexpr (cairn::detail::transferable<T>) {
    std::memcpy(at, &x, sizeof(T));
    at += sizeof(T);
  } else {
    const auto n = static_cast<std::uint32_t>(x.size());
    std::memcpy(at, &n, 4);
    at += 4;
    const std::size_t bytes = x.size() * sizeof(typename T::value_type);
    if (bytes) std::memcpy(at, x.data(), bytes);
    at += bytes;
  }
}

/// Appends the packed values to `out` (which keeps its capacity between uses).
template <class... T>
void pack_all(std::vector<std::byte>& out, const T&... xs) {
  cairn::detail::byte_writer w(out);
  (pack(w, xs), ...);
}

/// Reads `x` (packed by pack_to) at `at`, before `end`, and advances `at`: nullptr once read,
/// or what is wrong when the bytes end first.
template <sized_packable T>
const char* unpack_from(const std::byte*& at, const std::byte* end, T& x) {
  if constexpr (cairn::detail::transferable<T>) {
    if (static_cast<std::size_t>(end - at) < sizeof(T)) return "read past the end of the message";
    std::memcpy(&x, at, sizeof(T));
    at += sizeof(T);
  } else {
    std::uint32_t n;
    if (end - at < 4) return "read past the end of the message";
    std::memcpy(&n, at, 4);
    at += 4;
    const std::size_t bytes = std::size_t{n} * sizeof(typename T::value_type);
    if (bytes > static_cast<std::size_t>(end - at)) return "a count past the end of the record";
    x.resize(n);
    if (bytes) std::memcpy(x.data(), at, bytes);
    at += bytes;
  }
  return nullptr;
}

/// Throws the cairn::error of a record of `bytes` bytes that does not hold values of types T
/// (`wrong` says why) or has `left` bytes more than them.
template <class... T>
[[noreturn, gnu::cold, gnu::noinline]] void refuse_record(std::size_t bytes, const char* call,
                                                          int rank, const std::string& wrong,
                                                          std::size_t left) {
  if (wrong.empty())
    cairn::detail::fail(call, rank, "a record of ", bytes, " bytes has ", left,
                        " bytes more than its values");
  std::string types;
  ((types += (types.empty() ? "" : ", "), types += typeid(T).name()), ...);
  cairn::detail::fail(call, rank, "a record of ", bytes, " bytes does not hold (", types,
                      "): ", wrong);
}

/// Reads values into `xs` from exactly `in`; throws cairn::error naming `call`, `rank` and
/// the types when the bytes do not hold them (ranks that disagree on the types). Values of
/// known packed size are read straight from the bytes: a cereal archive costs more to make and
/// end than a few small arguments take to copy (measured on the containers' calls).
template <class... T>
void unpack_all(std::span<const std::byte> in, const char* call, int rank, T&... xs) {
  if constexpr ((sized_packable<T> && ...)) {
    const std::byte* at = in.data();
    const std::byte* const end = at + in.size();
    const char* bad = nullptr;
    ((bad = bad ? bad : unpack_from(at, end, xs)), ...);
    if (bad || at != end) [[unlikely]]
      refuse_record<T...>(in.size(), call, rank, bad ? bad : "",
                          static_cast<std::size_t>(end - at));
  } else {
    std::size_t left = 0;
    std::string wrong;
    try {
      cairn::detail::byte_reader r(in);
      (unpack(r, xs), ...);
      left = r.remaining();
    } catch (const std::exception& e) {
      wrong = e.what();
    }
    if (!wrong.empty() || left != 0) [[unlikely]]
      refuse_record<T...>(in.size(), call, rank, wrong, left);
  }
}

/// Reads into `x` the first value packed in `in` (the rest is left unread): false when the
/// bytes do not begin with a T. For a look at a record's key before it travels on; the
/// record's receiver still checks all of it.
template <class T>
bool unpack_first(std::span<const std::byte> in, T& x) {
  if constexpr (sized_packable<T>) {
    const std::byte* at = in.data();
    return unpack_from(at, at + in.size(), x) == nullptr;
  } else {
    try {
      cairn::detail::byte_reader r(in);
      unpack(r, x);
      return true;
    } catch (const std::exception&) {
      return false;
    }
  }
}

/// Reusable byte vectors for payloads, one per nesting level: a send may deliver items whose
/// handlers send again before the outer payload was copied into its buffer.
class scratch_stack {
 public:
  /// The emptied vector of one level, held for the lifetime of the lease.
  class lease {
   public:
    explicit lease(scratch_stack& s) : s_(s) {
      if (s.level_ == s.levels_.size()) s.levels_.emplace_back();
      v_ = &s.levels_[s.level_++];
      v_->clear();
    }
    ~lease() { --s_.level_; }
    lease(const lease&) = delete;
    lease& operator=(const lease&) = delete;
    /// The vector.
    std::vector<std::byte>& bytes() noexcept { return *v_; }

   private:
    scratch_stack& s_;
    std::vector<std::byte>* v_;
  };

 private:
  std::deque<std::vector<std::byte>> levels_;  // a deque: outer levels keep their address
  std::size_t level_ = 0;
};

}  // namespace cairn::msg::detail
