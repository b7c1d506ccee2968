// Running array transfers: contiguous pieces move without packing (sent from and received
// into place), other pieces are packed per peer and unpacked as each message arrives; with
// chunks > 1 each peer's piece travels as slabs, each sent once packed and unpacked once
// arrived (in order per peer). On the threads engine, and on the MPI engine when every
// process sits on one node and the kernel allows cross-memory reads (node/cross_memory.hpp),
// receivers copy straight from the senders' local parts (the message carries only an offer of
// the part, which the receiver claims before copying, and an empty acknowledgement tells the
// sender its part may change again).
#include "array/array_exec.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <exception>
#include <optional>
#include <thread>

#include "array/offer_words.hpp"
#include "cairn/runtime/detail/flag_scope.hpp"
#include "cairn/runtime/error.hpp"
#include "node/copy_bytes.hpp"
#include "node/cross_memory.hpp"
#include "runtime/rank_context.hpp"

namespace cairn::detail {

namespace {
const std::byte empty_payload{};

// One run's bytes. Block-cyclic layouts cut rows into runs of a few elements: those are copied
// inline (8-byte words) instead of through a memcpy call each.
inline void copy_run(std::byte* to, const std::byte* from, std::size_t bytes) {
  if (bytes <= 64 && bytes % 8 == 0) {
    for (std::size_t i = 0; i < bytes; i += 8) std::memcpy(to + i, from + i, 8);
  } else {
    copy_bytes(to, from, bytes);
  }
}

// Copies peer `pe`'s elements from the local part at `from` to the one at `to` (the rank's own
// part, or a direct copy from a peer's memory). A pair whose dimensions but the last are one
// run each (a box of rows: halo faces, most block-to-block pairs) is walked here with the row
// offsets moved by strides and each row's short runs copied as words, no callback per run:
// faces across the last dimension are rows of one or two elements (64^3 doubles, width 1:
// 28 -> 9 us per face pair); everything else goes through for_each_run.
void copy_entry(const redistribution_plan& p, const plan_peer& pe, std::byte* to,
                const std::byte* from) {
  const int n = p.src.ndim;
  const auto es = static_cast<std::int64_t>(p.elem_size);
  const auto last = static_cast<std::size_t>(n - 1);
  constexpr std::size_t few = 4;  // last-dimension runs per row handled here
  bool box = p.dims[last].of(pe.pair[last]).size() <= few;
  for (std::size_t d = 0; box && d < last; ++d) box = p.dims[d].of(pe.pair[d]).size() == 1;
  if (!box || pe.elements == 0) {
    p.for_each_run(pe, [to, from, es](std::int64_t s, std::int64_t t, std::int64_t l) {
      copy_run(to + t * es, from + s * es, static_cast<std::size_t>(l * es));
    });
    return;
  }
  box_rows row(p.dims, pe, es);  // byte offsets of each row's index 0 of the last dimension
  const auto runs = p.dims[last].of(pe.pair[last]);
  const std::size_t k = runs.size();
  std::array<std::int64_t, few> xs{}, xt{}, xl{};
  std::int64_t words = 0;  // > 0: every run is this many 8-byte words (at most 4)
  for (std::size_t j = 0; j < k; ++j) {
    xs[j] = runs[j].src * pe.src_strides[last] * es;
    xt[j] = runs[j].dst * pe.dst_strides[last] * es;
    xl[j] = runs[j].len * es;
    const std::int64_t w = xl[j] % 8 == 0 && xl[j] <= 32 ? xl[j] / 8 : -1;
    words = j == 0 || w == words ? w : -1;
  }
  // The rows, with a run copy the compiler sees through.
  auto rows = [&](auto copy) {
    do {
      for (std::size_t j = 0; j < k; ++j) copy(to + row.t + xt[j], from + row.s + xs[j], xl[j]);
    } while (row.next());
  };
  auto fixed = [&]<int W>() {
    rows([](std::byte* a, const std::byte* b, std::int64_t) { std::memcpy(a, b, 8 * W); });
  };
  switch (words) {
    case 1: fixed.template operator()<1>(); break;
    case 2: fixed.template operator()<2>(); break;
    case 3: fixed.template operator()<3>(); break;
    case 4: fixed.template operator()<4>(); break;
    default:
      rows([](std::byte* a, const std::byte* b, std::int64_t l) {
        copy_run(a, b, static_cast<std::size_t>(l));
      });
  }
}

using step_clock = std::chrono::steady_clock;

double seconds_since(step_clock::time_point t0) {
  return std::chrono::duration<double>(step_clock::now() - t0).count();
}

// Runs f, adding its duration to *acc when step timing is on (acc non-null).
template <class F>
inline void timed(double* acc, F&& f) {
  if (!acc) {
    f();
    return;
  }
  const auto t0 = step_clock::now();
  f();
  *acc += seconds_since(t0);
}

// Cross-memory reads cost a walk of the sender's pages per run, so the MPI engine copies
// straight only when the runs are long: when they average at least this many bytes. Measured
// (4 MPI processes, 2 cores, N = 1024 doubles, medians of 40 paired samples): 8 KiB runs 1.8 ms
// read straight vs 2.8 ms packed through messages, 4 KiB runs 3.2 vs 2.6 ms, 8-byte runs 298
// vs 4.3 ms. The plan's dimensions are the same on every rank, so every pair of peers makes
// the same choice.
constexpr std::int64_t cross_memory_min_run_bytes = 8192;
// The bytes of a run a straight copy reads, on average: the last dimension's runs, times the
// trailing dimensions that neither side distributes (a dimension whole on both sides lays its
// rows back to back on both, so they merge into the runs of the dimension before it: a slab
// transpose's runs are a block of rows, not one row).
std::int64_t mean_run_bytes(const redistribution_plan& p) {
  auto whole = static_cast<std::int64_t>(p.elem_size);
  for (auto d = p.dims.rbegin(); d != p.dims.rend(); ++d) {
    std::int64_t indices = 0;
    for (const std::int64_t t : d->total) indices += t;
    const auto runs = static_cast<std::int64_t>(d->runs.size());
    if (d->gs == 1 && d->gd == 1 && runs == 1) {
      whole *= indices;
      continue;
    }
    return runs ? whole * indices / runs : 0;
  }
  return whole;
}
bool cross_memory_pays(const redistribution_plan& p) {
  return !p.dims.empty() && mean_run_bytes(p) >= cross_memory_min_run_bytes;
}
// Staging buffers outlive their transfers, a few per rank: a fresh buffer per redistribution
// costs the page faults of the whole area (and zeroing, with a vector) — measured 2-4 ms of
// "packing" per 4 MiB block-cyclic redistribution on the MPI engine before this.
struct spare_buffer {
  std::unique_ptr<std::byte[]> data;
  std::size_t size = 0;
};
constexpr std::size_t max_spares = 4;

// The array layer's state on one rank (its slot in rank_context): the running transfers, a
// counter of completed receives that tells a waiting rank it made progress, spare staging
// buffers and the next offer word to try.
struct array_rank {
  explicit array_rank(rank_context& ctx);
  std::vector<array_exec*> running;
  std::vector<array_exec*> scratch;  // step_running's snapshot of `running`
  std::uint64_t arrivals = 0;
  cross_memory_batch peer_batch;  // MPI engine, direct copies
  std::vector<spare_buffer> spare_staging;
  std::size_t offer_cursor = 0;  // a rank's offer words are used in turn
  /// The node's offer words, null where the ranks share no node memory.
  const offer_words* offers() const noexcept { return words ? &*words : nullptr; }
  std::optional<offer_words> words;
  // True while the rank steps its transfers: a request test inside a step re-enters the
  // runtime's layers, which must not step them again.
  bool stepping = false;
};

array_rank& array_state(rank_context& ctx) { return ctx.layer<array_rank>(); }

// Takes a free offer word of rank `me` and opens it for `src`; generation 0 if all are in use.
part_offer open_offer(const offer_words& b, int me, std::size_t& cursor, const std::byte* src) {
  for (std::size_t n = 0; n < offer_words::count; ++n) {
    const std::size_t i = cursor++ % offer_words::count;
    std::atomic<std::uint64_t>& w = b.word(me, i);
    const std::uint64_t v = w.load(std::memory_order_acquire);
    if (offer_words::state_of(v) < offer_words::released) continue;  // open or being copied
    const std::uint64_t generation = offer_words::generation_of(v) + 1;
    w.store(offer_words::value(generation, offer_words::open), std::memory_order_seq_cst);
    return {src, generation, i};
  }
  return {src, 0, 0};
}

// Steps every running transfer of the rank, `last` (if any) after the others. Snapshot: steps
// may retire transfers from the list.
void step_running(array_rank& ar, array_exec* last) {
  const cairn::detail::flag_scope stepping(ar.stepping);
  ar.scratch.assign(ar.running.begin(), ar.running.end());
  for (array_exec* e : ar.scratch)
    if (e != last && e->running) e->step_safe();
  if (last) last->step_safe();
}

// Every test/wait/progress of the rank advances its array transfers, so a rank blocked in a
// plain request::wait() (or a collective) still serves its array peers. Never by helpers:
// steps run on the rank's thread.
constexpr layer_hooks hooks{[](void* state) {
                              auto& ar = *static_cast<array_rank*>(state);
                              if (!ar.stepping && !ar.running.empty()) step_running(ar, nullptr);
                              return true;
                            },
                            false};

array_rank::array_rank(rank_context& ctx) {
  if (ctx.node_memory()) words.emplace(*ctx.node_memory());
  ctx.add_layer(this, hooks);
}
}  // namespace

// The offer words' part of every node region, reserved before any region is sized.
const std::size_t offers_part =
    node_regions::reserve(offer_words::count * sizeof(std::uint64_t), &offer_words::format);
std::size_t offer_words::part_offset() noexcept { return offers_part; }

request array_isend(rank_context& ctx, const char* call, const void* data, std::size_t bytes,
                    int dest, array_match m) {
  if (bytes == 0) data = &empty_payload;
  if (request_state* s =
          ctx.tp().isend(ctx, call, data, bytes, dest, m.kind, m.key, 0, msg_context::array))
    return request(&ctx, s);
  return request::completed(status{dest, m.kind, bytes});
}

request array_irecv(rank_context& ctx, const char* call, void* data, std::size_t bytes, int source,
                    array_match m) {
  request_state* s =
      ctx.acquire(request_state::kind::recv, call, source, m.kind, msg_context::array, data, bytes);
  s->space = m.key;
  ctx.tp().irecv(ctx, s);
  return request(&ctx, s);
}

array_exec::~array_exec() {
  drop_offers();  // before anything else: receivers may be copying from the local part
  retire();
  // Withdraw pending messages (unwinding only) before their buffer can be reused.
  recvs.clear();
  sends.clear();
  give_staging();
}

void array_exec::give_staging() noexcept {
  if (!staging) return;
  try {
    auto& spare_staging = array_state(*ctx).spare_staging;
    if (spare_staging.size() == max_spares) {  // keep the largest
      auto smallest =
          std::min_element(spare_staging.begin(), spare_staging.end(),
                           [](const auto& a, const auto& b) { return a.size < b.size; });
      if (smallest->size >= staging_size) {
        staging.reset();
        staging_size = 0;
        return;
      }
      spare_staging.erase(smallest);
    }
    spare_staging.push_back(spare_buffer{std::move(staging), staging_size});
  } catch (...) {
    staging.reset();  // no room to keep it: free it
  }
  staging_size = 0;
}

void array_exec::take_staging(std::size_t need) {
  if (staging_size >= need) return;
  give_staging();
  // The smallest spare that fits, else a new buffer (uninitialized: every byte is written,
  // by packing or by a message, before it is read).
  auto& spare_staging = array_state(*ctx).spare_staging;
  auto best = spare_staging.end();
  for (auto it = spare_staging.begin(); it != spare_staging.end(); ++it)
    if (it->size >= need && (best == spare_staging.end() || it->size < best->size)) best = it;
  if (best != spare_staging.end()) {
    staging = std::move(best->data);
    staging_size = best->size;
    spare_staging.erase(best);
    return;
  }
  staging = std::make_unique_for_overwrite<std::byte[]>(need);
  staging_size = need;
}

void array_exec::retire() {
  auto& running_execs = array_state(*ctx).running;
  auto it = std::find(running_execs.begin(), running_execs.end(), this);
  if (it != running_execs.end()) running_execs.erase(it);
}

void array_exec::start() {
  rank_entry guard(*ctx);  // helpers (launch_options::progress) stay out meanwhile
  if (!running) array_state(*ctx).running.push_back(this);
  running = true;
  error = nullptr;
  current = 0;
  if (post_pre) {
    if (steps) exchange_t0 = step_clock::now();
    auto post = std::move(post_pre);
    post_pre = nullptr;
    post(*this);
  }
  if (after_pre) return;  // stages come after the descriptor exchange
  if (!stages.empty()) start_stage();
}

void array_exec::start_stage() {
  const stage& st = stages[current];
  const redistribution_plan& p = *st.plan;
  const std::size_t es = p.elem_size;
  const int me = ctx->rank();
  if (steps) {
    stage_t0 = step_clock::now();
    copies_at_stage_start = steps->pack_s + steps->unpack_s;
  }
  recvs.clear();
  sends.clear();
  drop_offers();
  stage_direct = direct && (ctx->engine() == cairn::engine::threads ||
                            (st.cross_memory && cross_memory_pays(p)));
  if (stage_direct) board = array_state(*ctx).offers();  // senders' and receivers' words
  const array_match data_tag = stage_direct || !st.message_tag ? st.data_tag : *st.message_tag;

  // Staging: packed receives first, then packed sends (message path only).
  std::size_t need = 0;
  recv_offset.assign(p.recvs.size(), 0);
  send_offset.assign(p.sends.size(), 0);
  if (!stage_direct) {
    for (std::size_t i = 0; i < p.recvs.size(); ++i) {
      recv_offset[i] = need;
      if (!p.recvs[i].dst_contiguous) need += static_cast<std::size_t>(p.recvs[i].elements) * es;
    }
    for (std::size_t k = 0; k < p.sends.size(); ++k) {
      const plan_peer& pe = p.sends[k];
      send_offset[k] = need;
      if (pe.world_rank != me && !pe.src_contiguous)
        need += static_cast<std::size_t>(pe.elements) * es;
    }
    take_staging(need);
  }
  incoming.assign(p.recvs.size(), part_offer{});

  // Receives first (every slab of every peer), so that arriving data finds its place.
  recv_first.assign(p.recvs.size() + 1, 0);
  recv_next.assign(p.recvs.size(), 0);
  for (std::size_t i = 0; i < p.recvs.size(); ++i) {
    const plan_peer& pe = p.recvs[i];
    recv_first[i] = recvs.size();
    if (stage_direct) {
      recvs.push_back(
          array_irecv(*ctx, call, &incoming[i], sizeof(part_offer), pe.world_rank, data_tag));
      continue;
    }
    std::byte* base = pe.dst_contiguous ? st.dst + static_cast<std::size_t>(pe.dst_first) * es
                                        : staging.get() + recv_offset[i];
    const std::int64_t n = p.slabs(pe);
    for (std::int64_t j = 0; j < n; ++j) {
      const std::int64_t b = p.slab_begin(pe, j), e = p.slab_begin(pe, j + 1);
      recvs.push_back(array_irecv(*ctx, call, base + static_cast<std::size_t>(b) * es,
                                  static_cast<std::size_t>(e - b) * es, pe.world_rank, data_tag));
    }
  }
  recv_first[p.recvs.size()] = recvs.size();
  recvs_left = recvs.size();

  // Sends, slab j of every peer before slab j + 1 of any, so every receiver can start early;
  // each slab is sent as soon as it is packed.
  if (stage_direct) offers.reserve(p.sends.size());  // never reallocated: messages are sent from it
  std::int64_t rounds = 0;
  for (const plan_peer& pe : p.sends) {
    if (pe.world_rank == me) continue;
    if (stage_direct) {
      offers.push_back(board ? open_offer(*board, me, array_state(*ctx).offer_cursor, st.src)
                             : part_offer{st.src, 0, 0});
      offers.back().agreement = p.agreement;
      sends.push_back(array_irecv(*ctx, call, nullptr, 0, pe.world_rank, st.ack_tag));
      sends.push_back(
          array_isend(*ctx, call, &offers.back(), sizeof(part_offer), pe.world_rank, data_tag));
    } else {
      rounds = std::max(rounds, p.slabs(pe));
    }
  }
  for (std::int64_t j = 0; j < rounds; ++j) {
    for (std::size_t k = 0; k < p.sends.size(); ++k) {
      const plan_peer& pe = p.sends[k];
      if (pe.world_rank == me || j >= p.slabs(pe)) continue;
      const std::int64_t b = p.slab_begin(pe, j), e = p.slab_begin(pe, j + 1);
      const std::size_t bytes = static_cast<std::size_t>(e - b) * es;
      if (pe.src_contiguous) {
        sends.push_back(array_isend(*ctx, call,
                                    st.src + static_cast<std::size_t>(pe.src_first + b) * es, bytes,
                                    pe.world_rank, data_tag));
        continue;
      }
      std::byte* buf = staging.get() + send_offset[k] + static_cast<std::size_t>(b) * es;
      timed(steps ? &steps->pack_s : nullptr, [&] {
        std::byte* out = buf;
        p.for_each_run(pe, b, e - b, [&](std::int64_t s, std::int64_t, std::int64_t l) {
          const std::size_t n = static_cast<std::size_t>(l) * es;
          copy_run(out, st.src + static_cast<std::size_t>(s) * es, n);
          out += n;
        });
      });
      sends.push_back(array_isend(*ctx, call, buf, bytes, pe.world_rank, data_tag));
    }
  }
  // This rank's own part last: the peers' data is already on its way.
  for (const plan_peer& pe : p.sends) {
    if (pe.world_rank != me) continue;
    timed(steps ? &steps->pack_s : nullptr, [&] { copy_entry(p, pe, st.dst, st.src); });
    report_slab(pe, 0, pe.elements);
  }
}

void array_exec::drop_offers() noexcept {
  for (const part_offer& o : offers) {
    if (!o.generation) continue;
    std::atomic<std::uint64_t>& w = board->word(ctx->rank(), o.word);
    if (offer_words::move(w, o.generation, offer_words::open, offer_words::withdrawn)) continue;
    while (w.load(std::memory_order_acquire) ==
           offer_words::value(o.generation, offer_words::claimed))
      std::this_thread::yield();  // a receiver is copying; it waits for nobody
  }
  offers.clear();
}

void array_exec::report_slab(const plan_peer& pe, std::int64_t first, std::int64_t count) {
  if (on_slab && current + 1 == stages.size())
    on_slab(slab_arrival{stages[current].plan.get(), &pe, first, count});
}

namespace {
// A peer withdraws its offers while an exception unwinds its transfer. That exception, not the
// withdrawal this rank then sees, is what the run should report when it ends the run; it is
// recorded once it leaves the peer's function, a moment later. So wait a little for the run to
// abort (run_aborted: the peer's error is the run's) before reporting the withdrawal, which
// stays the error where the peer caught its exception and went on.
void await_peer_failure(rank_context& ctx) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
  while (std::chrono::steady_clock::now() < until) {
    ctx.check_abort();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}
}  // namespace

void array_exec::finish_recv(std::size_t i, std::size_t slab) {
  const stage& st = stages[current];
  const redistribution_plan& p = *st.plan;
  const plan_peer& pe = p.recvs[i];
  const std::size_t es = p.elem_size;
  if (stage_direct) {
    const part_offer& o = incoming[i];
    if (o.agreement != p.agreement) [[unlikely]]
      fail(call, ctx->rank(), "ranks disagree on the transfer: rank ", pe.world_rank,
           " planned it with other layouts, groups or element size than this rank (here ",
           p.elem_size, "-byte elements from ", p.src_members.size(), " to ", p.dst_members.size(),
           " ranks; do all ranks pass the same layouts?)");
    std::atomic<std::uint64_t>* word = nullptr;
    if (o.generation) {
      word = &board->word(pe.world_rank, o.word);
      // Withdrawn: no acknowledgement either, nobody awaits it.
      if (!offer_words::move(*word, o.generation, offer_words::open, offer_words::claimed)) {
        await_peer_failure(*ctx);
        fail(
            call, ctx->rank(), "rank ", pe.world_rank, " withdrew its local part (",
            pe.elements * static_cast<std::int64_t>(es),
            " bytes for this rank) before this rank copied it: its transfer was abandoned while an "
            "exception unwound it");
      }
    }
    const std::byte* from = o.src;
    int read_error = 0;
    timed(steps ? &steps->unpack_s : nullptr, [&] {
      if (ctx->engine() == cairn::engine::threads) {
        copy_entry(p, pe, st.dst, from);
        return;
      }
      cross_memory_batch& r = array_state(*ctx).peer_batch;
      r.begin(ctx->tp().peer_pid(pe.world_rank));
      p.for_each_run(pe, [&](std::int64_t s, std::int64_t t, std::int64_t l) {
        r.add(st.dst + static_cast<std::size_t>(t) * es, from + static_cast<std::size_t>(s) * es,
              static_cast<std::size_t>(l) * es);
      });
      read_error = r.finish();
    });
    if (word)
      word->store(offer_words::value(o.generation, offer_words::released),
                  std::memory_order_release);
    if (steps) ++steps->straight_peers;
    // The sender may go on either way.
    sends.push_back(array_isend(*ctx, call, nullptr, 0, pe.world_rank, st.ack_tag));
    if (read_error)
      fail(call, ctx->rank(), "reading ", pe.elements * static_cast<std::int64_t>(es),
           " bytes of rank ", pe.world_rank,
           "'s local part straight from its memory failed: ", std::strerror(read_error),
           " (CAIRN_CMA=0 moves array data through messages instead)");
    report_slab(pe, 0, pe.elements);
  } else {
    const auto j = static_cast<std::int64_t>(slab);
    const std::int64_t b = p.slab_begin(pe, j), e = p.slab_begin(pe, j + 1);
    if (!pe.dst_contiguous) {
      timed(steps ? &steps->unpack_s : nullptr, [&] {
        const std::byte* in = staging.get() + recv_offset[i] + static_cast<std::size_t>(b) * es;
        p.for_each_run(pe, b, e - b, [&](std::int64_t, std::int64_t t, std::int64_t l) {
          const std::size_t n = static_cast<std::size_t>(l) * es;
          copy_run(st.dst + static_cast<std::size_t>(t) * es, in, n);
          in += n;
        });
      });
    }
    report_slab(pe, b, e - b);
  }
  --recvs_left;
  ++array_state(*ctx).arrivals;
}

bool array_exec::stage_done() {
  // Unpack whatever arrived, each peer's slabs in order, then see whether the sends (and
  // acknowledgements) are done.
  for (std::size_t i = 0; i + 1 < recv_first.size() && recvs_left > 0; ++i) {
    const std::size_t n = recv_first[i + 1] - recv_first[i];
    while (recv_next[i] < n && recvs[recv_first[i] + recv_next[i]].test()) {
      finish_recv(i, recv_next[i]);
      ++recv_next[i];
    }
  }
  return recvs_left == 0 && test_all(sends);
}

void array_exec::step_safe() {
  try {
    if (!step()) return;
    retire();
  } catch (...) {
    error = std::current_exception();
    running = false;
    after_pre = nullptr;
    retire();
  }
  if (req) {  // request::ready() may look from outside
    req->done.store(1, std::memory_order_release);
    ctx->note_progress();
  }
}

bool array_exec::advance() {
  rank_entry guard(*ctx);
  array_rank& ar = array_state(*ctx);
  if (running && !ar.stepping) step_running(ar, this);
  if (error) {
    auto err = error;
    error = nullptr;
    std::rethrow_exception(err);
  }
  return !running;
}

bool array_exec::step() {
  if (!running) return true;
  if (after_pre) {
    if (!test_all(pre)) return false;
    auto build = std::move(after_pre);
    after_pre = nullptr;
    pre.clear();
    if (steps) steps->exchange_s += seconds_since(exchange_t0);
    // May throw (mismatched descriptors): nothing has been sent yet.
    timed(steps ? &steps->plan_s : nullptr, [&] { build(*this); });
    current = 0;
    if (!stages.empty()) start_stage();
  }
  while (current < stages.size()) {
    if (!stage_done()) return false;
    offers.clear();  // every receiver released its word before acknowledging: nothing to drop
    if (steps)
      steps->transmit_s +=
          seconds_since(stage_t0) - (steps->pack_s + steps->unpack_s - copies_at_stage_start);
    if (++current < stages.size()) start_stage();
  }
  running = false;
  if (steps) ++steps->transfers;
  return true;
}

void array_exec::wait() {
  rank_entry guard(*ctx);
  std::uint64_t spins = 0;
  for (;;) {
    const std::uint64_t seen = array_state(*ctx).arrivals;
    if (advance()) return;
    if (array_state(*ctx).arrivals != seen) spins = 0;
    ctx->idle(nullptr, spins);  // spins, then parks until something arrives (and the watchdog)
  }
}

void array_exec::settle() noexcept {
  if (!running || std::uncaught_exceptions() > 0) return;
  try {
    wait();
  } catch (...) {
  }
}

}  // namespace cairn::detail

