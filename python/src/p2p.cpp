// Point-to-point calls of cairn.World: buffer forms (Send, Recv, ...) and the byte-level forms
// the object methods (send, recv, ...) pickle through.
#include "p2p.hpp"

#include <nanobind/stl/optional.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "buffer.hpp"
#include "gil.hpp"
#include "request.hpp"

namespace cairn_python {
namespace {

cairn::status recv_into(cairn::world& w, nb::handle buf, int source, int tag) {
  buffer b(buf.ptr(), true, "Recv", w.rank(), "buf");
  unlocked gil_free;
  return w.recv(static_cast<std::byte*>(b.data()), static_cast<std::int64_t>(b.bytes()), source,
                tag);
}

// Send_init (`send`) and Recv_init: `buf` bound to `peer` and `tag` once; the request's plan
// says what moves where.
py_persistent bind_once(cairn::world& w, nb::handle buf, bool send, int peer, int tag) {
  buffer b(buf.ptr(), !send, send ? "Send_init" : "Recv_init", w.rank(), "buf");
  const std::size_t bytes = b.bytes();
  const auto n = static_cast<std::int64_t>(bytes);
  cairn::persistent_p2p req;
  {
    unlocked gil_free;
    req = send ? w.send_init(static_cast<const std::byte*>(b.data()), n, peer, tag)
               : w.recv_init(static_cast<std::byte*>(b.data()), n, peer, tag);
  }
  const std::string what =
      send ? "send of " + std::to_string(bytes) + " bytes to rank " + std::to_string(peer)
           : "receive of up to " + std::to_string(bytes) + " bytes from " +
                 (peer == cairn::any_source ? std::string("any rank")
                                            : "rank " + std::to_string(peer));
  const std::string which = tag == cairn::any_tag ? std::string("any") : std::to_string(tag);
  std::vector<buffer> held;
  held.push_back(std::move(b));
  return {std::move(req), std::move(held), what + ", tag " + which};
}

}  // namespace

void bind_p2p(nb::class_<cairn::world>& cls) {
  using cairn::world;
  cls.def(
      "Send",
      [](world& w, nb::handle buf, int dest, int tag) {
        buffer b(buf.ptr(), false, "Send", w.rank(), "buf");
        unlocked gil_free;
        w.send(static_cast<const std::byte*>(b.data()), static_cast<std::int64_t>(b.bytes()), dest,
               tag);
      },
      nb::arg("buf"), nb::arg("dest"), nb::arg("tag") = 0);
  cls.def("Recv", &recv_into, nb::arg("buf"), nb::arg("source") = cairn::any_source,
          nb::arg("tag") = cairn::any_tag);
  cls.def(
      "Send_init",
      [](world& w, nb::handle buf, int dest, int tag) {
        return bind_once(w, buf, true, dest, tag);
      },
      nb::arg("buf"), nb::arg("dest"), nb::arg("tag") = 0);
  cls.def(
      "Recv_init",
      [](world& w, nb::handle buf, int source, int tag) {
        return bind_once(w, buf, false, source, tag);
      },
      nb::arg("buf"), nb::arg("source") = cairn::any_source, nb::arg("tag") = cairn::any_tag);
  cls.def(
      "Isend",
      [](world& w, nb::handle buf, int dest, int tag) {
        buffer b(buf.ptr(), false, "Isend", w.rank(), "buf");
        cairn::request req;
        {
          unlocked gil_free;
          req = w.isend(static_cast<const std::byte*>(b.data()),
                        static_cast<std::int64_t>(b.bytes()), dest, tag);
        }
        std::vector<buffer> held;
        held.push_back(std::move(b));
        return py_request(std::move(req), std::move(held));
      },
      nb::arg("buf"), nb::arg("dest"), nb::arg("tag") = 0);
  cls.def(
      "Irecv",
      [](world& w, nb::handle buf, int source, int tag) {
        buffer b(buf.ptr(), true, "Irecv", w.rank(), "buf");
        cairn::request req;
        {
          unlocked gil_free;
          req = w.irecv(static_cast<std::byte*>(b.data()), static_cast<std::int64_t>(b.bytes()),
                        source, tag);
        }
        std::vector<buffer> held;
        held.push_back(std::move(b));
        return py_request(std::move(req), std::move(held));
      },
      nb::arg("buf"), nb::arg("source") = cairn::any_source, nb::arg("tag") = cairn::any_tag);
  cls.def(
      "Sendrecv",
      [](world& w, nb::handle sendbuf, int dest, nb::handle recvbuf, int source, int sendtag,
         int recvtag) {
        buffer s(sendbuf.ptr(), false, "Sendrecv", w.rank(), "sendbuf");
        buffer r(recvbuf.ptr(), true, "Sendrecv", w.rank(), "recvbuf");
        unlocked gil_free;
        return w.sendrecv(static_cast<const std::byte*>(s.data()),
                          static_cast<std::int64_t>(s.bytes()), dest, sendtag,
                          static_cast<std::byte*>(r.data()), static_cast<std::int64_t>(r.bytes()),
                          source, recvtag);
      },
      nb::arg("sendbuf"), nb::arg("dest"), nb::arg("recvbuf"),
      nb::arg("source") = cairn::any_source, nb::arg("sendtag") = 0,
      nb::arg("recvtag") = cairn::any_tag);
  cls.def(
      "Probe",
      [](world& w, int source, int tag) {
        unlocked gil_free;
        return w.probe(source, tag);
      },
      nb::arg("source") = cairn::any_source, nb::arg("tag") = cairn::any_tag);
  cls.def(
      "Iprobe",
      [](world& w, int source, int tag) {
        unlocked gil_free;
        return w.iprobe(source, tag);
      },
      nb::arg("source") = cairn::any_source, nb::arg("tag") = cairn::any_tag);

  // Pickles travel as they are: sent from the bytes object, received into a new one sized by
  // the message.
  cls.def("_send_bytes", [](world& w, nb::bytes data, int dest, int tag) {
    const char* p = data.c_str();
    const std::size_t n = data.size();
    unlocked gil_free;
    w.send(p, static_cast<std::int64_t>(n), dest, tag);
  });
  cls.def("_isend_bytes", [](world& w, nb::bytes data, int dest, int tag) {
    buffer b(data.ptr(), false, "isend", w.rank(), "the pickle");
    cairn::request req;
    {
      unlocked gil_free;
      req = w.isend(static_cast<const char*>(b.data()), static_cast<std::int64_t>(b.bytes()), dest,
                    tag);
    }
    std::vector<buffer> held;
    held.push_back(std::move(b));
    return py_request(std::move(req), std::move(held));
  });
  cls.def("_recv_bytes", [](world& w, int source, int tag) {
    cairn::status st;
    std::string s;
    {
      unlocked gil_free;
      s = w.recv<std::string>(source, tag, st);
    }
    return nb::make_tuple(nb::bytes(s.data(), s.size()), st);
  });
  cls.def("_irecv_bytes", [](world& w, int source, int tag, nb::object loads) {
    cairn::value_request<std::string> req;
    {
      unlocked gil_free;
      req = w.irecv<std::string>(source, tag);
    }
    return py_request(std::move(req), std::move(loads));
  });
}

}  // namespace cairn_python
