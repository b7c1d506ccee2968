#include "cairn/coll/persistent.hpp"

#include "cairn/runtime/error.hpp"

namespace cairn {

void persistent_request::start() {
  if (!prepared_.plan) throw error("cairn::persistent_request::start: empty persistent request");
  if (active())
    detail::fail(prepared_.call, prepared_.target.world_rank,
                 "start of a persistent collective whose previous start has not completed");
  current_ = detail::start_prepared(prepared_);
}

bool persistent_request::test() { return current_.test(); }

status persistent_request::wait() { return current_.wait(); }

const coll::schedule& persistent_request::plan() const {
  if (!prepared_.plan) throw error("cairn::persistent_request::plan: empty persistent request");
  return *prepared_.plan;
}

}  // namespace cairn
