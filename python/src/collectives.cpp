#include "collectives.hpp"
#include "gil.hpp"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/vector.h>

#include <cmath>
#include <optional>
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

// A started call's request, holding its buffers until it completes.
py_request holding(cairn::request req, buffer& in, buffer& out) {
  return {std::move(req), held_pair(in, out)};
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

template <class C>
void allreduce(C& c, nb::handle send, nb::handle recv, op_kind k) {
  const int rank = world_rank_of(c);
  auto b = allreduce_buffers(send, recv, "Allreduce", rank);
  reduce_with(b, k, "Allreduce", rank, [&](auto&&... a) { c.allreduce(a...); });
}

template <class C>
py_request iallreduce(C& c, nb::handle send, nb::handle recv, op_kind k) {
  const int rank = world_rank_of(c);
  auto b = allreduce_buffers(send, recv, "Iallreduce", rank);
  cairn::request req;
  reduce_with(b, k, "Iallreduce", rank, [&](auto&&... a) { req = c.iallreduce(a...); });
  return holding(std::move(req), b.send, b.recv);
}

// The persistent forms: checked and planned once, the buffers held for the request's life.
template <class C>
py_persistent allreduce_init(C& c, nb::handle send, nb::handle recv, op_kind k) {
  const int rank = world_rank_of(c);
  auto b = allreduce_buffers(send, recv, "Allreduce_init", rank);
  cairn::persistent_request req;
  reduce_with(b, k, "Allreduce_init", rank, [&](auto&&... a) { req = c.allreduce_init(a...); });
  return {std::move(req), held_pair(b.send, b.recv)};
}

template <class C>
py_persistent bcast_init(C& c, nb::handle buf, int root) {
  buffer b(buf.ptr(), c.rank() != root, "Bcast_init", world_rank_of(c), "buf");
  cairn::persistent_request req;
  {
    unlocked gil_free;
    req = c.bcast_init(std::span<std::byte>(static_cast<std::byte*>(b.data()), b.bytes()), root);
  }
  std::vector<buffer> held;
  held.push_back(std::move(b));
  return {std::move(req), std::move(held)};
}

template <class C>
py_persistent alltoall_init(C& c, nb::handle send, nb::handle recv) {
  auto b = alltoall_buffers(c, send, recv, "Alltoall_init", world_rank_of(c));
  cairn::persistent_request req;
  {
    unlocked gil_free;
    req = c.alltoall_init(bytes_in(b.send), bytes_out(b.recv));
  }
  return {std::move(req), held_pair(b.send, b.recv)};
}

// Reduce, Gather, Scatter and Allgather start here (`call` names the Python method); the
// blocking forms wait for the request (def_started).
template <class C>
py_request start_reduce(C& c, const char* call, nb::handle send, nb::handle recv, op_kind k,
                        int root) {
  const int rank = world_rank_of(c);
  const bool is_root = c.rank() == root;
  auto b = buffers_of(send, recv, call, rank, !is_root);
  if (b.in_place && !is_root) refuse(call, rank, "IN_PLACE is for the root only");
  if (is_root && !b.in_place && b.send.bytes() != b.recv.bytes())
    refuse_pair(b.send, b.recv, call, rank, "the sizes differ");
  const element type = b.in_place ? b.recv.type() : b.send.type();
  cairn::request req;
  with_operation(k, type, call, rank, [&]<class T, class Op>(T, Op op) {
    unlocked gil_free;
    if (b.in_place)
      req = c.ireduce(cairn::in_place, b.recv.as<T>(), root, op);
    else
      req = c.ireduce(in_of<T>(b), b.recv.as<T>(), root, op);
  });
  return holding(std::move(req), b.send, b.recv);
}

template <class C>
void bcast(C& c, nb::handle buf, int root) {
  buffer b(buf.ptr(), c.rank() != root, "Bcast", world_rank_of(c), "buf");
  unlocked gil_free;
  if (c.rank() == root)
    c.bcast(std::span<std::byte>(static_cast<std::byte*>(b.data()), b.bytes()), root);
  else
    c.bcast(bytes_out(b), root);
}

template <class C>
py_request ibcast(C& c, nb::handle buf, int root) {
  buffer b(buf.ptr(), c.rank() != root, "Ibcast", world_rank_of(c), "buf");
  cairn::request req;
  {
    unlocked gil_free;
    req = c.ibcast(std::span<std::byte>(static_cast<std::byte*>(b.data()), b.bytes()), root);
  }
  std::vector<buffer> held;
  held.push_back(std::move(b));
  return {std::move(req), std::move(held)};
}

template <class C>
py_request start_allgather(C& c, const char* call, nb::handle send, nb::handle recv) {
  const int rank = world_rank_of(c);
  auto b = buffers_of(send, recv, call, rank);
  cairn::request req;
  if (b.in_place) {
    if (b.recv.bytes() % static_cast<std::size_t>(c.size()) != 0)
      refuse(call, rank, "recvbuf holds " + b.recv.describe() + ", not a whole block per rank");
    unlocked gil_free;
    req = c.iallgather(cairn::in_place, bytes_out(b.recv));
  } else {
    expect_blocks(b, b.send.bytes(), static_cast<std::size_t>(c.size()), call, rank, "recvbuf");
    unlocked gil_free;
    req = c.iallgather(bytes_in(b.send), bytes_out(b.recv));
  }
  return holding(std::move(req), b.send, b.recv);
}

template <class C>
py_request start_gather(C& c, const char* call, nb::handle send, nb::handle recv, int root) {
  const int rank = world_rank_of(c);
  const bool is_root = c.rank() == root;
  auto b = buffers_of(send, recv, call, rank, !is_root);
  if (b.in_place) refuse(call, rank, "IN_PLACE is not supported here; pass the sendbuf");
  if (is_root)
    expect_blocks(b, b.send.bytes(), static_cast<std::size_t>(c.size()), call, rank, "recvbuf");
  cairn::request req;
  {
    unlocked gil_free;
    req = c.igather(bytes_in(b.send), bytes_out(b.recv), root);
  }
  return holding(std::move(req), b.send, b.recv);
}

template <class C>
py_request start_scatter(C& c, const char* call, nb::handle send, nb::handle recv, int root) {
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
  cairn::request req;
  {
    unlocked gil_free;
    req = c.iscatter(bytes_in(in), bytes_out(out), root);
  }
  return holding(std::move(req), in, out);
}

template <class C>
void alltoall(C& c, nb::handle send, nb::handle recv) {
  auto b = alltoall_buffers(c, send, recv, "Alltoall", world_rank_of(c));
  unlocked gil_free;
  c.alltoall(bytes_in(b.send), bytes_out(b.recv));
}

template <class C>
py_request ialltoall(C& c, nb::handle send, nb::handle recv) {
  auto b = alltoall_buffers(c, send, recv, "Ialltoall", world_rank_of(c));
  cairn::request req;
  {
    unlocked gil_free;
    req = c.ialltoall(bytes_in(b.send), bytes_out(b.recv));
  }
  return holding(std::move(req), b.send, b.recv);
}

// Scan and Exscan (`call`, Exclusive) start here.
template <bool Exclusive, class C>
py_request start_scan(C& c, const char* call, nb::handle send, nb::handle recv, op_kind k) {
  const int rank = world_rank_of(c);
  auto b = allreduce_buffers(send, recv, call, rank);
  cairn::request req;
  reduce_with(b, k, call, rank,
              [&](auto&&... a) { req = Exclusive ? c.iexscan(a...) : c.iscan(a...); });
  return holding(std::move(req), b.send, b.recv);
}

template <class C>
void reduce_scatter_block(C& c, nb::handle send, nb::handle recv, op_kind k) {
  const int rank = world_rank_of(c);
  auto b = buffers_of(send, recv, "Reduce_scatter_block", rank);
  const auto p = static_cast<std::size_t>(c.size());
  if (b.in_place ? b.recv.count() % p != 0 : b.send.count() != b.recv.count() * p)
    refuse(
        "Reduce_scatter_block", rank,
        (b.in_place ? "recvbuf holds " + b.recv.describe() + ", not a whole block per rank"
                    : "sendbuf holds " + b.send.describe() + ", not " + std::to_string(p) +
                          " blocks of recvbuf's " + std::to_string(b.recv.count()) + " elements"));
  reduce_with(b, k, "Reduce_scatter_block", rank,
              [&](auto&&... a) { c.reduce_scatter_block(a...); });
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

using counts_arg = std::optional<std::vector<std::int64_t>>;

template <class E>
std::span<const E> in_items(const buffer& b) {
  return {static_cast<const E*>(b.data()), b.bytes() / sizeof(E)};
}
template <class E>
std::span<E> out_items(const buffer& b) {
  return {static_cast<E*>(b.data()), b.bytes() / sizeof(E)};
}

template <class C>
void reduce_scatter(C& c, nb::handle send, nb::handle recv, counts_arg counts, op_kind k) {
  const int rank = world_rank_of(c);
  auto b = buffers_of(send, recv, "Reduce_scatter", rank);
  if (b.in_place)
    refuse("Reduce_scatter", rank, "IN_PLACE is not supported here; pass the sendbuf");
  if (!counts) refuse("Reduce_scatter", rank, "counts are required");
  const auto n = scaled(counts, 1, "Reduce_scatter", rank, "counts");
  with_operation(k, b.recv.type(), "Reduce_scatter", rank, [&]<class T, class Op>(T, Op op) {
    unlocked gil_free;
    c.reduce_scatter(in_of<T>(b), b.recv.as<T>(), n, op);
  });
}

template <class C>
void allgatherv(C& c, nb::handle send, nb::handle recv, counts_arg counts, counts_arg displs) {
  const int rank = world_rank_of(c);
  auto b = buffers_of(send, recv, "Allgatherv", rank);
  if (b.in_place) refuse("Allgatherv", rank, "IN_PLACE is not supported here; pass the sendbuf");
  if (!counts) refuse("Allgatherv", rank, "counts are required");
  with_item(b.recv.itemsize(), [&]<class E>(std::size_t scale) {
    const auto n = scaled(counts, scale, "Allgatherv", rank, "counts");
    const auto d = scaled(displs, scale, "Allgatherv", rank, "displs");
    unlocked gil_free;
    c.allgatherv(in_items<E>(b.send), out_items<E>(b.recv), n, d);
  });
}

template <class C>
void gatherv(C& c, nb::handle send, nb::handle recv, counts_arg counts, counts_arg displs,
             int root) {
  const int rank = world_rank_of(c);
  const bool is_root = c.rank() == root;
  auto b = buffers_of(send, recv, "Gatherv", rank, !is_root);
  if (b.in_place) refuse("Gatherv", rank, "IN_PLACE is not supported here; pass the sendbuf");
  if (is_root && !counts) refuse("Gatherv", rank, "counts are required on the root");
  with_item(b.send.itemsize(), [&]<class E>(std::size_t scale) {
    const auto n = scaled(counts, scale, "Gatherv", rank, "counts");
    const auto d = scaled(displs, scale, "Gatherv", rank, "displs");
    unlocked gil_free;
    c.gatherv(in_items<E>(b.send), out_items<E>(b.recv), n, d, root);
  });
}

template <class C>
void scatterv(C& c, nb::handle send, nb::handle recv, counts_arg counts, counts_arg displs,
              int root) {
  const int rank = world_rank_of(c);
  const bool is_root = c.rank() == root;
  buffer in, out(recv.ptr(), true, "Scatterv", rank, "recvbuf");
  if (is_root) {
    in = buffer(send.ptr(), false, "Scatterv", rank, "sendbuf");
    if (in.type() != out.type()) refuse_pair(in, out, "Scatterv", rank, "the element types differ");
    if (!counts) refuse("Scatterv", rank, "counts are required on the root");
  }
  with_item(out.itemsize(), [&]<class E>(std::size_t scale) {
    const auto n = scaled(counts, scale, "Scatterv", rank, "counts");
    const auto d = scaled(displs, scale, "Scatterv", rank, "displs");
    unlocked gil_free;
    c.scatterv(in_items<E>(in), out_items<E>(out), n, d, root);
  });
}

template <class C>
void alltoallv(C& c, nb::handle send, counts_arg send_counts, nb::handle recv,
               counts_arg recv_counts, counts_arg send_displs, counts_arg recv_displs) {
  const int rank = world_rank_of(c);
  auto b = buffers_of(send, recv, "Alltoallv", rank);
  if (b.in_place) refuse("Alltoallv", rank, "IN_PLACE is not supported here; pass the sendbuf");
  if (!send_counts || !recv_counts)
    refuse("Alltoallv", rank, "sendcounts and recvcounts are required");
  with_item(b.recv.itemsize(), [&]<class E>(std::size_t scale) {
    const auto sn = scaled(send_counts, scale, "Alltoallv", rank, "sendcounts");
    const auto sd = scaled(send_displs, scale, "Alltoallv", rank, "sdispls");
    const auto rn = scaled(recv_counts, scale, "Alltoallv", rank, "recvcounts");
    const auto rd = scaled(recv_displs, scale, "Alltoallv", rank, "rdispls");
    unlocked gil_free;
    c.alltoallv(in_items<E>(b.send), sn, sd, out_items<E>(b.recv), rn, rd);
  });
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

// Binds `name` (waits for the request) and `iname` (returns it) from one start function,
// `start(c, call, args...)`, with the same Python arguments `extra`.
template <class C, class... Args, class... Extra>
void def_started(nb::class_<C>& cls, const char* name, const char* iname,
                 py_request (*start)(C&, const char*, Args...), const Extra&... extra) {
  cls.def(
      name, [start, name](C& c, Args... a) { start(c, name, a...).wait(); }, extra...);
  cls.def(
      iname, [start, iname](C& c, Args... a) { return start(c, iname, a...); }, extra...);
}

}  // namespace

template <class C>
void bind_collectives(nb::class_<C>& cls) {
  cls.def("Barrier", [](C& c) {
    unlocked gil_free;
    c.barrier();
  });
  cls.def("Ibarrier", [](C& c) {
    cairn::request req;
    {
      unlocked gil_free;
      req = c.ibarrier();
    }
    return py_request(std::move(req), std::vector<buffer>{});
  });
  cls.def("Bcast", &bcast<C>, nb::arg("buf"), nb::arg("root") = 0);
  cls.def("Ibcast", &ibcast<C>, nb::arg("buf"), nb::arg("root") = 0);
  cls.def("Allreduce", &allreduce<C>, nb::arg("sendbuf"), nb::arg("recvbuf"),
          nb::arg("op") = op_kind::sum);
  cls.def("Iallreduce", &iallreduce<C>, nb::arg("sendbuf"), nb::arg("recvbuf"),
          nb::arg("op") = op_kind::sum);
  def_started(cls, "Reduce", "Ireduce", &start_reduce<C>, nb::arg("sendbuf"),
              nb::arg("recvbuf").none(), nb::arg("op") = op_kind::sum, nb::arg("root") = 0);
  def_started(cls, "Allgather", "Iallgather", &start_allgather<C>, nb::arg("sendbuf"),
              nb::arg("recvbuf"));
  def_started(cls, "Gather", "Igather", &start_gather<C>, nb::arg("sendbuf"),
              nb::arg("recvbuf").none(), nb::arg("root") = 0);
  def_started(cls, "Scatter", "Iscatter", &start_scatter<C>, nb::arg("sendbuf").none(),
              nb::arg("recvbuf"), nb::arg("root") = 0);
  cls.def("Alltoall", &alltoall<C>, nb::arg("sendbuf"), nb::arg("recvbuf"));
  cls.def("Ialltoall", &ialltoall<C>, nb::arg("sendbuf"), nb::arg("recvbuf"));
  def_started(cls, "Scan", "Iscan", &start_scan<false, C>, nb::arg("sendbuf"), nb::arg("recvbuf"),
              nb::arg("op") = op_kind::sum);
  def_started(cls, "Exscan", "Iexscan", &start_scan<true, C>, nb::arg("sendbuf"),
              nb::arg("recvbuf"), nb::arg("op") = op_kind::sum);
  cls.def("Allreduce_init", &allreduce_init<C>, nb::arg("sendbuf"), nb::arg("recvbuf"),
          nb::arg("op") = op_kind::sum);
  cls.def("Bcast_init", &bcast_init<C>, nb::arg("buf"), nb::arg("root") = 0);
  cls.def("Alltoall_init", &alltoall_init<C>, nb::arg("sendbuf"), nb::arg("recvbuf"));
  cls.def("Reduce_scatter_block", &reduce_scatter_block<C>, nb::arg("sendbuf"), nb::arg("recvbuf"),
          nb::arg("op") = op_kind::sum);
  cls.def("Reduce_scatter", &reduce_scatter<C>, nb::arg("sendbuf"), nb::arg("recvbuf"),
          nb::arg("counts").none(), nb::arg("op") = op_kind::sum);
  cls.def("Allgatherv", &allgatherv<C>, nb::arg("sendbuf"), nb::arg("recvbuf"),
          nb::arg("counts").none(), nb::arg("displs").none() = nb::none());
  cls.def("Gatherv", &gatherv<C>, nb::arg("sendbuf"), nb::arg("recvbuf").none(),
          nb::arg("counts").none() = nb::none(), nb::arg("displs").none() = nb::none(),
          nb::arg("root") = 0);
  cls.def("Scatterv", &scatterv<C>, nb::arg("sendbuf").none(), nb::arg("recvbuf"),
          nb::arg("counts").none() = nb::none(), nb::arg("displs").none() = nb::none(),
          nb::arg("root") = 0);
  cls.def("Alltoallv", &alltoallv<C>, nb::arg("sendbuf"), nb::arg("sendcounts").none(),
          nb::arg("recvbuf"), nb::arg("recvcounts").none(), nb::arg("sdispls").none() = nb::none(),
          nb::arg("rdispls").none() = nb::none());

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
