#include "cairn/msg/detail/channel_core.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <span>
#include <sstream>

#include "cairn/runtime/error.hpp"
#include "cairn/runtime/world.hpp"
#include "msg/msg_layer.hpp"
#include "runtime/rank_context.hpp"

namespace cairn::msg::detail {

using cairn::detail::msg_context;
using cairn::detail::request_state;

namespace {
constexpr std::align_val_t buffer_align{message_align};
}

channel_core::channel_core(const world& w, std::size_t buffer_bytes, const channel_options& opts,
                           void* typed, deliver_fn deliver, flush_fn flush, drain_fn drain,
                           reset_fn reset, bool oversize)
    : channel_core(w, std::nullopt, buffer_bytes, opts, typed, deliver, flush, drain, reset,
                   oversize) {}

channel_core::channel_core(const group& g, std::size_t buffer_bytes, const channel_options& opts,
                           void* typed, deliver_fn deliver, flush_fn flush, drain_fn drain,
                           reset_fn reset, bool oversize)
    : channel_core(g.world(), g, buffer_bytes, opts, typed, deliver, flush, drain, reset,
                   oversize) {}

channel_core::channel_core(const world& w, std::optional<cairn::group> g, std::size_t buffer_bytes,
                           const channel_options& opts, void* typed, deliver_fn deliver,
                           flush_fn flush, drain_fn drain, reset_fn reset, bool oversize)
    : ctx_(&w.context("channel")),
      layer_(&msg_layer::of(*ctx_)),
      depth_(&layer_->depth),
      tag_(0),
      size_(g ? g->size() : w.size()),
      buffer_bytes_(buffer_bytes),
      opts_(opts),
      typed_(typed),
      deliver_(deliver),
      flush_(flush),
      drain_(drain),
      reset_(reset),
      w_(w),
      group_(std::move(g)) {
  cairn::detail::rank_entry guard(*ctx_);
  const int rank = ctx_->rank();
  if (group_ && group_->rank() < 0)
    cairn::detail::fail("channel", rank, "this rank is not a member of the group (", group_->size(),
                        " ranks, first ", group_->world_rank(0), ")");
  if (opts.posted_receives < 1 || opts.posted_receives > 1024)
    cairn::detail::fail("channel", rank, "posted_receives ", opts.posted_receives,
                        " is outside [1, 1024]");
  if (!(opts.flush_interval_s >= 0))
    cairn::detail::fail("channel", rank, "flush_interval_s ", opts.flush_interval_s,
                        " is negative");
  if (opts.contributors < 1)
    cairn::detail::fail("channel", rank, "contributors ", opts.contributors, " is below 1");
  if (opts.memory_cap_bytes < 2 * buffer_bytes)
    cairn::detail::fail("channel", rank, "memory_cap_bytes ", opts.memory_cap_bytes,
                        " is below two buffers of ", buffer_bytes, " bytes");
  const int tags = oversize ? 2 : 1;
  if (group_) {
    to_world_ = group_->members();
    for (int r = 0; r < size_; ++r)
      from_world_.emplace_back(to_world_[static_cast<std::size_t>(r)], r);
    std::sort(from_world_.begin(), from_world_.end());
    tag_ = agree_group_tags(tags);
  } else {
    // The world's channels take the lower half of the tags by creation index; channels on
    // groups agree on tags of the upper half.
    if (layer_->next_tag + tags - 1 >= msg_layer::group_tag_base(ctx_->tag_ub()))
      cairn::detail::fail("channel", rank, "more channels on the world than the ",
                          msg_layer::group_tag_base(ctx_->tag_ub()),
                          " tags of the message context");
    tag_ = layer_->next_tag;
    layer_->next_tag += tags;
  }
  if (oversize) oversize_tag_ = tag_ + 1;
  for (auto& v : sent_to_) v.assign(static_cast<std::size_t>(size_), 0);
  send_seq_.assign(static_cast<std::size_t>(size_), 0);
  recv_seq_.assign(static_cast<std::size_t>(size_), 0);
  posted_.resize(static_cast<std::size_t>(opts.posted_receives));
  for (std::size_t i = 0; i < posted_.size(); ++i) {
    posted_[i].buf = allocate(false);
    post(posted_[i]);
    order_.push_back(static_cast<std::uint32_t>(i));
  }
  layer_->channels.push_back(this);
}

int channel_core::agree_group_tags(int count) {
  // Windows of 256 tags from the base: each member marks the tags its channels on groups
  // hold, the members OR their marks, and take the first `count` free in a row. Every member
  // sees the same union, so all step through the same windows and take the same tags.
  constexpr int window = 256;
  const int base = msg_layer::group_tag_base(ctx_->tag_ub());
  const int last = ctx_->tag_ub();
  // 64-bit window starts: the last window may reach past the largest int.
  for (std::int64_t start = base; start <= last; start += window - count + 1) {
    std::array<std::uint64_t, window / 64> used{};
    const auto mark = [&](int t) {
      used[static_cast<std::size_t>(t / 64)] |= std::uint64_t{1} << (t % 64);
    };
    for (int t : layer_->group_tags)
      if (t >= start && t < start + window) mark(static_cast<int>(t - start));
    for (int t = 0; t < window; ++t)
      if (start + t > last) mark(t);
    group_->allreduce(std::span<const std::uint64_t>(used), std::span<std::uint64_t>(used),
                      bit_or{});
    for (int t = 0; t + count <= window; ++t) {
      bool free = true;
      for (int k = 0; k < count && free; ++k)
        free = !(used[static_cast<std::size_t>((t + k) / 64)] >> ((t + k) % 64) & 1);
      if (!free) continue;
      const int first = static_cast<int>(start + t);
      for (int k = 0; k < count; ++k) layer_->group_tags.push_back(first + k);
      return first;
    }
  }
  cairn::detail::fail("channel", ctx_->rank(), "no ", count,
                      " free tags for a channel on a group (", layer_->group_tags.size(),
                      " held by this rank's channels on groups, tags ", base, " to ", last, ")");
}

int channel_core::from_world(int source) const {
  if (to_world_.empty()) return source;
  const auto it =
      std::lower_bound(from_world_.begin(), from_world_.end(), std::pair<int, int>(source, -1));
  if (it == from_world_.end() || it->first != source)
    cairn::detail::fail("channel", ctx_->rank(), "a message from rank ", source,
                        ", which is not a member of channel '", opts_.name, "''s group");
  return it->second;
}

channel_core::~channel_core() {
  cairn::detail::rank_entry guard(*ctx_);
  if (group_) {
    auto& held = layer_->group_tags;
    std::erase_if(held, [&](int t) { return t == tag_ || t == oversize_tag_; });
  }
  auto& chans = layer_->channels;
  for (std::size_t i = 0; i < chans.size(); ++i)
    if (chans[i] == this) {
      chans.erase(chans.begin() + static_cast<std::ptrdiff_t>(i));
      break;
    }
  for (auto& p : posted_)
    if (p.req) ctx_->cancel(p.req);
  for (auto& o : oversize_in_) {
    ctx_->cancel(o.req);
    ::operator delete(o.buf, buffer_align);
  }
  // Sends in flight still read their buffers: let them finish (after quiesce they all have
  // been received), unless the run is ending abnormally — then withdraw them.
  for (auto& f : in_flight_) {
    bool withdraw = std::uncaught_exceptions() > 0 || ctx_->run().aborting.load();
    std::uint64_t spins = 0;
    while (!withdraw && !ctx_->tp().test(f.req)) {
      try {
        ctx_->idle(f.req, spins);
      } catch (...) {
        withdraw = true;
      }
    }
    if (withdraw)
      ctx_->cancel(f.req);
    else
      ctx_->release(f.req);
    if (f.oversize) ::operator delete(f.buf, buffer_align);
  }
  for (std::byte* b : owned_) ::operator delete(b, buffer_align);
}

void channel_core::retire(std::uint64_t unsent_items) noexcept {
  if (std::getenv("CAIRN_STATS")) {
    const auto& s = stats_;
    std::fprintf(stderr,
                 "cairn stats: rank %d channel %d '%s': sent %llu (local %llu), delivered %llu, "
                 "forwarded %llu, combined %llu at source + %llu at hops, messages %llu sent "
                 "(mean fill %.1f of %zu bytes) / %llu received, over cap %llu, backpressure "
                 "waits %llu\n",
                 ctx_->rank(), tag_, opts_.name, static_cast<unsigned long long>(s.sent),
                 static_cast<unsigned long long>(s.local),
                 static_cast<unsigned long long>(s.delivered),
                 static_cast<unsigned long long>(s.forwarded),
                 static_cast<unsigned long long>(s.combined_source),
                 static_cast<unsigned long long>(s.combined_hops),
                 static_cast<unsigned long long>(s.buffers_sent), s.mean_fill(), buffer_bytes_,
                 static_cast<unsigned long long>(s.messages_received),
                 static_cast<unsigned long long>(s.over_cap),
                 static_cast<unsigned long long>(s.backpressure_waits));
  }
  if (unsent_items == 0 || std::uncaught_exceptions() > 0 || ctx_->run().aborting.load()) return;
  std::ostringstream os;
  os << "cairn::channel: rank " << ctx_->rank() << ": channel '" << opts_.name
     << "' destroyed with " << unsent_items
     << " items never sent (call world::quiesce() before it goes out of scope)";
  std::fprintf(stderr, "%s\n", os.str().c_str());
  ctx_->run().fail(ctx_->rank(), os.str());
}

std::byte* channel_core::allocate(bool for_send) {
  auto* b = static_cast<std::byte*>(::operator new(buffer_bytes_, buffer_align));
  owned_.push_back(b);
  if (for_send) {  // receive buffers are fixed and not counted against the cap
    send_bytes_ += buffer_bytes_;
    if (send_bytes_ > stats_.peak_send_bytes) stats_.peak_send_bytes = send_bytes_;
  }
  return b;
}

void channel_core::post(posted& p) {
  p.req = ctx_->acquire(request_state::kind::recv, "channel receive", any_source, tag_,
                        msg_context::msg, p.buf, buffer_bytes_);
  ctx_->tp().irecv(*ctx_, p.req);
}

std::byte* channel_core::acquire() {
  if (!free_.empty()) {
    std::byte* b = free_.back();
    free_.pop_back();
    return b;
  }
  cairn::detail::rank_entry guard(*ctx_);
  ctx_->check_alive("channel send");
  if (send_bytes_ + buffer_bytes_ <= opts_.memory_cap_bytes) return allocate(true);
  if (layer_->depth > 0) {  // inside a handler: exceed the cap rather than risk deadlock
    ++stats_.over_cap;
    return allocate(true);
  }
  // Backpressure: send the partly filled buffers (with more peers than the cap has buffers,
  // nothing else would free one), then deliver incoming items and complete sends until a
  // buffer comes back.
  ++stats_.backpressure_waits;
  flush_(typed_);
  std::uint64_t spins = 0;
  for (;;) {
    ctx_->check_abort();
    if (layer_->poll()) spins = 0;
    if (!free_.empty()) {
      std::byte* b = free_.back();
      free_.pop_back();
      return b;
    }
    ctx_->idle(nullptr, spins);
  }
}

void channel_core::ship(int peer, std::byte* data, std::size_t bytes) {
  cairn::detail::rank_entry guard(*ctx_);
  ctx_->check_alive("channel send");
  mark(data, peer);
  request_state* s = ctx_->tp().isend(*ctx_, "channel send", data, bytes, to_world(peer), tag_, 0,
                                      0, msg_context::msg);
  if (s)
    in_flight_.push_back({s, data});
  else
    free_.push_back(data);
  ++layer_->sent_msgs;
  ++messages_sent_;
  if (layer_->depth == 0) layer_->poll();
}

void channel_core::mark(std::byte* data, int peer) {
  auto& seq = send_seq_[static_cast<std::size_t>(peer)];
  const std::uint32_t marks = ((level_ & 3) << wire_level_shift) |
                              (static_cast<std::uint32_t>(epoch_ & 3) << wire_epoch_shift) |
                              (seq << wire_seq_shift);
  seq = (seq + 1) & wire_seq_mask;
  wire_header h;
  std::memcpy(&h, data, sizeof h);
  h.flags |= marks;
  std::memcpy(data, &h, sizeof h);
  ++sent_to_[level_ & 3][static_cast<std::size_t>(peer)];
}

std::byte* channel_core::acquire_oversize(std::size_t bytes) {
  if (oversize_tag_ < 0)
    cairn::detail::fail("channel send", ctx_->rank(), "a message of ", bytes,
                        " bytes is larger than the channel's buffers of ", buffer_bytes_);
  return static_cast<std::byte*>(::operator new(bytes, buffer_align));
}

void channel_core::ship_oversize(int peer, std::byte* data, std::size_t bytes) {
  cairn::detail::rank_entry guard(*ctx_);
  ctx_->check_alive("channel send");
  mark(data, peer);
  request_state* s = ctx_->tp().isend(*ctx_, "channel send", data, bytes, to_world(peer),
                                      oversize_tag_, 0, 0, msg_context::msg);
  if (s)
    in_flight_.push_back({s, data, true});
  else
    ::operator delete(data, buffer_align);
  ++layer_->sent_msgs;
  ++messages_sent_;
  if (layer_->depth == 0) layer_->poll();
}

void channel_core::poll() {
  cairn::detail::rank_entry guard(*ctx_);
  if (layer_->depth == 0) layer_->poll();
}

void channel_core::fail(const char* call, const std::string& what) const {
  cairn::detail::fail(call, ctx_->rank(), what);
}

bool channel_core::advance(bool deliver) {
  // The layer polled the transport once for all its channels: each request is only asked
  // whether it completed (a test of each would poll again, ~10 polls per channel on MPI).
  bool any = false;
  auto& tp = ctx_->tp();
  for (std::size_t i = 0; i < in_flight_.size();) {
    if (tp.test_polled(in_flight_[i].req)) {
      ctx_->finish(in_flight_[i].req);
      if (in_flight_[i].oversize)
        ::operator delete(in_flight_[i].buf, buffer_align);
      else
        free_.push_back(in_flight_[i].buf);
      in_flight_[i] = in_flight_.back();
      in_flight_.pop_back();
      any = true;
    } else {
      ++i;
    }
  }
  if (!deliver) return any;
  // Completed receives are handled in the order they were posted: messages of one source
  // match its receives in that order, so its items are handled in the order it sent them.
  // The order is rebuilt as the pass goes, also when a handler throws: the receives not
  // completed, in their order, then those posted again.
  struct reorder {
    std::vector<std::uint32_t>& order;
    std::vector<std::uint32_t>& reposted;
    std::size_t kept = 0, seen = 0;
    ~reorder() {
      order.erase(order.begin() + static_cast<std::ptrdiff_t>(kept),
                  order.begin() + static_cast<std::ptrdiff_t>(seen));
      order.insert(order.end(), reposted.begin(), reposted.end());
    }
  } pass{order_, reposted_};
  reposted_.clear();
  for (; pass.seen < order_.size(); ++pass.seen) {
    const std::uint32_t i = order_[pass.seen];
    posted& p = posted_[i];
    if (!p.req || !tp.test_polled(p.req)) {  // (no request: a handler threw before it was posted)
      order_[pass.kept++] = i;
      continue;
    }
    const status st = ctx_->finish(p.req);
    p.req = nullptr;
    receive(p.buf, st.bytes, from_world(st.source));
    post(p);
    reposted_.push_back(i);
    any = true;
  }
  if (oversize_tag_ >= 0) any |= advance_oversize();
  if (any) ctx_->note_progress();
  return any;
}

void channel_core::receive(const std::byte* buf, std::size_t bytes, int source) {
  wire_header h;
  std::memcpy(&h, buf, sizeof h);
  // Messages of one source are handled in the order it sent them: one that overtook an
  // earlier one (a transport may complete them out of order) waits for it, copied aside.
  auto& next = recv_seq_[static_cast<std::size_t>(source)];
  if ((h.flags >> wire_seq_shift) != next) {
    early_message m{source, h.flags >> wire_seq_shift, bytes, {}};
    m.lines.resize(std::max<std::size_t>(1, (bytes + message_align - 1) / message_align));
    std::memcpy(static_cast<void*>(m.lines.data()), buf, bytes);
    early_.push_back(std::move(m));
    return;
  }
  handle(buf, bytes, source);
  next = (next + 1) & wire_seq_mask;
  for (std::size_t i = 0; i < early_.size();) {
    if (early_[i].source != source || early_[i].seq != next) {
      ++i;
      continue;
    }
    const early_message m = std::move(early_[i]);
    early_.erase(early_.begin() + static_cast<std::ptrdiff_t>(i));
    handle(m.data(), m.bytes, source);
    next = (next + 1) & wire_seq_mask;
    i = 0;
  }
}

void channel_core::handle(const std::byte* buf, std::size_t bytes, int source) {
  wire_header h;
  std::memcpy(&h, buf, sizeof h);
  ++received_[(h.flags >> wire_level_shift) & 3];
  // A message of the next epoch: its phase began after the old one ended everywhere, so
  // the old entries go before its items are forwarded (see end_phase). One of an older
  // epoch (a chain deeper than wait()'s depth) leaves the cache as it is.
  if (((((h.flags >> wire_epoch_shift) & 3) - epoch_) & 3) == 1) {
    ++epoch_;
    reset_(typed_);
  }
  {
    handler_scope guard(*this);  // forwarding may ship: no nested delivery meanwhile
    deliver_(typed_, buf, bytes, source);
  }
  ++stats_.messages_received;
  ++layer_->recv_msgs;
}

bool channel_core::advance_oversize() {
  bool any = false;
  auto& tp = ctx_->tp();
  // A receive posted right after its probe matches the probed message (messages of one
  // source and tag do not overtake each other), so the next probe finds the next one.
  status st;
  while (tp.iprobe_polled(any_source, oversize_tag_, msg_context::msg, &st)) {
    auto* buf =
        static_cast<std::byte*>(::operator new(std::max<std::size_t>(st.bytes, 1), buffer_align));
    request_state* r = ctx_->acquire(request_state::kind::recv, "channel receive", st.source,
                                     oversize_tag_, msg_context::msg, buf, st.bytes);
    tp.irecv(*ctx_, r);
    oversize_in_.push_back({r, buf, true});
  }
  for (std::size_t i = 0; i < oversize_in_.size();) {
    if (!tp.test_polled(oversize_in_[i].req)) {
      ++i;
      continue;
    }
    const in_flight o = oversize_in_[i];
    oversize_in_.erase(oversize_in_.begin() + static_cast<std::ptrdiff_t>(i));
    const status done = ctx_->finish(o.req);
    struct free_buffer {
      std::byte* b;
      ~free_buffer() { ::operator delete(b, buffer_align); }
    } release{o.buf};
    receive(o.buf, done.bytes, from_world(done.source));
    any = true;
  }
  return any;
}

void channel_core::wait_levels(int levels) {
  cairn::detail::rank_entry guard(*ctx_);
  if (layer_->depth > 0)
    cairn::detail::fail("channel wait", ctx_->rank(), "called from inside a handler");
  if (levels < 1) cairn::detail::fail("channel wait", ctx_->rank(), "depth must be >= 0");
  std::uint64_t expected = 0;
  for (int l = 0; l < levels; ++l) {
    drain_(typed_);
    flush_(typed_);
    const std::uint32_t parity = level_ & 3;
    std::vector<std::uint64_t> counts = sent_to_[parity];
    std::fill(sent_to_[parity].begin(), sent_to_[parity].end(), 0);
    ++level_;  // sends from now on (handlers below) belong to the next level
    on_ranks(
        [&](auto& ranks) { ranks.reduce_scatter_block(counts, std::span(&expected, 1), plus{}); });
    std::uint64_t spins = 0;
    while (received_[parity] < expected) {
      ctx_->check_abort();
      if (layer_->poll())
        spins = 0;
      else
        ctx_->idle(nullptr, spins);
    }
    if (received_[parity] != expected)
      cairn::detail::fail("channel wait", ctx_->rank(), "received ", received_[parity],
                          " messages in a level where ", expected,
                          " were sent (handler chains deeper than the depth given?)");
    received_[parity] = 0;
  }
  drain_(typed_);
  end_phase();
}

std::uint64_t channel_core::phase_begin() {
  ++done_calls_;
  return done_phases_ + 1;
}

bool channel_core::phase_test(std::uint64_t phase) {
  if (done_phases_ >= phase) return true;
  cairn::detail::rank_entry guard(*ctx_);
  if (layer_->depth > 0)
    cairn::detail::fail("channel done", ctx_->rank(), "tested from inside a handler");
  if (done_calls_ < opts_.contributors) {  // this rank's other contributors still insert
    layer_->poll();
    return false;
  }
  if (!wave_running_) {
    do {
      drain_(typed_);
      flush_(typed_);
    } while (layer_->poll());
    flush_(typed_);
    wave_in_ = {stats_.buffers_sent, stats_.messages_received};
    wave_ = on_ranks([&](auto& ranks) { return ranks.iallreduce(wave_in_, wave_out_, plus{}); });
    wave_running_ = true;
  }
  if (!wave_.test()) return false;
  wave_running_ = false;
  if (wave_out_[0] == wave_out_[1] && wave_out_ == wave_prev_) {
    wave_prev_ = {~std::uint64_t{0}, 0};
    ++done_phases_;
    done_calls_ = 0;
    end_phase();
    return true;
  }
  wave_prev_ = wave_out_;
  return false;
}

void channel_core::end_phase() {
  ++phases_;
  if (epoch_ < phases_) {
    epoch_ = phases_;
    reset_(typed_);
  }
}

void channel_core::phase_wait(std::uint64_t phase) {
  cairn::detail::rank_entry guard(*ctx_);
  std::uint64_t spins = 0;
  while (!phase_test(phase)) ctx_->idle(nullptr, spins);
}

std::string channel_core::describe() const {
  std::ostringstream os;
  os << "channel '" << opts_.name << "' (tag " << tag_;
  if (group_) os << ", on a group of " << size_ << " ranks";
  os << "): " << in_flight_.size() << " sends in flight, " << stats_.messages_received
     << " messages received";
  return os.str();
}

}  // namespace cairn::msg::detail