namespace cairn {

namespace {
using detail::array_exec;
using detail::request_state;

array_exec* exec_of(const request_state* s) { return static_cast<array_exec*>(s->engine_ptr); }

// An array transfer behind a cairn::request: its layer's finish, cancel and describe.
std::exception_ptr finish_transfer(detail::rank_context&, request_state* s) {
  std::unique_ptr<array_exec> e(exec_of(s));
  s->engine_ptr = nullptr;
  e->req = nullptr;
  return e->error;
}
void cancel_transfer(detail::rank_context&, request_state* s) {
  // Unwinding: the transfer's own requests withdraw themselves, offers are withdrawn first.
  std::unique_ptr<array_exec> e(exec_of(s));
  s->engine_ptr = nullptr;
  e->req = nullptr;
}
std::string describe_transfer(const request_state* s) {
  const array_exec& e = *exec_of(s);
  return "array transfer, stage " + std::to_string(e.current + 1) + " of " +
         std::to_string(e.stages.size()) + (e.after_pre ? " (exchanging descriptors)" : "") + ", " +
         std::to_string(e.recvs_left) + " slab(s) to receive";
}
constexpr detail::layer_operation_ops transfer_ops{&finish_transfer, &cancel_transfer,
                                                   &describe_transfer};
}  // namespace

namespace detail {

bool copies_straight(rank_context& ctx, const transfer_options& opts) {
  return opts.direct && ctx.reaches_peer_memory();
}

bool shares_address_space(const rank_context& ctx) {
  return ctx.engine() == cairn::engine::threads && ctx.reaches_peer_memory();
}

bool reaches_peer_parts(const rank_context& ctx) { return ctx.reaches_peer_memory(); }

void copy_with_peer(rank_context& ctx, const char* call, int peer, bool write, const peer_run* runs,
                    std::size_t n) {
  cross_memory_batch& b = array_state(ctx).peer_batch;
  b.begin(ctx.tp().peer_pid(peer), write);
  for (std::size_t i = 0; i < n; ++i) {
    if (write)
      b.add_write(runs[i].remote, runs[i].local, runs[i].bytes);
    else
      b.add(runs[i].local, runs[i].remote, runs[i].bytes);
  }
  if (const int err = b.finish())
    fail(call, ctx.rank(), write ? "writing into" : "reading", " rank ", peer,
         "'s memory straight failed: ", std::strerror(err),
         " (CAIRN_CMA=0 moves the data through messages instead)");
}

request start_plan(rank_context& ctx, const char* call,
                   std::shared_ptr<const redistribution_plan> plan, const void* src, void* dst,
                   std::uint64_t tag_key, const transfer_options& opts) {
  ctx.check_alive(call);
  auto e = std::make_unique<array_exec>();
  e->ctx = &ctx;
  e->call = call;
  e->direct = copies_straight(ctx, opts);
  e->steps = opts.steps;
  e->on_slab = opts.on_slab;
  const std::uint64_t key = plan->groups_id ^ (tag_key * 0x9E3779B97F4A7C15ull);
  const array_match message_tag{key ^ plan->agreement, 3};
  e->stages.push_back(stage{std::move(plan), static_cast<const std::byte*>(src),
                            static_cast<std::byte*>(dst), array_match{key, 0}, array_match{key, 1},
                            true, message_tag});
  return start_request(std::move(e));
}

request start_request(std::unique_ptr<array_exec> e) {
  rank_context& ctx = *e->ctx;
  rank_entry guard(ctx);  // helpers stay out while the rank's pending list changes
  e->start();
  if (e->advance()) return {};
  request_state* s =
      ctx.acquire(request_state::kind::layer, e->call, -1, 0, msg_context::array, nullptr, 0);
  s->ops = &transfer_ops;
  e->req = s;
  s->engine_ptr = e.release();
  return request(&ctx, s);
}

rank_context* context_of(const cairn::group& a, const cairn::group& b, const char* call) {
  if (a.rank() >= 0) return a.coll_target(call).ctx;
  if (b.rank() >= 0) return b.coll_target(call).ctx;
  return nullptr;
}

}  // namespace detail
}  // namespace cairn
