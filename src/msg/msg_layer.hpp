#pragma once
// The aggregated-messages layer of one rank: its channels, the handler depth that forbids
// nested delivery, the message counters termination detection sums, and the poll the runtime
// calls from every test/wait/progress.

#include <cstdint>
#include <vector>

#include "cairn/msg/detail/channel_core.hpp"

namespace cairn::detail {
class rank_context;
}

namespace cairn::msg::detail {

class msg_layer {
 public:
  /// Registers with the rank (rank_context::layer makes it on first use): polled on every
  /// test, wait and progress of the rank, by the rank's own thread only (handlers run there).
  explicit msg_layer(cairn::detail::rank_context& ctx);

  /// The layer of `ctx`, installed on first use.
  static msg_layer& of(cairn::detail::rank_context& ctx);

  /// Completes sends, delivers arrived messages and local queues (outside handlers only), and
  /// sends buffers that waited longer than their flush interval while nothing happened.
  /// Returns true if anything happened.
  bool poll();
  /// Sends every partly filled buffer of every channel.
  void flush_all();

  cairn::detail::rank_context& ctx;
  std::vector<channel_core*> channels;
  int depth = 0;                // > 0 while a handler (or a message's delivery) runs
  int next_tag = 0;             // creation index of the next world channel (its wire tag)
  std::vector<int> group_tags;  // tags held by this rank's channels on groups
  /// The first tag of channels on groups (the world's channels number theirs below it).
  static int group_tag_base(int tag_ub) noexcept { return tag_ub / 2 + 1; }
  std::uint64_t sent_msgs = 0;  // channel messages sent by this rank
  std::uint64_t recv_msgs = 0;  // channel messages received and fully handled here

 private:
  bool polling_ = false;
  std::uint32_t idle_polls_ = 0;
  double last_activity_s_ = 0;
};

}  // namespace cairn::msg::detail
