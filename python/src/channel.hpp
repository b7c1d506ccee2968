#pragma once
// cairn.Channel: aggregated messages of (key, value) items sent from numpy arrays, handed to a
// Python handler as numpy arrays, a batch at a time.
#include <nanobind/nanobind.h>

#include <cstdint>
#include <memory>

#include "buffer.hpp"
#include "cairn/cairn.hpp"
#include "reductions.hpp"

namespace cairn_python {

namespace nb = nanobind;

/// One rank's end of a channel over a block distribution of n keys, whatever its item type,
/// route and combining (channel.cpp instantiates each): the type the binding holds.
class channel_base {
 public:
  virtual ~channel_base() = default;
  /// Sends item i = (keys[i], values[i]) to the owner of keys[i] (values null for channels
  /// without values); hands full batches of arrivals to the handler meanwhile.
  virtual void send_many(int rank, const buffer& keys, const buffer* values) = 0;
  /// Sends every partly filled buffer now.
  virtual void flush() = 0;
  /// Hands every arrival not yet handed to the handler (with the GIL held); the count.
  virtual std::uint64_t deliver() = 0;
  /// Items given to send_many on this rank so far.
  [[nodiscard]] virtual std::uint64_t sent() const = 0;
  /// Keys rank r owns.
  [[nodiscard]] virtual std::uint64_t local_size(int r) const = 0;
  /// Sets the Python handler (with the GIL held, once the channel is made: making it is
  /// collective, so it runs with the GIL released). Arrivals wait for it.
  virtual void set_handler(nb::object h) = 0;
  /// Gives up the Python handler (to drop it with the GIL held before the channel goes).
  virtual nb::object release_handler() = 0;
};

/// What a Python channel's items carry besides the key.
enum class item_value { none, int64, float64 };
/// Combining at the source and on every hop.
enum class combining { none, dedup, merge };
/// The channel's route.
enum class route_kind { direct, grid };

/// Makes this rank's end of a channel on the ranks of `on`, a cairn::world or cairn::group
/// (collective on them: they make their channels in the same order; call it with the GIL
/// released, then set_handler). Throws cairn::error,
/// naming the world rank, for a combination that does not exist (a merge without values,
/// dedup with values).
template <class Ranks>
std::unique_ptr<channel_base> make_channel(const Ranks& on, std::uint64_t n, item_value value,
                                           combining c, op_kind merge_op, route_kind route,
                                           std::size_t batch, std::size_t buffer_items);

}  // namespace cairn_python
