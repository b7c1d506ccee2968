#include "runtime/progress_thread.hpp"

#include <time.h>
#if defined(__linux__)
#include <sys/prctl.h>
#endif

#include "runtime/rank_context.hpp"

namespace cairn::detail {

progress_thread::progress_thread(std::vector<rank_context*> ranks, double interval_s)
    : ranks_(std::move(ranks)), interval_s_(interval_s), thread_([this] { run(); }) {}

progress_thread::~progress_thread() {
  stop_.store(true, std::memory_order_relaxed);
  thread_.join();
}

void progress_thread::run() noexcept {
#if defined(__linux__)
  // The default timer slack (50 us) would stretch every short sleep to at least that.
  prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);
#endif
  const long ns = static_cast<long>(interval_s_ * 1e9);
  const timespec pause{ns / 1000000000L, ns % 1000000000L};
  while (!stop_.load(std::memory_order_relaxed)) {
    bool found = false;
    for (rank_context* r : ranks_) found = r->help() || found;
    // Something arrived: sweep again at once (a collective's next round is likely close);
    // otherwise give the cores back to the ranks.
    if (!found) nanosleep(&pause, nullptr);
  }
}

}  // namespace cairn::detail
