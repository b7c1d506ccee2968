#pragma once
/// \file
/// What every cairn-bench subcommand shares: the command-line options, the result row and its
/// printer (aligned table or JSON lines), the message-size ladder and the sampling helper.

#include <chrono>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cairn::bench {

/// Options common to all subcommands (parsed by main.cpp).
struct options {
  bool json = false;          ///< one JSON object per line instead of the table
  bool quick = false;         ///< fewer sizes and iterations (a few seconds per run)
  bool baseline = true;       ///< measure the mpi-raw baseline (`--no-baseline` turns it off)
  bool raw_mpi_only = false;  ///< internal: only measure raw MPI and print it as JSON lines
  std::size_t min_size = 8;   ///< smallest message size in bytes (`--sizes=a-b`)
  std::size_t max_size = std::size_t{4} << 20;  ///< largest message size in bytes
  bool sizes_given = false;  ///< `--sizes` was on the command line (forwarded to children)
  /// internal (`--size-list=a,b,...`): exactly these sizes, for a spawned baseline child
  std::vector<std::size_t> size_list;
  /// The subcommand's own parameters as given (`--scale=16`), by name (see registry.hpp).
  std::map<std::string, std::string, std::less<>> params;
};

/// Largest message size `--sizes` accepts; keeps every count within MPI's `int`.
inline constexpr std::size_t max_message_size = std::size_t{1} << 30;

/// Parses a byte count such as `8`, `64K`, `4M`, `1G`, `4MiB` (binary multiples). Returns
/// nullopt on malformed input.
std::optional<std::size_t> parse_size(std::string_view text);

/// Parses `a-b` (or a single `a`) into `opts.min_size`/`opts.max_size`; returns an error
/// message, empty on success.
std::string parse_size_range(std::string_view text, options& opts);

/// The message sizes to measure: min_size, doubling up to max_size, max_size always last
/// (exactly `size_list` when it is set).
/// With `quick`, only the smallest, the largest and every third doubling down from the largest.
std::vector<std::size_t> size_ladder(const options& opts);

/// "8 B", "4 KiB", "4 MiB" for exact binary multiples, otherwise the byte count with " B".
std::string human_size(std::size_t bytes);
/// The row's size as the table shows it: human_size for bytes, else e.g. "256 Ki vertices".
std::string row_size_text(std::size_t size, const std::string& unit);

/// One measured figure: cairn's value and the baseline's for the same configuration.
struct row {
  row() = default;
  /// The fields every row has (the rest start empty).
  row(std::string bench_, std::string engine_, int ranks_, std::size_t size_, std::string metric_,
      std::string better_, std::optional<double> cairn_, std::string baseline_,
      std::optional<double> baseline_value_)
      : bench(std::move(bench_)),
        engine(std::move(engine_)),
        ranks(ranks_),
        size(size_),
        metric(std::move(metric_)),
        better(std::move(better_)),
        cairn(cairn_),
        baseline(std::move(baseline_)),
        baseline_value(baseline_value_) {}

  std::string bench;     ///< subcommand name, e.g. "pingpong"
  std::string engine;    ///< "threads" or "mpi"
  int ranks = 0;         ///< ranks in the run
  std::size_t size = 0;  ///< message size in bytes, or a count of size_unit
  /// What `size` counts: "B" (bytes) unless the benchmark's size is a count of something else
  /// (e.g. "vertices" of a graph, "words" of a vocabulary).
  std::string size_unit = "B";
  std::string metric;  ///< e.g. "latency_us", "bandwidth_MBps"
  std::string better;  ///< "lower" or "higher"
  /// cairn's figure; absent only in `--raw-mpi-only` rows, which carry just the baseline.
  std::optional<double> cairn;
  std::string baseline;                  ///< baseline name, e.g. "mpi-raw"
  std::optional<double> baseline_value;  ///< absent when the baseline could not be measured
  /// The spread of the rounds behind `cairn` and `baseline_value` (their median), when the
  /// figure is the median of several rounds.
  std::optional<double> min, max, baseline_min, baseline_max;
  /// Further fields, in order: name and the value as JSON text (json_text() makes one).
  std::vector<std::pair<std::string, std::string>> extra;

