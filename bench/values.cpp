// `cairn-bench value-pingpong | value-allreduce`: what the value forms of point-to-point and
// of the collectives cost next to the buffer forms they are built on, at 8 bytes (one double).
//
//   value-pingpong:  w.send(x, 1, tag) / double v = w.recv<double>(0, tag)
//           against  w.send(std::span(&x, 1), 1, tag) / w.recv(std::span(&v, 1), 0, tag)
//                    one-way latency (half the round trip) between ranks 0 and 1, rank 0's time
//   value-allreduce: double s = w.allreduce(x, cairn::plus{})
//           against  w.allreduce(std::span(&x, 1), std::span(&s, 1), cairn::plus{})
//                    time per call over all ranks, the slowest rank's
//
// Both forms run in the same cairn run, timed samples interleaved (value, buffer, value, ...);
// each figure is the median of its samples (min and max of the samples beside it). The baseline
// is "cairn-buffer-form". Threads engine: 2 ranks for the pingpong, the run's ranks for the
// allreduce; MPI engine: under mpirun, the ranks mpirun starts. Every sample verifies what it
// moved (a chained counter through the round trips, a running sum of the reductions).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "baseline.hpp"
#include "cairn/cairn.hpp"
#include "placement.hpp"
#include "registry.hpp"

