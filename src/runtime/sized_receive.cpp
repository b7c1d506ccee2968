// Receives whose size the message tells (world::irecv_sized): the runtime's queue of them per
// rank. Each probes for its message and, once one matched, receives it into the room its sink
// made. They match in the order they were posted: one that found nothing blocks the later
// ones that could match the same messages for the rest of the sweep, so a message arriving
// between two probes never goes to the later receive.

#include "runtime/sized_receive.hpp"

#include <algorithm>
#include <exception>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "runtime/rank_context.hpp"

namespace cairn {
namespace detail {
namespace {

struct sized_receive {
  request_state* outer = nullptr;
  const char* call = "";
  int source = 0;
  int tag = 0;
  sized_sink sink;
  request_state* inner = nullptr;  // the receive of the matched message
  std::exception_ptr error;
};

sized_receive* entry_of(const request_state* s) {
  return static_cast<sized_receive*>(s->engine_ptr);
}

bool overlaps(int a, int b, int wildcard) { return a == wildcard || b == wildcard || a == b; }

struct sized_receive_rank {
  explicit sized_receive_rank(rank_context& c);

  rank_context& ctx;
  int layer = 0;
  std::vector<sized_receive*> queue;  // in the order posted
  struct filter {
    int source, tag;
  };
  std::vector<filter> waiting;  // this sweep's receives that found no message
  bool stepping = false;

  // Advances one receive; true once it is complete (or failed).
  bool step(sized_receive& e) {
    if (!e.inner) {
      const bool blocked = std::any_of(waiting.begin(), waiting.end(), [&](const filter& f) {
        return overlaps(f.source, e.source, any_source) && overlaps(f.tag, e.tag, any_tag);
      });
      status st;
      if (blocked || !ctx.tp().iprobe(e.source, e.tag, msg_context::user, &st)) {
        waiting.push_back({e.source, e.tag});
        return false;
      }
      void* buf = e.sink.buffer(e.sink.target, st);
      e.inner = ctx.acquire(request_state::kind::recv, e.call, st.source, st.tag, msg_context::user,
                            buf, st.bytes);
      ctx.tp().irecv(ctx, e.inner);
    }
    if (!ctx.tp().test(e.inner)) return false;
    const status st = ctx.finish(std::exchange(e.inner, nullptr));
    e.sink.complete(e.sink.target, st);
    return true;
  }

  bool sweep() {
    if (stepping) return true;
    stepping = true;
    waiting.clear();
    for (std::size_t i = 0; i < queue.size();) {
      sized_receive& e = *queue[i];
      bool done = false;
      try {
        done = step(e);
      } catch (...) {
        e.error = std::current_exception();
        done = true;
      }
      if (!done) {
        ++i;
        continue;
      }
      queue.erase(queue.begin() + static_cast<std::ptrdiff_t>(i));
      e.outer->done.store(1, std::memory_order_release);
      ctx.note_progress();
    }
    stepping = false;
    return !queue.empty();
  }

  void remove(sized_receive* e) {
    queue.erase(std::remove(queue.begin(), queue.end(), e), queue.end());
  }
};

constexpr layer_hooks sized_receive_hooks{
    [](void* state) { return static_cast<sized_receive_rank*>(state)->sweep(); },
    false,  // sinks run user code (loaders): the rank's own thread only
    nullptr, nullptr, nullptr};

sized_receive_rank::sized_receive_rank(rank_context& c) : ctx(c) {
  layer = ctx.add_layer(this, sized_receive_hooks);
}

std::exception_ptr finish_sized(rank_context& ctx, request_state* s) {
  std::unique_ptr<sized_receive> e(entry_of(s));
  s->engine_ptr = nullptr;
  ctx.layer<sized_receive_rank>().remove(e.get());
  return e->error;
}
void cancel_sized(rank_context& ctx, request_state* s) {
  std::unique_ptr<sized_receive> e(entry_of(s));
  s->engine_ptr = nullptr;
  ctx.layer<sized_receive_rank>().remove(e.get());
  if (e->inner) ctx.cancel(e->inner);
}
std::string describe_sized(const request_state* s) {
  const sized_receive& e = *entry_of(s);
  std::string text = e.inner
                         ? "receiving a matched message from rank " + std::to_string(e.inner->peer)
                         : std::string("waiting for a message from ") +
                               (e.source == any_source ? std::string("any source")
                                                       : "rank " + std::to_string(e.source));
  return text + ", tag " + (e.tag == any_tag ? std::string("any") : std::to_string(e.tag)) +
         " (size told by the message)";
}
constexpr layer_operation_ops sized_ops{&finish_sized, &cancel_sized, &describe_sized};

}  // namespace
}  // namespace detail

namespace detail {
request start_sized_receive(rank_context& c, const char* call, int source, int tag,
                            const sized_sink& sink) {
  auto& queue = c.layer<sized_receive_rank>();
  request_state* s =
      c.acquire(request_state::kind::layer, call, source, tag, msg_context::user, nullptr, 0);
  s->ops = &sized_ops;
  auto* e = new sized_receive{s, call, source, tag, sink, nullptr, nullptr};
  s->engine_ptr = e;
  queue.queue.push_back(e);
  c.mark_busy(queue.layer);
  queue.sweep();  // earlier receives first: a message goes to the first that can take it
  return request(&c, s);
}
}  // namespace detail

}  // namespace cairn