  /// Adds a further field (`value` is JSON text).
  void set(std::string key, std::string value) {
    extra.emplace_back(std::move(key), std::move(value));
  }
  /// True when a further field `key` was set.
  [[nodiscard]] bool has(std::string_view key) const;

  /// cairn / baseline_value, when both exist and the baseline is non-zero.
  [[nodiscard]] std::optional<double> ratio() const;
};

/// The row as one JSON object on one line (no trailing newline); missing values are null.
/// Fields: bench, engine, ranks, size, metric, better, cairn (also as `value`), baseline,
/// baseline_value, ratio; min/max/baseline_min/baseline_max when set; the further fields; and
/// `params`, the subcommand's parameters as this run used them (registry.hpp); `context`, the
/// run's (context.hpp).
std::string to_json(const row& r);

/// JSON text of a string, a number (null when absent or not finite) and a boolean.
std::string json_text(std::string_view s);
/// A string literal is text (without this overload it would convert to bool).
inline std::string json_text(const char* s) { return json_text(std::string_view(s)); }
std::string json_text(std::optional<double> v);
std::string json_text(bool b);

/// Collects rows and prints them on stdout: JSON lines at once, or an aligned table at the
/// end (widths fit the content). Only rank 0 of a run should own one.
class report {
 public:
  /// A printer in JSON-lines (`json`) or table form.
  explicit report(bool json) : json_(json) {}
  report(const report&) = delete;
  report& operator=(const report&) = delete;
  /// Prints the table if not done yet.
  ~report();

  /// Adds one row (printed and flushed at once in JSON mode, so a pipe sees it immediately).
  void add(row r);
  /// Prints the table (table mode); later calls do nothing.
  void finish();

 private:
  bool json_;
  bool finished_ = false;
  std::vector<row> rows_;
};

/// Writes "cairn-bench: <text>" as one line on stderr.
void note(std::string_view text);

/// How a figure is sampled: untimed warm-up iterations, then `samples` timed runs of `iters`
/// iterations each; the median of the per-iteration times is reported.
struct sampling {
  int warmup_iters = 1;  ///< iterations run before any timing
  int samples = 5;       ///< timed samples (odd, so the median is one of them)
  int iters = 1;         ///< iterations per timed sample
};

/// Median of `values` (the mean of the two middle ones for an even count); 0 when empty.
double median(std::vector<double> values);

/// Runs `body(s.warmup_iters)` untimed, then `s.samples` times `body(s.iters)` under a steady
/// clock, each preceded by an untimed `prepare()` (e.g. a barrier, so that all ranks start a
/// sample together); returns the median seconds per iteration. Every rank taking part calls it
/// with the same `s`, so all of them run the same number of iterations.
template <class Prepare, class Body>
double median_seconds_per_iter(const sampling& s, Prepare&& prepare, Body&& body) {
  if (s.warmup_iters > 0) body(s.warmup_iters);
  std::vector<double> per_iter;
  per_iter.reserve(static_cast<std::size_t>(s.samples));
  for (int i = 0; i < s.samples; ++i) {
    prepare();
    const auto t0 = std::chrono::steady_clock::now();
    body(s.iters);
    const auto t1 = std::chrono::steady_clock::now();
    per_iter.push_back(std::chrono::duration<double>(t1 - t0).count() / s.iters);
  }
  return median(std::move(per_iter));
}

/// As above without a `prepare` step.
template <class Body>
double median_seconds_per_iter(const sampling& s, Body&& body) {
  return median_seconds_per_iter(
      s, [] {}, std::forward<Body>(body));
}

}  // namespace cairn::bench
