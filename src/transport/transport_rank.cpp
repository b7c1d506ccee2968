#include "transport/transport_rank.hpp"

#include <cstdio>
#include <sstream>

#include "transport/transport.hpp"

namespace cairn::detail {

namespace {
constexpr std::size_t slab_states = 256;
}  // namespace

const char* to_string(msg_context c) noexcept {
  switch (c) {
    case msg_context::user: return "user";
    case msg_context::coll: return "coll";
    case msg_context::msg: return "msg";
    case msg_context::array: return "array";
  }
  return "?";
}

std::string report_unreceived(int rank, std::size_t count, const unreceived_message& first,
                              const std::optional<unreceived_message>& first_keyed, bool withdrew) {
  auto describe = [](std::ostream& os, const unreceived_message& m) {
    os << "from rank " << m.source << ", tag " << m.tag << ", " << m.bytes << " bytes, context "
       << to_string(m.ctx);
  };
  std::ostringstream os;
  if (first_keyed && !withdrew) {
    os << count << " message(s) sent to rank " << rank << " were never received (";
    describe(os, *first_keyed);
    os << "): the call that sent it found no matching call here (do all ranks pass the same "
          "root and algorithm to every collective, the same layouts to every transfer?)";
    return os.str();
  }
  os << "cairn: rank " << rank << ": warning: " << count
     << " message(s) sent to this rank were never received (first: ";
  describe(os, first);
  os << ")\n";
  std::fputs(os.str().c_str(), stderr);
  return {};
}

transport_rank::~transport_rank() = default;

request_state* transport_rank::acquire(request_state::kind k, const char* call, int peer, int tag,
                                       msg_context c, void* buf, std::size_t capacity) {
  if (pool_.empty()) {
    auto slab = std::make_unique<request_state[]>(slab_states);
    pool_.reserve(pool_.size() + slab_states);
    for (std::size_t i = slab_states; i-- > 0;) pool_.push_back(&slab[i]);
    slabs_.push_back(std::move(slab));
  }
  request_state* s = pool_.back();
  pool_.pop_back();
  s->done.store(0, std::memory_order_relaxed);
  s->k = k;
  s->ctx = c;
  s->failed = false;
  s->call = call;
  s->peer = peer;
  s->tag = tag;
  s->space = 0;
  s->buf = buf;
  s->capacity = capacity;
  s->incoming = 0;
  s->st = status{};
  s->prev = s->next = nullptr;
  s->engine_ptr = nullptr;
  s->ops = nullptr;
  s->phase = 0;
  s->slot = 0;
  s->active_prev = nullptr;
  if (helped_) outstanding_.fetch_add(1, std::memory_order_relaxed);
  s->active_next = active_;
  if (active_) active_->active_prev = s;
  active_ = s;
  return s;
}

void transport_rank::release(request_state* s) noexcept {
  if (s->active_prev)
    s->active_prev->active_next = s->active_next;
  else
    active_ = s->active_next;
  if (s->active_next) s->active_next->active_prev = s->active_prev;
  if (helped_) outstanding_.fetch_sub(1, std::memory_order_relaxed);
  pool_.push_back(s);
}

}  // namespace cairn::detail
