#include "collectives.hpp"
#include "gil.hpp"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/vector.h>

#include <cmath>
#include <optional>
#include <type_traits>
#include <utility>

namespace cairn_python {

number number_op::operator()(const number& a, const number& b) const {
  if (a.kind >= number::object || b.kind >= number::object) return {std::max(a.kind, b.kind), 0, 0};
  if (a.kind == number::integer && b.kind == number::integer) {
    number r{number::integer, 0, 0};
    bool overflow = false;
    switch (k) {
      case op_kind::sum: overflow = __builtin_add_overflow(a.i, b.i, &r.i); break;
      case op_kind::prod: overflow = __builtin_mul_overflow(a.i, b.i, &r.i); break;
      case op_kind::min: r.i = std::min(a.i, b.i); break;
      default: r.i = std::max(a.i, b.i); break;
    }
    if (overflow) r = {number::overflow, 0, 0};
    return r;
  }
  // Python's min and max keep the operand's own type: mixed kinds take the pickled path.
  if ((k == op_kind::min || k == op_kind::max) && a.kind != b.kind) return {number::object, 0, 0};
  const double x = a.kind == number::integer ? static_cast<double>(a.i) : a.f;
  const double y = b.kind == number::integer ? static_cast<double>(b.i) : b.f;
  number r{number::real, 0, 0};
  switch (k) {
    case op_kind::sum: r.f = x + y; break;
    case op_kind::prod: r.f = x * y; break;
    case op_kind::min: r.f = std::min(x, y); break;
    default: r.f = std::max(x, y); break;
  }
  return r;
}

namespace {

bool is_in_place(const nb::handle& h) { return nb::isinstance<in_place_tag>(h); }

// Buffers for a call that reads `send` and writes `recv` (same element type; `recv` may be
// None where `recv_optional`).
struct send_recv {
  buffer send;
  buffer recv;
  bool in_place = false;
};

// Refuses `call` for a pair of buffers that do not go together: "sendbuf holds .. and recvbuf
// ..: `why`".
[[noreturn]] void refuse_pair(const buffer& in, const buffer& out, const char* call, int rank,
                              const char* why) {
  refuse(call, rank,
         "sendbuf holds " + in.describe() + " and recvbuf " + out.describe() + ": " + why);
}

send_recv buffers_of(nb::handle send, nb::handle recv, const char* call, int rank,
                     bool recv_optional = false) {
  send_recv b;
  b.in_place = is_in_place(send);
  if (!b.in_place) b.send = buffer(send.ptr(), false, call, rank, "sendbuf");
  if (!(recv_optional && recv.is_none())) {
    b.recv = buffer(recv.ptr(), true, call, rank, "recvbuf");
    if (!b.in_place && b.send.type() != b.recv.type())
      refuse_pair(b.send, b.recv, call, rank, "the element types differ");
  }
  return b;
}

template <class T>
std::span<const T> in_of(const send_recv& b) {
  return b.send.as<const T>();
}

// The byte spans of a buffer.
std::span<const std::byte> bytes_in(const buffer& b) { return b.as<const std::byte>(); }
std::span<std::byte> bytes_out(const buffer& b) { return b.as<std::byte>(); }

// Checks that `recv` holds `blocks` blocks of `send`'s size, for allgather, gather, alltoall.
void expect_blocks(const send_recv& b, std::size_t in_bytes, std::size_t blocks, const char* call,
                   int rank, const char* what) {
  if (b.recv.bytes() != in_bytes * blocks)
    refuse(call, rank,
           std::string(what) + " holds " + b.recv.describe() + ", not " + std::to_string(blocks) +
               " blocks of " +
               std::to_string(in_bytes / std::max<std::size_t>(1, b.recv.itemsize())) +
               " elements");
}

// The buffers of an allreduce: equal sizes unless in place.
send_recv allreduce_buffers(nb::handle send, nb::handle recv, const char* call, int rank) {
  auto b = buffers_of(send, recv, call, rank);
  if (!b.in_place && b.send.bytes() != b.recv.bytes())
    refuse_pair(b.send, b.recv, call, rank, "the sizes differ");
  return b;
}

// The buffers of an alltoall: one equal block per rank in each.
template <class C>
send_recv alltoall_buffers(const C& c, nb::handle send, nb::handle recv, const char* call,
                           int rank) {
  auto b = buffers_of(send, recv, call, rank);
  if (b.in_place) refuse(call, rank, "IN_PLACE is not supported here; pass the sendbuf");
  if (b.send.bytes() != b.recv.bytes() || b.send.bytes() % static_cast<std::size_t>(c.size()))
    refuse_pair(b.send, b.recv, call, rank, "both must hold one equal block per rank");
  return b;
}

// The two buffers of a call, moved into the list a request holds.
std::vector<buffer> held_pair(buffer& in, buffer& out) {
  std::vector<buffer> held;
  held.push_back(std::move(in));
  held.push_back(std::move(out));
  return held;
}

// How a call is bound: blocking (done before it returns), started once (cairn.Request) or set
// up once and started many times (cairn.PersistentRequest). One start function per call serves
// all three: `if constexpr` picks cairn's blocking, `i…` or `…_init` form. A blocking call runs
// cairn's blocking form inside its one release of the GIL: no request to make, hold and wait
// for (measured on one rank: Allgather of 8 bytes 0.67 us through a request, 0.36 like this).
enum class form { blocking, started, persistent };

template <form F>
using request_of =
    std::conditional_t<F == form::persistent, cairn::persistent_request, cairn::request>;
template <form F>
using result_of =
    std::conditional_t<F == form::blocking, void,
                       std::conditional_t<F == form::started, py_request, py_persistent>>;

// The Python request of `req`, holding the call's buffers until it completes (started) or for
// its whole life (persistent); nothing for a blocking call, whose buffers its caller holds.
template <form F>
result_of<F> holding(request_of<F> req, buffer& in, buffer& out) {
  if constexpr (F != form::blocking) return {std::move(req), held_pair(in, out)};
}
template <form F>
result_of<F> holding(request_of<F> req, buffer& b) {
  if constexpr (F != form::blocking) {
    std::vector<buffer> held;
    held.push_back(std::move(b));
    return {std::move(req), std::move(held)};
  }
}

// A reduction of `b` with `k`, as `call`: runs `f(in, out, op)` with the GIL released, `in`
// being the input span, or cairn::in_place where the send buffer was IN_PLACE.
template <class F>
void reduce_with(const send_recv& b, op_kind k, const char* call, int rank, F&& f) {
  with_operation(k, b.recv.type(), call, rank, [&]<class T, class Op>(T, Op op) {
    unlocked gil_free;
    if (b.in_place)
      f(cairn::in_place, b.recv.as<T>(), op);
    else
      f(in_of<T>(b), b.recv.as<T>(), op);
  });
}

template <form F, class C>
result_of<F> start_allreduce(C& c, const char* call, nb::handle send, nb::handle recv, op_kind k) {
  const int rank = world_rank_of(c);
  auto b = allreduce_buffers(send, recv, call, rank);
  request_of<F> req;
  reduce_with(b, k, call, rank, [&](auto&&... a) {
    if constexpr (F == form::blocking)
      c.allreduce(a...);
    else if constexpr (F == form::started)
      req = c.iallreduce(a...);
    else
      req = c.allreduce_init(a...);
  });
  return holding<F>(std::move(req), b.send, b.recv);
}

template <form F, class C>
result_of<F> start_barrier(C& c, const char*) {
  request_of<F> req;
  unlocked gil_free;
  if constexpr (F == form::blocking)
    c.barrier();
  else if constexpr (F == form::started)
    req = c.ibarrier();
  else
    req = c.barrier_init();
  if constexpr (F != form::blocking) return {std::move(req), std::vector<buffer>{}};
}

template <form F, class C>
result_of<F> start_bcast(C& c, const char* call, nb::handle buf, int root) {
  buffer b(buf.ptr(), c.rank() != root, call, world_rank_of(c), "buf");
  request_of<F> req;
  {
    unlocked gil_free;
    if constexpr (F == form::blocking)
      c.bcast(bytes_out(b), root);
    else if constexpr (F == form::started)
      req = c.ibcast(bytes_out(b), root);
    else
      req = c.bcast_init(bytes_out(b), root);
  }
  return holding<F>(std::move(req), b);
}

template <form F, class C>
result_of<F> start_reduce(C& c, const char* call, nb::handle send, nb::handle recv, op_kind k,
                          int root) {
  const int rank = world_rank_of(c);
  const bool is_root = c.rank() == root;
  auto b = buffers_of(send, recv, call, rank, !is_root);
  if (b.in_place && !is_root) refuse(call, rank, "IN_PLACE is for the root only");
  if (is_root && !b.in_place && b.send.bytes() != b.recv.bytes())
    refuse_pair(b.send, b.recv, call, rank, "the sizes differ");
  const element type = b.in_place ? b.recv.type() : b.send.type();
  request_of<F> req;
  with_operation(k, type, call, rank, [&]<class T, class Op>(T, Op op) {
    unlocked gil_free;
    auto go = [&](auto&& in, auto&& out) {
      if constexpr (F == form::blocking)
        c.reduce(in, out, root, op);
      else if constexpr (F == form::started)
        req = c.ireduce(in, out, root, op);
      else
        req = c.reduce_init(in, out, root, op);
    };
    if (b.in_place)
      go(cairn::in_place, b.recv.as<T>());
    else
      go(in_of<T>(b), b.recv.as<T>());
  });
  return holding<F>(std::move(req), b.send, b.recv);
}

template <form F, class C>
result_of<F> start_allgather(C& c, const char* call, nb::handle send, nb::handle recv) {
  const int rank = world_rank_of(c);
  auto b = buffers_of(send, recv, call, rank);
  if (b.in_place) {
    if (b.recv.bytes() % static_cast<std::size_t>(c.size()) != 0)
      refuse(call, rank, "recvbuf holds " + b.recv.describe() + ", not a whole block per rank");
  } else {
    expect_blocks(b, b.send.bytes(), static_cast<std::size_t>(c.size()), call, rank, "recvbuf");
  }
  request_of<F> req;
  {
    unlocked gil_free;
    auto go = [&](auto&& in) {
      if constexpr (F == form::blocking)
        c.allgather(in, bytes_out(b.recv));
      else if constexpr (F == form::started)
        req = c.iallgather(in, bytes_out(b.recv));
      else
        req = c.allgather_init(in, bytes_out(b.recv));
    };
    if (b.in_place)
      go(cairn::in_place);
    else
      go(bytes_in(b.send));
  }
  return holding<F>(std::move(req), b.send, b.recv);
}

template <form F, class C>
result_of<F> start_gather(C& c, const char* call, nb::handle send, nb::handle recv, int root) {
  const int rank = world_rank_of(c);
  const bool is_root = c.rank() == root;
  auto b = buffers_of(send, recv, call, rank, !is_root);
  if (b.in_place) refuse(call, rank, "IN_PLACE is not supported here; pass the sendbuf");
  if (is_root)
    expect_blocks(b, b.send.bytes(), static_cast<std::size_t>(c.size()), call, rank, "recvbuf");
  request_of<F> req;
  {
    unlocked gil_free;
    if constexpr (F == form::blocking)
      c.gather(bytes_in(b.send), bytes_out(b.recv), root);
    else if constexpr (F == form::started)
      req = c.igather(bytes_in(b.send), bytes_out(b.recv), root);
    else
      req = c.gather_init(bytes_in(b.send), bytes_out(b.recv), root);
  }
  return holding<F>(std::move(req), b.send, b.recv);
}

template <form F, class C>
result_of<F> start_scatter(C& c, const char* call, nb::handle send, nb::handle recv, int root) {
  const int rank = world_rank_of(c);
  const bool is_root = c.rank() == root;
  buffer in, out(recv.ptr(), true, call, rank, "recvbuf");
  if (is_root) {
    in = buffer(send.ptr(), false, call, rank, "sendbuf");
    if (in.type() != out.type()) refuse_pair(in, out, call, rank, "the element types differ");
    if (in.bytes() != out.bytes() * static_cast<std::size_t>(c.size()))
      refuse(call, rank,
             "sendbuf holds " + in.describe() + ", not " + std::to_string(c.size()) +
                 " blocks of recvbuf's " + std::to_string(out.count()) + " elements");
  }
  request_of<F> req;
  {
    unlocked gil_free;
    if constexpr (F == form::blocking)
      c.scatter(bytes_in(in), bytes_out(out), root);
    else if constexpr (F == form::started)
      req = c.iscatter(bytes_in(in), bytes_out(out), root);
    else
      req = c.scatter_init(bytes_in(in), bytes_out(out), root);
  }
  return holding<F>(std::move(req), in, out);
}

template <form F, class C>
result_of<F> start_alltoall(C& c, const char* call, nb::handle send, nb::handle recv) {
  auto b = alltoall_buffers(c, send, recv, call, world_rank_of(c));
  request_of<F> req;
  {
    unlocked gil_free;
    if constexpr (F == form::blocking)
      c.alltoall(bytes_in(b.send), bytes_out(b.recv));
    else if constexpr (F == form::started)
      req = c.ialltoall(bytes_in(b.send), bytes_out(b.recv));
    else
      req = c.alltoall_init(bytes_in(b.send), bytes_out(b.recv));
  }
  return holding<F>(std::move(req), b.send, b.recv);
}

// Scan and Exscan (Exclusive) start here.
template <bool Exclusive, form F, class C>
result_of<F> start_scan(C& c, const char* call, nb::handle send, nb::handle recv, op_kind k) {
  const int rank = world_rank_of(c);
  auto b = allreduce_buffers(send, recv, call, rank);
  request_of<F> req;
  reduce_with(b, k, call, rank, [&](auto&&... a) {
    if constexpr (F == form::blocking)
      Exclusive ? c.exscan(a...) : c.scan(a...);
    else if constexpr (F == form::started)
      req = Exclusive ? c.iexscan(a...) : c.iscan(a...);
    else
      req = Exclusive ? c.exscan_init(a...) : c.scan_init(a...);
  });
  return holding<F>(std::move(req), b.send, b.recv);
}

template <form F, class C>
result_of<F> start_reduce_scatter_block(C& c, const char* call, nb::handle send, nb::handle recv,
                                        op_kind k) {
  const int rank = world_rank_of(c);
  auto b = buffers_of(send, recv, call, rank);
  const auto p = static_cast<std::size_t>(c.size());
  if (b.in_place ? b.recv.count() % p != 0 : b.send.count() != b.recv.count() * p)
    refuse(
        call, rank,
        (b.in_place ? "recvbuf holds " + b.recv.describe() + ", not a whole block per rank"
                    : "sendbuf holds " + b.send.describe() + ", not " + std::to_string(p) +
                          " blocks of recvbuf's " + std::to_string(b.recv.count()) + " elements"));
  request_of<F> req;
  reduce_with(b, k, call, rank, [&](auto&&... a) {
    if constexpr (F == form::blocking)
      c.reduce_scatter_block(a...);
    else if constexpr (F == form::started)
      req = c.ireduce_scatter_block(a...);
    else
      req = c.reduce_scatter_block_init(a...);
  });
  return holding<F>(std::move(req), b.send, b.recv);
}

// An element of K bytes: the v-collectives move buffers as elements of their item size, so that
// counts, displacements and cairn's messages about them are in elements.
template <std::size_t K>
struct item {
  std::byte bytes[K];
};

// Calls f.template operator()<E>(scale) with E an element of `itemsize` bytes (1, 2, 4, 8, 16)
// and scale 1, or with E = std::byte and scale = itemsize for other sizes (counts then scale).
template <class F>
void with_item(std::size_t itemsize, F&& f) {
  switch (itemsize) {
    case 1: return f.template operator()<item<1>>(std::size_t{1});
    case 2: return f.template operator()<item<2>>(std::size_t{1});
    case 4: return f.template operator()<item<4>>(std::size_t{1});
    case 8: return f.template operator()<item<8>>(std::size_t{1});
    case 16: return f.template operator()<item<16>>(std::size_t{1});
    default: return f.template operator()<std::byte>(itemsize);
  }
}

// A list of counts or displacements (elements) times `scale`; refuses negative entries.
std::vector<std::size_t> scaled(const std::optional<std::vector<std::int64_t>>& v,
                                std::size_t scale, const char* call, int rank, const char* what) {
  std::vector<std::size_t> out;
  if (!v) return out;
  out.reserve(v->size());
  for (std::size_t i = 0; i < v->size(); ++i) {
    if ((*v)[i] < 0)
      refuse(call, rank,
             std::string(what) + "[" + std::to_string(i) + "] is " + std::to_string((*v)[i]) +
                 ", a negative count");
    out.push_back(static_cast<std::size_t>((*v)[i]) * scale);
  }
  return out;
}

// Counts and displacements are planned from when a call starts (cairn copies what it needs into
// the plan), so the lists below may go once the start returns.
using counts_arg = std::optional<std::vector<std::int64_t>>;

template <class E>
std::span<const E> in_items(const buffer& b) {
  return {static_cast<const E*>(b.data()), b.bytes() / sizeof(E)};
}
template <class E>
std::span<E> out_items(const buffer& b) {
  return {static_cast<E*>(b.data()), b.bytes() / sizeof(E)};
}

template <form F, class C>
result_of<F> start_reduce_scatter(C& c, const char* call, nb::handle send, nb::handle recv,
                                  counts_arg counts, op_kind k) {
  const int rank = world_rank_of(c);
  auto b = buffers_of(send, recv, call, rank);
  if (b.in_place) refuse(call, rank, "IN_PLACE is not supported here; pass the sendbuf");
  if (!counts) refuse(call, rank, "counts are required");
  const auto n = scaled(counts, 1, call, rank, "counts");
  request_of<F> req;
  with_operation(k, b.recv.type(), call, rank, [&]<class T, class Op>(T, Op op) {
    unlocked gil_free;
    if constexpr (F == form::blocking)
      c.reduce_scatter(in_of<T>(b), b.recv.as<T>(), n, op);
    else if constexpr (F == form::started)
      req = c.ireduce_scatter(in_of<T>(b), b.recv.as<T>(), n, op);
    else
      req = c.reduce_scatter_init(in_of<T>(b), b.recv.as<T>(), n, op);
  });
  return holding<F>(std::move(req), b.send, b.recv);
}

template <form F, class C>
result_of<F> start_allgatherv(C& c, const char* call, nb::handle send, nb::handle recv,
                              counts_arg counts, counts_arg displs) {
  const int rank = world_rank_of(c);
  auto b = buffers_of(send, recv, call, rank);
  if (b.in_place) refuse(call, rank, "IN_PLACE is not supported here; pass the sendbuf");
  if (!counts) refuse(call, rank, "counts are required");
  request_of<F> req;
  with_item(b.recv.itemsize(), [&]<class E>(std::size_t scale) {
    const auto n = scaled(counts, scale, call, rank, "counts");
    const auto d = scaled(displs, scale, call, rank, "displs");
    unlocked gil_free;
    if constexpr (F == form::blocking)
      c.allgatherv(in_items<E>(b.send), out_items<E>(b.recv), n, d);
    else if constexpr (F == form::started)
      req = c.iallgatherv(in_items<E>(b.send), out_items<E>(b.recv), n, d);
    else
      req = c.allgatherv_init(in_items<E>(b.send), out_items<E>(b.recv), n, d);
  });
  return holding<F>(std::move(req), b.send, b.recv);
}

template <form F, class C>
result_of<F> start_gatherv(C& c, const char* call, nb::handle send, nb::handle recv,
                           counts_arg counts, counts_arg displs, int root) {
  const int rank = world_rank_of(c);
  const bool is_root = c.rank() == root;
  auto b = buffers_of(send, recv, call, rank, !is_root);
  if (b.in_place) refuse(call, rank, "IN_PLACE is not supported here; pass the sendbuf");
  if (is_root && !counts) refuse(call, rank, "counts are required on the root");
  request_of<F> req;
  with_item(b.send.itemsize(), [&]<class E>(std::size_t scale) {
    const auto n = scaled(counts, scale, call, rank, "counts");
    const auto d = scaled(displs, scale, call, rank, "displs");
    unlocked gil_free;
    if constexpr (F == form::blocking)
      c.gatherv(in_items<E>(b.send), out_items<E>(b.recv), n, d, root);
    else if constexpr (F == form::started)
      req = c.igatherv(in_items<E>(b.send), out_items<E>(b.recv), n, d, root);
    else
      req = c.gatherv_init(in_items<E>(b.send), out_items<E>(b.recv), n, d, root);
  });
  return holding<F>(std::move(req), b.send, b.recv);
}

template <form F, class C>
result_of<F> start_scatterv(C& c, const char* call, nb::handle send, nb::handle recv,
                            counts_arg counts, counts_arg displs, int root) {
  const int rank = world_rank_of(c);
  const bool is_root = c.rank() == root;
  buffer in, out(recv.ptr(), true, call, rank, "recvbuf");
  if (is_root) {
    in = buffer(send.ptr(), false, call, rank, "sendbuf");
    if (in.type() != out.type()) refuse_pair(in, out, call, rank, "the element types differ");
    if (!counts) refuse(call, rank, "counts are required on the root");
  }
  request_of<F> req;
  with_item(out.itemsize(), [&]<class E>(std::size_t scale) {
    const auto n = scaled(counts, scale, call, rank, "counts");
    const auto d = scaled(displs, scale, call, rank, "displs");
    unlocked gil_free;
    if constexpr (F == form::blocking)
      c.scatterv(in_items<E>(in), out_items<E>(out), n, d, root);
    else if constexpr (F == form::started)
      req = c.iscatterv(in_items<E>(in), out_items<E>(out), n, d, root);
    else
      req = c.scatterv_init(in_items<E>(in), out_items<E>(out), n, d, root);
  });
  return holding<F>(std::move(req), in, out);
}

template <form F, class C>
result_of<F> start_alltoallv(C& c, const char* call, nb::handle send, counts_arg send_counts,
                             nb::handle recv, counts_arg recv_counts, counts_arg send_displs,
                             counts_arg recv_displs) {
  const int rank = world_rank_of(c);
  auto b = buffers_of(send, recv, call, rank);
  if (b.in_place) refuse(call, rank, "IN_PLACE is not supported here; pass the sendbuf");
  if (!send_counts || !recv_counts) refuse(call, rank, "sendcounts and recvcounts are required");
  request_of<F> req;
  with_item(b.recv.itemsize(), [&]<class E>(std::size_t scale) {
    const auto sn = scaled(send_counts, scale, call, rank, "sendcounts");
    const auto sd = scaled(send_displs, scale, call, rank, "sdispls");
    const auto rn = scaled(recv_counts, scale, call, rank, "recvcounts");
    const auto rd = scaled(recv_displs, scale, call, rank, "rdispls");
    unlocked gil_free;
    if constexpr (F == form::blocking)
      c.alltoallv(in_items<E>(b.send), sn, sd, out_items<E>(b.recv), rn, rd);
    else if constexpr (F == form::started)
      req = c.ialltoallv(in_items<E>(b.send), sn, sd, out_items<E>(b.recv), rn, rd);
    else
      req = c.alltoallv_init(in_items<E>(b.send), sn, sd, out_items<E>(b.recv), rn, rd);
  });
  return holding<F>(std::move(req), b.send, b.recv);
}

// The byte-level forms behind the object methods (pickles travel as std::string values).
std::string string_of(const nb::bytes& b) { return {b.c_str(), b.size()}; }
nb::bytes bytes_of(const std::string& s) { return nb::bytes(s.data(), s.size()); }
std::vector<nb::bytes> bytes_list(const std::vector<std::string>& v) {
  std::vector<nb::bytes> out;
  out.reserve(v.size());
  for (const auto& s : v) out.push_back(bytes_of(s));
  return out;
}
std::vector<std::string> strings_of(const std::vector<nb::bytes>& v) {
  std::vector<std::string> out;
  out.reserve(v.size());
  for (const auto& b : v) out.push_back(string_of(b));
  return out;
}

// The Python names of one call: blocking, started, persistent.
struct call_names {
  const char* blocking;
  const char* started;
  const char* persistent;
};

// Binds a call's three forms, the instances of one start function `start<F>(c, call, args...)`:
// `blocking` returns once done, `started` returns the cairn.Request, `persistent` the
// cairn.PersistentRequest. All take the same Python arguments `extra`.
template <class C, class... Args, class... Extra>
void def_forms(nb::class_<C>& cls, call_names names, void (*block)(C&, const char*, Args...),
               py_request (*start)(C&, const char*, Args...),
               py_persistent (*init)(C&, const char*, Args...), const Extra&... extra) {
  cls.def(
      names.blocking, [block, call = names.blocking](C& c, Args... a) { block(c, call, a...); },
      extra...);
  cls.def(
      names.started,
      [start, call = names.started](C& c, Args... a) { return start(c, call, a...); }, extra...);
  cls.def(
      names.persistent,
      [init, call = names.persistent](C& c, Args... a) { return init(c, call, a...); }, extra...);
}

}  // namespace

template <class C>
void bind_collectives(nb::class_<C>& cls) {
  using enum form;
  def_forms(cls, {"Barrier", "Ibarrier", "Barrier_init"}, &start_barrier<blocking, C>,
            &start_barrier<started, C>, &start_barrier<persistent, C>);
  def_forms(cls, {"Bcast", "Ibcast", "Bcast_init"}, &start_bcast<blocking, C>,
            &start_bcast<started, C>, &start_bcast<persistent, C>, nb::arg("buf"),
            nb::arg("root") = 0);
  def_forms(cls, {"Allreduce", "Iallreduce", "Allreduce_init"}, &start_allreduce<blocking, C>,
            &start_allreduce<started, C>, &start_allreduce<persistent, C>, nb::arg("sendbuf"),
            nb::arg("recvbuf"), nb::arg("op") = op_kind::sum);
  def_forms(cls, {"Reduce", "Ireduce", "Reduce_init"}, &start_reduce<blocking, C>,
            &start_reduce<started, C>, &start_reduce<persistent, C>, nb::arg("sendbuf"),
            nb::arg("recvbuf").none(), nb::arg("op") = op_kind::sum, nb::arg("root") = 0);
  def_forms(cls, {"Allgather", "Iallgather", "Allgather_init"}, &start_allgather<blocking, C>,
            &start_allgather<started, C>, &start_allgather<persistent, C>, nb::arg("sendbuf"),
            nb::arg("recvbuf"));
  def_forms(cls, {"Gather", "Igather", "Gather_init"}, &start_gather<blocking, C>,
            &start_gather<started, C>, &start_gather<persistent, C>, nb::arg("sendbuf"),
            nb::arg("recvbuf").none(), nb::arg("root") = 0);
  def_forms(cls, {"Scatter", "Iscatter", "Scatter_init"}, &start_scatter<blocking, C>,
            &start_scatter<started, C>, &start_scatter<persistent, C>, nb::arg("sendbuf").none(),
            nb::arg("recvbuf"), nb::arg("root") = 0);
  def_forms(cls, {"Alltoall", "Ialltoall", "Alltoall_init"}, &start_alltoall<blocking, C>,
            &start_alltoall<started, C>, &start_alltoall<persistent, C>, nb::arg("sendbuf"),
            nb::arg("recvbuf"));
  def_forms(cls, {"Scan", "Iscan", "Scan_init"}, &start_scan<false, blocking, C>,
            &start_scan<false, started, C>, &start_scan<false, persistent, C>, nb::arg("sendbuf"),
            nb::arg("recvbuf"), nb::arg("op") = op_kind::sum);
  def_forms(cls, {"Exscan", "Iexscan", "Exscan_init"}, &start_scan<true, blocking, C>,
            &start_scan<true, started, C>, &start_scan<true, persistent, C>, nb::arg("sendbuf"),
            nb::arg("recvbuf"), nb::arg("op") = op_kind::sum);
  def_forms(cls, {"Reduce_scatter_block", "Ireduce_scatter_block", "Reduce_scatter_block_init"},
            &start_reduce_scatter_block<blocking, C>, &start_reduce_scatter_block<started, C>,
            &start_reduce_scatter_block<persistent, C>, nb::arg("sendbuf"), nb::arg("recvbuf"),
            nb::arg("op") = op_kind::sum);
  def_forms(cls, {"Reduce_scatter", "Ireduce_scatter", "Reduce_scatter_init"},
            &start_reduce_scatter<blocking, C>, &start_reduce_scatter<started, C>,
            &start_reduce_scatter<persistent, C>, nb::arg("sendbuf"), nb::arg("recvbuf"),
            nb::arg("counts").none(), nb::arg("op") = op_kind::sum);
  def_forms(cls, {"Allgatherv", "Iallgatherv", "Allgatherv_init"}, &start_allgatherv<blocking, C>,
            &start_allgatherv<started, C>, &start_allgatherv<persistent, C>, nb::arg("sendbuf"),
            nb::arg("recvbuf"), nb::arg("counts").none(), nb::arg("displs").none() = nb::none());
  def_forms(cls, {"Gatherv", "Igatherv", "Gatherv_init"}, &start_gatherv<blocking, C>,
            &start_gatherv<started, C>, &start_gatherv<persistent, C>, nb::arg("sendbuf"),
            nb::arg("recvbuf").none(), nb::arg("counts").none() = nb::none(),
            nb::arg("displs").none() = nb::none(), nb::arg("root") = 0);
  def_forms(cls, {"Scatterv", "Iscatterv", "Scatterv_init"}, &start_scatterv<blocking, C>,
            &start_scatterv<started, C>, &start_scatterv<persistent, C>, nb::arg("sendbuf").none(),
            nb::arg("recvbuf"), nb::arg("counts").none() = nb::none(),
            nb::arg("displs").none() = nb::none(), nb::arg("root") = 0);
  def_forms(cls, {"Alltoallv", "Ialltoallv", "Alltoallv_init"}, &start_alltoallv<blocking, C>,
            &start_alltoallv<started, C>, &start_alltoallv<persistent, C>, nb::arg("sendbuf"),
            nb::arg("sendcounts").none(), nb::arg("recvbuf"), nb::arg("recvcounts").none(),
            nb::arg("sdispls").none() = nb::none(), nb::arg("rdispls").none() = nb::none());

  cls.def("_bcast_bytes", [](C& c, std::optional<nb::bytes> data, int root) {
    const std::string mine = c.rank() == root && data ? string_of(*data) : std::string();
    std::string s;
    {
      unlocked gil_free;
      s = c.bcast(mine, root);  // the value form (a const string): sized by the root's
    }
    return bytes_of(s);
  });
  cls.def("_ibcast_bytes", [](C& c, std::optional<nb::bytes> data, int root, nb::object loads) {
    const std::string mine = c.rank() == root && data ? string_of(*data) : std::string();
    cairn::value_request<std::string> req;
    {
      unlocked gil_free;
      req = c.ibcast(mine, root);  // serialized at the call: `mine` may go
    }
    return py_request(std::move(req), std::move(loads));
  });
  cls.def("_gather_bytes", [](C& c, nb::bytes data, int root) {
    const std::string s = string_of(data);
    std::vector<std::string> all;
    {
      unlocked gil_free;
      all = c.gather(s, root);
    }
    return bytes_list(all);
  });
  cls.def("_allgather_bytes", [](C& c, nb::bytes data) {
    const std::string s = string_of(data);
    std::vector<std::string> all;
    {
      unlocked gil_free;
      all = c.allgather(s);
    }
    return bytes_list(all);
  });
  cls.def("_scatter_bytes", [](C& c, std::vector<nb::bytes> per_rank, int root) {
    const std::vector<std::string> in = strings_of(per_rank);
    std::string mine;
    {
      unlocked gil_free;
      mine = c.scatter(in, root);
    }
    return bytes_of(mine);
  });
  cls.def("_alltoall_bytes", [](C& c, std::vector<nb::bytes> per_dest) {
    const std::vector<std::string> in = strings_of(per_dest);
    std::vector<std::string> out;
    {
      unlocked gil_free;
      out = c.alltoall(in);
    }
    return bytes_list(out);
  });
  // (kind, int value, float value) of every rank reduced with `op`: the objects' fast path.
  cls.def("_allreduce_number", [](C& c, std::int64_t kind, std::int64_t i, double f, op_kind k) {
    number x{kind, i, f};
    {
      unlocked gil_free;
      x = c.allreduce(x, number_op{k});
    }
    return nb::make_tuple(x.kind, x.i, x.f);
  });
}

template void bind_collectives(nb::class_<cairn::world>&);
template void bind_collectives(nb::class_<cairn::group>&);

}  // namespace cairn_python
