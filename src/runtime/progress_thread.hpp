#pragma once
// launch_options::progress = thread: one thread per process that advances the ranks which
// are outside cairn (rank_context::help), so that non-blocking operations move while the
// ranks compute. It never blocks a rank: it only ever tries a rank's lock.

#include <atomic>
#include <thread>
#include <vector>

namespace cairn::detail {

class rank_context;

class progress_thread {
 public:
  /// Starts sweeping `ranks` (which must outlive this object); after a sweep that found
  /// nothing it sleeps `interval_s`.
  progress_thread(std::vector<rank_context*> ranks, double interval_s);
  /// Stops and joins the thread.
  ~progress_thread();
  progress_thread(const progress_thread&) = delete;
  progress_thread& operator=(const progress_thread&) = delete;

 private:
  void run() noexcept;

  std::vector<rank_context*> ranks_;
  double interval_s_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace cairn::detail
