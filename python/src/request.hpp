#pragma once
// cairn.Request: a non-blocking call in flight, holding the buffers it reads or writes; and
// cairn.PersistentRequest, one set up once and started many times.
#include <nanobind/nanobind.h>

#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "buffer.hpp"
#include "cairn/coll/persistent.hpp"
#include "cairn/runtime/persistent_p2p.hpp"
#include "cairn/runtime/request.hpp"
#include "cairn/runtime/value_request.hpp"
#include "gil.hpp"

namespace cairn_python {

namespace nb = nanobind;

/// A non-blocking call of the Python API. Its buffers stay exported (alive, and numpy arrays
/// not resizable) until it completes. A request for an object (`irecv`) yields the object.
class py_request {
 public:
  /// A buffer call's request, keeping `held` until it completes.
  py_request(cairn::request req, std::vector<buffer> held)
      : req_(std::move(req)), held_(std::move(held)) {}
  /// A request on memory that `keep` (Python objects) owns, kept alive until it completes.
  py_request(cairn::request req, nb::object keep) : req_(std::move(req)), keep_(std::move(keep)) {}
  /// An object receive: the pickled bytes arrive in `bytes`, `loads` turns them into the object.
  py_request(cairn::value_request<std::string> bytes, nb::object loads)
      : bytes_(std::move(bytes)), loads_(std::move(loads)) {}
  /// Takes over `other`'s call; `other` is left with nothing to finish.
  py_request(py_request&& other) noexcept
      : req_(std::move(other.req_)),
        held_(std::move(other.held_)),
        keep_(std::move(other.keep_)),
        bytes_(std::move(other.bytes_)),
        loads_(std::move(other.loads_)),
        received_(std::move(other.received_)),
        object_(std::move(other.object_)),
        status_(other.status_),
        done_(std::exchange(other.done_, true)) {
    other.bytes_.reset();
  }
  py_request& operator=(py_request&&) = delete;
  /// A request still in flight is finished first, as cairn's requests do (with the GIL
  /// released, so that the other ranks' threads go on).
  ~py_request() {
    if (!done_) {
      try {
        unlocked gil_free;
        if (bytes_)
          bytes_->wait();
        else
          req_.wait();
      } catch (...) {
        // A failure of an abandoned request is reported by the run, not by a destructor.
      }
    }
  }

  /// Blocks until complete; the object for an object receive, else None.
  nb::object wait() {
    if (!done_) {
      {
        unlocked gil_free;
        if (bytes_)
          received_ = bytes_->wait();
        else
          status_ = req_.wait();
      }
      finish();
    }
    return result();
  }
  /// True once complete (advancing communication).
  bool test() {
    if (done_) return true;
    bool ready = false;
    {
      unlocked gil_free;
      if (bytes_) {
        ready = bytes_->test();
        if (ready) received_ = bytes_->wait();
      } else {
        ready = req_.test();
        if (ready) status_ = req_.last_status();
      }
    }
    if (ready) finish();
    return ready;
  }
  /// The status of a completed receive or send.
  [[nodiscard]] const cairn::status& status() const { return status_; }

 private:
  void finish() {
    done_ = true;
    for (auto& b : held_) b.release();
    held_.clear();
    keep_ = nb::object();
  }
  nb::object result() {
    if (!bytes_) return nb::none();
    if (!object_) {
      object_ = loads_(nb::bytes(received_.data(), received_.size()));
      received_.clear();
    }
    return *object_;
  }

  cairn::request req_;
  std::vector<buffer> held_;
  nb::object keep_;
  std::optional<cairn::value_request<std::string>> bytes_;
  nb::object loads_;
  std::string received_;
  std::optional<nb::object> object_;
  cairn::status status_;
  bool done_ = false;
};

/// cairn.PersistentRequest: a collective checked and planned once (`Allreduce_init`, ...) or a
/// send or receive bound once (`Send_init`, `Recv_init`), started many times; it keeps its
/// buffers exported for as long as it lives.
class py_persistent {
 public:
  /// A persistent collective.
  py_persistent(cairn::persistent_request req, std::vector<buffer> held)
      : req_(std::move(req)), held_(std::move(held)) {}
  /// A persistent send or receive; `what` describes it (its `plan`).
  py_persistent(cairn::persistent_p2p req, std::vector<buffer> held, std::string what)
      : req_(std::move(req)), held_(std::move(held)), what_(std::move(what)) {}
  py_persistent(py_persistent&&) noexcept = default;
  py_persistent& operator=(py_persistent&&) = delete;
  /// A start still running is finished first (with the GIL released).
  ~py_persistent() {
    if (!active()) return;
    try {
      unlocked gil_free;
      std::visit([](auto& r) { r.wait(); }, req_);
    } catch (...) {
      // A failure of an abandoned start is reported by the run, not by a destructor.
    }
  }

  /// Starts it (cairn::error if the previous start is still running).
  void start() {
    unlocked gil_free;
    std::visit([](auto& r) { r.start(); }, req_);
  }
  /// Blocks until the current start completed (returns at once when not started).
  void wait() {
    unlocked gil_free;
    status_ = std::visit([](auto& r) { return r.wait(); }, req_);
  }
  /// True once the current start completed (advancing communication).
  bool test() {
    unlocked gil_free;
    return std::visit(
        [this](auto& r) {
          const bool done = r.test();
          if (done) status_ = r.wait();  // complete: returns its status at once
          return done;
        },
        req_);
  }
  /// True between start() and the test() or wait() that sees completion.
  [[nodiscard]] bool active() const noexcept {
    return std::visit([](const auto& r) { return r.active(); }, req_);
  }
  /// The schedule every start of a collective runs, as cairn prints it; for a send or receive,
  /// what it moves where.
  [[nodiscard]] std::string plan() const {
    if (const auto* c = std::get_if<cairn::persistent_request>(&req_)) {
      std::ostringstream os;
      os << c->plan();
      return os.str();
    }
    return what_;
  }
  /// The status of the last completed start (a receive's source, tag and size).
  [[nodiscard]] const cairn::status& status() const noexcept { return status_; }

 private:
  std::variant<cairn::persistent_request, cairn::persistent_p2p> req_;
  std::vector<buffer> held_;
  std::string what_;
  cairn::status status_;
};

}  // namespace cairn_python