namespace cairn::bench {

namespace {

constexpr std::string_view buffer_form_name = "cairn-buffer-form";
constexpr int data_tag = 7;

/// Which of the two forms a sample runs.
enum class form { value, buffer };

/// How long a sample lasts and how many each form gets.
struct plan {
  double sample_seconds = 0.01;  ///< target duration of one timed sample on the slowest rank
  int samples = 31;              ///< timed samples per form (odd: the median is one of them)
  int max_iters = 1 << 20;       ///< cap on operations per sample
};

/// The plan from `--samples` and `--sample-us` (defaults 31 and 10000; 11 and 2000 with
/// --quick).
plan plan_of(const options& o) {
  plan p;
  if (o.quick) p = plan{0.002, 11, 1 << 20};
  p.samples =
      static_cast<int>(count_param(o, "samples", static_cast<std::uint64_t>(p.samples), 1, 10001));
  const auto us = count_param(o, "sample-us", static_cast<std::uint64_t>(p.sample_seconds * 1e6), 1,
                              10'000'000);
  p.sample_seconds = static_cast<double>(us) * 1e-6;
  return p;
}

/// One comparison of a value form with its buffer form.
struct comparison {
  std::string_view metric;    ///< e.g. "latency_us"
  double scale = 1e6;         ///< seconds per operation -> the metric (one-way: 0.5e6)
  bool slowest_rank = false;  ///< the figure is the slowest rank's time (else rank 0's)
  int min_ranks = 1;          ///< fewer ranks is a usage error
  cairn::launch_options launch;
  /// Runs `iters` operations of form `f` on every rank (a collective call) and throws if what
  /// arrived is wrong.
  std::function<void(cairn::world& w, form f, int iters)> run;
};

/// The samples of the two forms on rank 0, in seconds per operation.
struct samples_of_forms {
  std::vector<double> value, buffer;
  int iters = 0;
  std::string engine;
  int ranks = 0;
};

/// Runs the interleaved samples of `c` inside one cairn run; rank 0's result (empty elsewhere).
samples_of_forms measure(cairn::world& w, const comparison& c, const plan& p) {
  if (w.size() < c.min_ranks)
    throw std::runtime_error("this benchmark needs at least " + std::to_string(c.min_ranks) +
                             " ranks, this run has " + std::to_string(w.size()));
  // Warm-up of both forms (connections, buffers, caches), verified like every sample.
  c.run(w, form::value, 100);
  c.run(w, form::buffer, 100);

  // Operations per sample: batches of 1, 4, 16, ... of the value form until one lasts a tenth
  // of a sample on the slowest rank (the same decision everywhere: slowest() is collective).
  int iters = 1;
  for (int k = 1;; k = std::min(k * 4, p.max_iters)) {
    w.barrier();
    const auto t0 = std::chrono::steady_clock::now();
    c.run(w, form::value, k);
    const double dt =
        slowest(w, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    if (dt >= p.sample_seconds / 10 || k >= p.max_iters) {
      iters = static_cast<int>(
          std::clamp(p.sample_seconds / (dt / k), 1.0, static_cast<double>(p.max_iters)));
      break;
    }
  }

  samples_of_forms out;
  out.iters = iters;
  for (int i = 0; i < 2 * p.samples; ++i) {
    const form f = i % 2 == 0 ? form::value : form::buffer;
    w.barrier();
    const auto t0 = std::chrono::steady_clock::now();
    c.run(w, f, iters);
    double dt =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / iters;
    if (c.slowest_rank) dt = slowest(w, dt);
    if (w.rank() == 0) (f == form::value ? out.value : out.buffer).push_back(dt);
  }
  if (w.rank() == 0) {
    out.engine = cairn::to_string(w.engine());
    out.ranks = w.size();
  }
  return out;
}

/// The subcommand for `c`: placement probe, one cairn run of interleaved samples, probe, row.
int run_comparison(const invocation& inv, const comparison& c) {
  if (inv.opts.raw_mpi_only) return 0;  // the baseline is cairn's buffer form, in the same run
  const plan p = plan_of(inv.opts);
  const bool under_mpi = cairn::detect_engine(inv.argc, inv.argv) == cairn::engine::mpi;
#if CAIRN_BENCH_HAVE_MPI
  // Under mpirun MPI is initialized before cairn so that the placement probes can keep the
  // other ranks in a sleeping barrier (cairn::launch keeps the level it finds).
  std::optional<plain_mpi> mpi;
  if (under_mpi) mpi.emplace(cairn::mpi_thread_level_requested(c.launch));
#endif
  std::vector<double> probes;
  if (const auto ns = placement_probe(under_mpi)) probes.push_back(*ns);
  samples_of_forms got;
  bool rank0 = false;
  const int rc = cairn::launch(inv.argc, inv.argv, c.launch, [&](cairn::world& w) {
    samples_of_forms mine = measure(w, c, p);
    if (w.rank() == 0) {
      got = std::move(mine);
      rank0 = true;
    }
  });
  if (rc != 0)
    throw std::runtime_error("the cairn run failed (exit code " + std::to_string(rc) + ")");
  if (const auto ns = placement_probe(under_mpi)) probes.push_back(*ns);
  if (!rank0) return 0;

  auto scaled = [&](std::vector<double> v) {
    for (double& x : v) x *= c.scale;
    return v;
  };
  const std::vector<double> value = scaled(got.value), buffer = scaled(got.buffer);
  report rep(inv.opts.json);
  row r{std::string(inv.name), got.engine, got.ranks,     sizeof(double),
        std::string(c.metric), "lower",    median(value), std::string(buffer_form_name),
        median(buffer)};
  r.min = *std::min_element(value.begin(), value.end());
  r.max = *std::max_element(value.begin(), value.end());
  r.baseline_min = *std::min_element(buffer.begin(), buffer.end());
  r.baseline_max = *std::max_element(buffer.begin(), buffer.end());
  r.set("samples", std::to_string(value.size()));
  r.set("iters_per_sample", std::to_string(got.iters));
  r.set("baseline_mode", json_text(std::string_view("interleaved-samples")));
  r.set("difference_ns",
        json_text(std::optional<double>((median(value) - median(buffer)) * 1e9 / c.scale)));
  const std::string level = mpi_thread_level_name();
  r.set("thread_level", level.empty() ? "null" : json_text(level));
  placement_span where;
  where.all = probes;
  if (!probes.empty()) {
    where.before = probes.front();
    where.after = probes.back();
  }
  r.set("handoff_ns_before", json_text(where.before));
  r.set("handoff_ns_after", json_text(where.after));
  r.set("placement_changed", json_text(where.changed()));
  rep.add(std::move(r));
  return 0;
}

/// Throws naming `what` unless `got` equals `want`.
void expect(double got, double want, const char* what, cairn::world& w) {
  if (got != want)
    throw std::runtime_error(std::string(what) + " rank " + std::to_string(w.rank()) + ": got " +
                             std::to_string(got) + ", expected " + std::to_string(want));
}

/// `iters` round trips between ranks 0 and 1 of one double: rank 0 sends x and receives it
/// back, then sends x + 1, so after the sample x must equal `iters`.
void pingpong(cairn::world& w, form f, int iters) {
  const int me = w.rank();
  if (me == 0) {
    double x = 0;
    if (f == form::value) {
      for (int i = 0; i < iters; ++i) {
        w.send(x, 1, data_tag);
        x = w.recv<double>(1, data_tag) + 1;
      }
    } else {
      double v = 0;
      for (int i = 0; i < iters; ++i) {
        w.send(std::span(&x, 1), 1, data_tag);
        w.recv(std::span(&v, 1), 1, data_tag);
        x = v + 1;
      }
    }
    expect(x, iters, f == form::value ? "value-pingpong" : "buffer-pingpong", w);
  } else if (me == 1) {
    if (f == form::value) {
      for (int i = 0; i < iters; ++i) {
        const double v = w.recv<double>(0, data_tag);
        w.send(v, 0, data_tag);
      }
    } else {
      double v = 0;
      for (int i = 0; i < iters; ++i) {
        w.recv(std::span(&v, 1), 0, data_tag);
        w.send(std::span(&v, 1), 0, data_tag);
      }
    }
  }
}

/// `iters` allreduces (sum) of one double: rank r contributes r + 1, so every result is
/// p(p+1)/2 and their running sum iters times that (all exact in double).
void allreduce(cairn::world& w, form f, int iters) {
  const double x = w.rank() + 1;
  double acc = 0;
  if (f == form::value) {
    for (int i = 0; i < iters; ++i) {
      const double s = w.allreduce(x, cairn::plus{});
      acc += s;
    }
  } else {
    double s = 0;
    for (int i = 0; i < iters; ++i) {
      w.allreduce(std::span(&x, 1), std::span(&s, 1), cairn::plus{});
      acc += s;
    }
  }
  const double p = w.size();
  expect(acc, iters * (p * (p + 1) / 2), f == form::value ? "value-allreduce" : "buffer-allreduce",
         w);
}

/// `cairn-bench value-pingpong`.
int run_value_pingpong(const invocation& inv) {
  comparison c;
  c.metric = "latency_us";
  c.scale = 0.5e6;  // one way: half the round trip
  c.min_ranks = 2;
  c.launch.ranks = 2;  // threads engine; under mpirun, mpirun decides
  c.run = pingpong;
  return run_comparison(inv, c);
}

/// `cairn-bench value-allreduce`.
int run_value_allreduce(const invocation& inv) {
  comparison c;
  c.metric = "latency_us";
  c.scale = 1e6;
  c.slowest_rank = true;
  c.run = allreduce;
  return run_comparison(inv, c);
}

const std::vector<param_spec> value_params{
    {"samples", "timed samples per form, interleaved (the median is the figure)",
     "31, 11 with --quick"},
    {"sample-us", "target duration of one timed sample in microseconds",
     "10000, 2000 with --quick"}};
const param_registrar pingpong_params{"value-pingpong", value_params};
const param_registrar allreduce_params{"value-allreduce", value_params};

const registrar pingpong_reg{
    {"value-pingpong",
     "8 B one-way latency rank 0 <-> 1, send(x)/recv<double> vs the span forms (us)",
     run_value_pingpong}};
const registrar allreduce_reg{{"value-allreduce",
                               "8 B allreduce over all ranks, allreduce(x, plus) vs the span "
                               "form (us)",
                               run_value_allreduce}};

}  // namespace

}  // namespace cairn::bench
