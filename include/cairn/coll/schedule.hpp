#pragma once
/// \file
/// A collective as a value: rounds of point-to-point and local steps, planned once for a group
/// size, a rank and a message size, printable, and executed (any number of times) by the
/// progress engine. Planning is in one file per algorithm
/// (`src/coll/algorithms/<collective>_<algorithm>.cpp`).

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

namespace cairn::coll {

/// Which buffer a step reads or writes: the caller's input, the caller's output, or scratch
/// memory owned by the running collective.
enum class slot : std::uint8_t { input, output, temp };

/// A byte range in one of the buffers.
struct region {
  coll::slot slot = slot::output;  ///< the buffer
  std::size_t offset = 0;          ///< bytes from the buffer's start
};

/// What a step does.
enum class step_kind : std::uint8_t {
  send,    ///< send `bytes` from `from` to group rank `peer`
  recv,    ///< receive `bytes` from group rank `peer` into `to`
  reduce,  ///< to = from (op) to, or to = to (op) from; `bytes` of elements
  copy,    ///< copy `bytes` from `from` to `to`
  // The count check (CAIRN_COLL_CHECK=1, src/coll/algorithms/count_check_dissemination.cpp): every
  // rank's call signature (bytes, root, plan) is reduced to its minimum and maximum over the group.
  signature,          ///< write this rank's signature record (`bytes`, root = `peer`) at `to`
  signature_combine,  ///< fold the record at `from` into the record at `to` (min and max)
  signature_verify,   ///< if the record at `to` has min != max: fail, ending the schedule here
};

/// One step of a schedule.
struct step {
  step_kind kind = step_kind::copy;  ///< what the step does
  int peer = -1;                     ///< group rank (send, recv)
  region from{};                     ///< send source, reduce operand, copy source
  region to{};                       ///< recv destination, reduce accumulator, copy destination
  std::size_t bytes = 0;             ///< bytes moved, reduced or copied
  bool from_is_left = false;         ///< reduce: `from` is the left operand (rank order matters)
};

/// The plan of one collective on one rank. Steps run round by round: at the start of a round
/// its local steps (reduce, copy) run in order, then its sends and receives are started; the
/// next round starts when all of them completed.
class schedule {
 public:
  schedule() = default;
  /// An empty plan for rank `group_rank` of a group of `group_size`.
  schedule(std::string name_, int group_size_, int group_rank_)
      : name(std::move(name_)), group_size(group_size_), group_rank(group_rank_) {}

  std::string name;            ///< "<collective>/<algorithm>", e.g. "allreduce/recursive_doubling"
  int group_size = 0;          ///< ranks of the group the plan is for
  int group_rank = 0;          ///< this rank's rank in that group
  std::size_t temp_bytes = 0;  ///< scratch memory the schedule needs
  std::vector<step> steps;     ///< every round's steps, round after round
  std::vector<std::uint32_t> round_starts;  ///< index of each round's first step

  /// Opens a new round (an empty round is dropped when the next one opens).
  void begin_round();
  /// Appends a step to the current round (opening the first round if needed).
  void add(const step& s);
  /// Number of rounds.
  [[nodiscard]] std::size_t rounds() const noexcept { return round_starts.size(); }
  /// Rounds that move data (the "stages" of the papers): rounds with a send or a receive.
  [[nodiscard]] std::size_t message_rounds() const noexcept;
  /// Steps of round r: [first, last).
  [[nodiscard]] std::pair<std::size_t, std::size_t> round(std::size_t r) const noexcept;

  // Shorthands for planners.
  /// Appends a send of `bytes` at `from` to group rank `peer`.
  void send(int peer, region from, std::size_t bytes) {
    add({step_kind::send, peer, from, {}, bytes, false});
  }
  /// Appends a receive of `bytes` from group rank `peer` into `to`.
  void recv(int peer, region to, std::size_t bytes) {
    add({step_kind::recv, peer, {}, to, bytes, false});
  }
  /// Appends a local reduction of `bytes` of elements: `to = from (op) to` if `from_is_left`,
  /// else `to = to (op) from`.
  void reduce(region from, region to, std::size_t bytes, bool from_is_left) {
    add({step_kind::reduce, -1, from, to, bytes, from_is_left});
  }
  /// Appends a local copy of `bytes` from `from` to `to`.
  void copy(region from, region to, std::size_t bytes) {
    add({step_kind::copy, -1, from, to, bytes, false});
  }
};

/// Prints the schedule, one round per line.
std::ostream& operator<<(std::ostream& os, const schedule& s);

}  // namespace cairn::coll
