#include "msg/msg_layer.hpp"

#include <memory>

#include "cairn/runtime/detail/flag_scope.hpp"
#include "runtime/rank_context.hpp"

namespace cairn::msg::detail {

namespace {
// Once made, the layer is polled on every test, wait and progress (channels may receive at any
// time); never by helpers, since handlers run on their rank's thread.
constexpr cairn::detail::layer_hooks hooks{[](void* l) {
                                             static_cast<msg_layer*>(l)->poll();
                                             return true;
                                           },
                                           false};
}  // namespace

msg_layer::msg_layer(cairn::detail::rank_context& ctx)
    : ctx(ctx), last_activity_s_(cairn::detail::now_s()) {
  ctx.add_layer(this, hooks);
}

msg_layer& msg_layer::of(cairn::detail::rank_context& ctx) { return ctx.layer<msg_layer>(); }

bool msg_layer::poll() {
  // A handler that waits (or sends) re-enters here through the runtime: nested polls return at
  // once, so no message is delivered inside another's delivery and no receive buffer is reused
  // while it is being read.
  if (polling_ || channels.empty()) return false;
  const cairn::detail::flag_scope polling(polling_);
  const bool deliver = depth == 0;
  ctx.poll_transport();  // once for all channels: they only ask their requests after it
  bool any = false;
  for (std::size_t i = 0; i < channels.size(); ++i) any |= channels[i]->advance(deliver);
  if (deliver)
    for (std::size_t i = 0; i < channels.size(); ++i) any |= channels[i]->drain();
  if (any) {
    idle_polls_ = 0;
    return true;
  }
  // Reading the clock costs ~20 ns: look only every 64 idle polls.
  if ((++idle_polls_ & 63) == 0) {
    const double t = cairn::detail::now_s();
    if (idle_polls_ == 64) last_activity_s_ = t;  // first idle stretch after activity
    for (std::size_t i = 0; i < channels.size(); ++i)
      if (t - last_activity_s_ >= channels[i]->flush_interval_s()) channels[i]->flush();
  }
  return false;
}

void msg_layer::flush_all() {
  for (std::size_t i = 0; i < channels.size(); ++i) channels[i]->flush();
}

}  // namespace cairn::msg::detail
