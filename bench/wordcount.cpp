// `cairn-bench wordcount`: a distributed word count. Every rank holds `words` words (a
// std::vector<std::string>, generated untimed) drawn from a Zipf distribution of exponent s over
// a vocabulary of V distinct words: word number j (probability ∝ 1/(j+1)^s) is "w" followed by
// the decimal digits of a fixed bijective scramble of j, so words are 2–8 characters long for
// V = 2^20. Every word is counted at the rank that owns it. The figure is words counted per
// second over all ranks (ranks × words / slowest rank's seconds; higher is better).
//
// cairn (`wordcount`): a fresh cairn::containers::counting_set<std::string> per sample
// (constructed untimed); timed from a barrier to after w.quiesce(): cs.async_insert(word) for
// every word of the rank, then w.quiesce(), after which every count is in place at its owner.
// counting_set combines repeated words at the source (a direct-mapped cache of
// container_options::cache_slots slots) before they travel; the baseline sends every
// occurrence, so the ratio grows with s.
// With `--route=grid` or `--route=hypercube` (row `wordcount-grid`, `wordcount-hypercube`) the
// set's calls travel through intermediate ranks, whose caches take the counts passing through
// and send them on merged (container_options::combine_hops; `--combine-hops=0` turns it off);
// the row adds, over all ranks in the last sample, the calls forwarded, those taken into a
// hop's cache (combined_hops), and those run at their owners (delivered).
//
// Baseline (`mpi-alltoallv`, the program a user writes by hand): hash every word to its owner
// (std::hash<std::string>, then a multiply-shift into [0, P)), pack the words by destination
// into one byte buffer (a one-byte length, then the characters), MPI_Alltoall of the byte
// counts, MPI_Alltoallv of the bytes, and count the received words into a local
// std::unordered_map<std::string, std::uint64_t>. The input is sent in `rounds` slices (by
// default as many as keep a round at about 64 MiB per rank). Timed from an MPI_Barrier to the
// last count. Inline under mpirun; in a plain (threads) run from a child
// `mpirun -np P cairn-bench wordcount --raw-mpi-only`.
//
// Verified after every run, both sides, against the exact histogram of the input over word
// numbers (each rank counts its own words by number while generating them; one allreduce of V
// counters, untimed): every key a rank holds is a word of the vocabulary, owned by that rank,
// and its count equals the histogram's; the counts over all ranks sum to ranks × words; the keys
// over all ranks number as many as the distinct words generated. So each side's count of
// distinct words is the same, whichever engine. cairn also: cs.size() is that number,
// cs.topk(10) holds the 10 largest counts of the histogram (largest first) with their own
// words, and cs.count() of the most probable word and of a word outside the vocabulary is right.
#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "baseline.hpp"
#include "cairn/cairn.hpp"
#include "cairn/containers/counting_set.hpp"
#include "random.hpp"
#include "registry.hpp"

#if CAIRN_BENCH_HAVE_MPI
#include <mpi.h>
#endif

namespace cairn::bench {

namespace {

constexpr std::string_view metric = "words_per_s";
constexpr std::string_view better = "higher";
constexpr std::string_view baseline_name = "mpi-alltoallv";
constexpr std::size_t top_k = 10;
constexpr double round_bytes = 64.0 * 1024 * 1024;  // the baseline's default bytes per round

// The vocabulary and its Zipf distribution, built once per process and only read afterwards
// (the ranks of a threads run share it): the words by number, the inverse of the scramble, and
// Vose's alias table for O(1) sampling.
class vocabulary {
 public:
  vocabulary(std::uint64_t v, double s) : v_(v), words_(v), number_of_(v), prob_(v), alias_(v) {
    const bijection scramble(v, 0x9FB21C651E98DF25ULL);
    std::array<char, 24> digits{};
    for (std::uint64_t j = 0; j < v; ++j) {
      const std::uint64_t x = scramble(j);
      number_of_[x] = static_cast<std::uint32_t>(j);
      const auto end = std::to_chars(digits.data(), digits.data() + digits.size(), x).ptr;
      std::string& w = words_[j];
      w.reserve(static_cast<std::size_t>(end - digits.data()) + 1);
      w.push_back('w');
      w.append(digits.data(), end);
    }
    // Weights 1/(j+1)^s scaled to mean 1; Vose's method pairs each light entry with a heavy one.
    std::vector<double> p(v);
    double sum = 0;
    for (std::uint64_t j = 0; j < v; ++j) sum += p[j] = std::pow(static_cast<double>(j + 1), -s);
    mean_bytes_ = 0;
    for (std::uint64_t j = 0; j < v; ++j) {
      mean_bytes_ += p[j] / sum * static_cast<double>(words_[j].size() + 1);
      p[j] *= static_cast<double>(v) / sum;
    }
    std::vector<std::uint32_t> small, large;
    for (std::uint64_t j = v; j-- > 0;)
      (p[j] < 1 ? small : large).push_back(static_cast<std::uint32_t>(j));
    while (!small.empty() && !large.empty()) {
      const std::uint32_t l = small.back(), g = large.back();
      small.pop_back();
      prob_[l] = p[l];
      alias_[l] = g;
      p[g] = (p[g] + p[l]) - 1;
      if (p[g] < 1) {
        large.pop_back();
        small.push_back(g);
      }
    }
    for (const std::uint32_t j : large) prob_[j] = 1, alias_[j] = j;
    for (const std::uint32_t j : small) prob_[j] = 1, alias_[j] = j;  // rounding leftovers
  }

  [[nodiscard]] std::uint64_t size() const noexcept { return v_; }
  [[nodiscard]] const std::string& word(std::uint64_t j) const { return words_[j]; }
  // Expected bytes of one packed word in the baseline (length byte and characters).
  [[nodiscard]] double mean_bytes() const noexcept { return mean_bytes_; }

  // A word number drawn from the distribution.
  [[nodiscard]] std::uint32_t sample(keygen& g) const noexcept {
    const std::uint64_t j = scale(g.next(), v_);
    const double coin = static_cast<double>(g.next() >> 11) * 0x1p-53;
    return coin < prob_[j] ? static_cast<std::uint32_t>(j) : alias_[j];
  }

  // The number of `w` if it is a word of the vocabulary.
  [[nodiscard]] std::optional<std::uint32_t> number(std::string_view w) const {
    if (w.size() < 2 || w[0] != 'w') return std::nullopt;
    std::uint64_t x = 0;
    const auto [end, ec] = std::from_chars(w.data() + 1, w.data() + w.size(), x);
    if (ec != std::errc{} || end != w.data() + w.size() || x >= v_) return std::nullopt;
    const std::uint32_t j = number_of_[x];
    if (words_[j] != w) return std::nullopt;  // e.g. leading zeros
    return j;
  }

 private:
  std::uint64_t v_;
  std::vector<std::string> words_;
  std::vector<std::uint32_t> number_of_;  // the inverse of the scramble
  std::vector<double> prob_;
  std::vector<std::uint32_t> alias_;
  double mean_bytes_ = 0;
};

struct settings {
  std::uint64_t words;       // per rank
  std::uint64_t vocabulary;  // V
  double zipf;               // s
  int samples;               // timed runs per figure
  int rounds;                // the baseline's exchange rounds
  std::size_t cache_slots;   // the set's combining cache (container_options::cache_slots)
  bool combine_hops;         // container_options::combine_hops
  std::string route;         // direct, grid or hypercube
};

// This rank's words and the exact histogram of all ranks' inputs by word number.
struct input {
  std::vector<std::string> words;
  std::vector<std::uint64_t> histogram;  // over all ranks, by word number
  std::uint64_t total = 0;               // ranks × words
  std::uint64_t distinct = 0;            // word numbers that occur at all
  std::vector<std::uint64_t> top;        // the min(10, distinct) largest counts, largest first

  input(cairn::world& w, const vocabulary& voc, std::uint64_t per_rank)
      : words(per_rank), histogram(voc.size(), 0) {
    keygen g{0xD1B54A32D192ED03ULL * static_cast<std::uint64_t>(w.rank() + 1)};
    for (std::string& s : words) {
      const std::uint32_t j = voc.sample(g);
      ++histogram[j];
      s = voc.word(j);
    }
    w.allreduce(histogram, cairn::plus{});
    for (const std::uint64_t c : histogram) {
      total += c;
      distinct += c != 0;
    }
    top = histogram;
    const auto k = static_cast<std::ptrdiff_t>(std::min<std::uint64_t>(top_k, distinct));
    std::partial_sort(top.begin(), top.begin() + k, top.end(), std::greater<>{});
    top.resize(static_cast<std::size_t>(k));
  }
};

// Throws unless the keys of `local` on every rank are words of the vocabulary owned by their
// rank (`owns`), each with the count of the histogram, summing to ranks × words, as many as the
// distinct words generated.
template <class Map, class Owns>
void verify_local(cairn::world& w, const vocabulary& voc, const input& in, const Map& local,
                  Owns owns, const std::string& who) {
  std::array<std::uint64_t, 5> mine{0, 0, 0, 0, local.size()}, all{};  // unknown, wrong, foreign
  for (const auto& [key, count] : local) {
    const auto j = voc.number(key);
    if (!j)
      ++mine[0];
    else if (count != in.histogram[*j])
      ++mine[1];
    mine[2] += !owns(key);
    mine[3] += count;
  }
  w.allreduce(std::span(mine), std::span(all), cairn::plus{});
  const std::uint64_t expected = static_cast<std::uint64_t>(w.size()) * in.words.size();
  if (all[0] != 0 || all[1] != 0 || all[2] != 0 || all[3] != expected || all[4] != in.distinct)
    throw std::runtime_error(
        "wordcount (" + who + "): " + std::to_string(all[0]) + " keys not in the vocabulary, " +
        std::to_string(all[1]) + " wrong counts, " + std::to_string(all[2]) +
        " keys at a rank not their owner; counts sum to " + std::to_string(all[3]) + " (expected " +
        std::to_string(expected) + "), " + std::to_string(all[4]) + " distinct keys (expected " +
        std::to_string(in.distinct) + ")");
}

// The collective queries of `cs` against the input: size, topk(10), count.
template <class Set>
void verify_queries(Set& cs, const vocabulary& voc, const input& in) {
  auto fail = [](const std::string& what) {
    throw std::runtime_error("wordcount (cairn): " + what);
  };
  if (const std::uint64_t n = cs.size(); n != in.distinct)
    fail("size() is " + std::to_string(n) + ", " + std::to_string(in.distinct) +
         " distinct words were generated");
  const auto top = cs.topk(top_k);
  if (top.size() != in.top.size())
    fail("topk(" + std::to_string(top_k) + ") returned " + std::to_string(top.size()) +
         " entries, expected " + std::to_string(in.top.size()));
  for (std::size_t i = 0; i < top.size(); ++i) {
    const auto& [word, count] = top[i];
    const auto j = voc.number(word);
    if (!j || count != in.histogram[*j] || count != in.top[i])
      fail("topk entry " + std::to_string(i) + " is (\"" + word + "\", " + std::to_string(count) +
           "); the input has " + (j ? std::to_string(in.histogram[*j]) : "no") +
           " occurrences of that word, and count number " + std::to_string(i + 1) +
           " from the top is " + std::to_string(in.top[i]));
  }
  if (const std::uint64_t c = cs.count(voc.word(0)); c != in.histogram[0])
    fail("count(\"" + voc.word(0) + "\") is " + std::to_string(c) + ", expected " +
         std::to_string(in.histogram[0]));
  if (const std::uint64_t c = cs.count(std::string("x")); c != 0)
    fail("count(\"x\") of a word never inserted is " + std::to_string(c));
}

// What a cairn run measured: seconds, and over all ranks the calls forwarded and taken at
// hops, and those run at their owners.
struct cairn_figures {
  double seconds = 0;
  std::uint64_t forwarded = 0, combined_hops = 0, delivered = 0;
};

template <class Route>
cairn_figures cairn_run(cairn::world& w, const vocabulary& voc, const input& in, const settings& s,
                        Route route) {
  cairn::containers::container_options opts;
  opts.cache_slots = s.cache_slots;
  opts.combine_hops = s.combine_hops;
  cairn::containers::counting_set<std::string, cairn::containers::default_hash<std::string>, Route>
      cs(w, opts, {}, route);
  w.barrier();
  const auto t0 = std::chrono::steady_clock::now();
  for (const std::string& word : in.words) cs.async_insert(word);
  w.quiesce();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  verify_local(
      w, voc, in, cs.local(), [&](const std::string& word) { return cs.owner(word) == w.rank(); },
      "cairn");
  verify_queries(cs, voc, in);
  std::array<std::uint64_t, 3> calls{cs.stats().forwarded, cs.stats().combined_hops,
                                     cs.stats().delivered};
  w.allreduce(std::span<std::uint64_t>(calls), cairn::plus{});
  return {slowest(w, seconds), calls[0], calls[1], calls[2]};
}

#if CAIRN_BENCH_HAVE_MPI
// The baseline's owner of a word: std::hash, then a multiply-shift into [0, ranks).
int owner_of(const std::string& word, int ranks) noexcept {
  const std::uint64_t h = std::hash<std::string>{}(word);
  return static_cast<int>(scale(h * 0x9E3779B97F4A7C15ULL, static_cast<std::uint64_t>(ranks)));
}

int as_count(std::size_t bytes) {
  if (bytes > static_cast<std::size_t>(INT_MAX))
    throw std::runtime_error("wordcount (mpi-alltoallv): " + std::to_string(bytes) +
                             " bytes in one round exceed MPI's int counts; use more --rounds");
  return static_cast<int>(bytes);
}

double mpi_run(cairn::world& w, const vocabulary& voc, const input& in, int rounds) {
  const int ranks = w.size();
  const auto nr = static_cast<std::size_t>(ranks);
  const std::size_t n = in.words.size();
  std::vector<int> sc(nr), sd(nr), rc(nr), rd(nr), at(nr), dest;
  std::vector<char> sendbuf, recvbuf;
  MPI_Barrier(MPI_COMM_WORLD);
  const auto t0 = std::chrono::steady_clock::now();
  std::unordered_map<std::string, std::uint64_t> counts;
  for (int r = 0; r < rounds; ++r) {
    const std::size_t lo = n * static_cast<std::size_t>(r) / static_cast<std::size_t>(rounds);
    const std::size_t hi = n * static_cast<std::size_t>(r + 1) / static_cast<std::size_t>(rounds);
    // Pack: bytes per destination, then every word at its destination's offset.
    std::vector<std::size_t> bytes(nr, 0);
    dest.resize(hi - lo);
    for (std::size_t i = lo; i < hi; ++i) {
      const std::string& word = in.words[i];
      if (word.size() > 255)
        throw std::runtime_error("wordcount (mpi-alltoallv): a word longer than 255 bytes");
      const int d = owner_of(word, ranks);
      dest[i - lo] = d;
      bytes[static_cast<std::size_t>(d)] += word.size() + 1;
    }
    std::size_t total = 0;
    for (std::size_t d = 0; d < nr; ++d) {
      sc[d] = as_count(bytes[d]);
      sd[d] = as_count(total);
      total += bytes[d];
    }
    as_count(total);
    sendbuf.resize(total);
    at = sd;
    for (std::size_t i = lo; i < hi; ++i) {
      const std::string& word = in.words[i];
      char* p = sendbuf.data() + at[static_cast<std::size_t>(dest[i - lo])];
      *p++ = static_cast<char>(static_cast<unsigned char>(word.size()));
      std::copy(word.begin(), word.end(), p);
      at[static_cast<std::size_t>(dest[i - lo])] += static_cast<int>(word.size() + 1);
    }
    // Exchange: byte counts, then the bytes.
    MPI_Alltoall(sc.data(), 1, MPI_INT, rc.data(), 1, MPI_INT, MPI_COMM_WORLD);
    std::size_t received = 0;
    for (std::size_t d = 0; d < nr; ++d) {
      rd[d] = as_count(received);
      received += static_cast<std::size_t>(rc[d]);
    }
    as_count(received);
    recvbuf.resize(received);
    MPI_Alltoallv(sendbuf.data(), sc.data(), sd.data(), MPI_CHAR, recvbuf.data(), rc.data(),
                  rd.data(), MPI_CHAR, MPI_COMM_WORLD);
    // Count.
    for (std::size_t p = 0; p < received;) {
      const auto len = static_cast<std::size_t>(static_cast<unsigned char>(recvbuf[p]));
      ++counts[std::string(recvbuf.data() + p + 1, len)];
      p += len + 1;
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  verify_local(
      w, voc, in, counts,
      [&](const std::string& word) { return owner_of(word, ranks) == w.rank(); },
      std::string(baseline_name));
  return slowest(w, seconds);
}
#endif

settings settings_for(const options& o) {
  settings s{};
  s.words = count_param(o, "words", o.quick ? 1'000'000 : 10'000'000, 1, 1ULL << 32);
  s.vocabulary = count_param(o, "vocabulary", std::uint64_t{1} << 20, 1, std::uint64_t{1} << 24);
  s.zipf = 1.0;
  if (const auto z = o.params.find("zipf"); z != o.params.end()) {
    const std::string& t = z->second;
    const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), s.zipf);
    if (ec != std::errc{} || end != t.data() + t.size() || !(s.zipf >= 0 && s.zipf <= 100))
      throw std::invalid_argument("--zipf is a number in [0, 100], not " + t);
  }
  record_param("zipf", json_text(std::optional<double>(s.zipf)));
  s.samples = static_cast<int>(count_param(o, "samples", o.quick ? 1 : 3, 1, 1001));
  s.cache_slots = static_cast<std::size_t>(count_param(
      o, "cache-slots", cairn::containers::container_options{}.cache_slots, 0, 1 << 24));
  s.combine_hops = count_param(o, "combine-hops", 1, 0, 1) != 0;
  s.route = "direct";
  if (const auto r = o.params.find("route"); r != o.params.end()) {
    if (r->second != "direct" && r->second != "grid" && r->second != "hypercube")
      throw std::invalid_argument("--route is direct, grid or hypercube, not " + r->second);
    s.route = r->second;
  }
  record_param("route", "\"" + s.route + "\"");
  return s;
}

// The baseline's rounds: `--rounds`, else as many as keep a round at about 64 MiB per rank.
int rounds_for(const options& o, const settings& s, const vocabulary& voc) {
  const double bytes = static_cast<double>(s.words) * voc.mean_bytes();
  const auto def = static_cast<std::uint64_t>(std::max(1.0, std::ceil(bytes / round_bytes)));
  return static_cast<int>(count_param(o, "rounds", def, 1, 1ULL << 20));
}

int run_raw_only(const invocation& inv) {
  raw_mpi_body body;
#if CAIRN_BENCH_HAVE_MPI
  settings s = settings_for(inv.opts);
  const vocabulary voc(s.vocabulary, s.zipf);
  s.rounds = rounds_for(inv.opts, s, voc);
  body = [&](cairn::world& w, report* rep) {
    const input in(w, voc, s.words);
    std::vector<double> runs;
    for (int r = 0; r < s.samples; ++r) runs.push_back(mpi_run(w, voc, in, s.rounds));
    if (rep)
      rep->add(raw_mpi_row(std::string(inv.name), w.size(), static_cast<std::size_t>(s.vocabulary),
                           metric, better, static_cast<double>(in.total) / median(runs)));
  };
#endif
  return run_raw_mpi_only(inv, body);
}

int run_wordcount(const invocation& inv) {
  if (inv.opts.raw_mpi_only) return run_raw_only(inv);
  cairn::launch_options lo;
  if (cairn::detect_engine(inv.argc, inv.argv) == cairn::engine::threads)
    lo.ranks = threads_run_ranks(inv);
  settings s = settings_for(inv.opts);  // a wrong parameter fails before a child is spawned
  const vocabulary voc(s.vocabulary, s.zipf);
  s.rounds = rounds_for(inv.opts, s, voc);
  const baseline_figures spawned = prepare_baseline(inv, metric, lo.ranks.value_or(0));
  return cairn::launch(inv.argc, inv.argv, lo, [&](cairn::world& w) {
    const input in(w, voc, s.words);
    const bool inline_mpi = w.engine() == cairn::engine::mpi && inv.opts.baseline;
    std::vector<double> mine, base;
    cairn_figures last;
    for (int r = 0; r < s.samples; ++r) {  // alternated, so drifting load hits both alike
      if (s.route == "grid")
        last = cairn_run(w, voc, in, s, cairn::route::grid{});
      else if (s.route == "hypercube")
        last = cairn_run(w, voc, in, s, cairn::route::hypercube{});
      else
        last = cairn_run(w, voc, in, s, cairn::route::direct{});
      mine.push_back(last.seconds);
#if CAIRN_BENCH_HAVE_MPI
      if (inline_mpi) base.push_back(mpi_run(w, voc, in, s.rounds));
#endif
    }
    if (w.rank() != 0) return;
    const auto size = static_cast<std::size_t>(s.vocabulary);
    const auto total = static_cast<double>(in.total);
    const std::optional<double> base_rate = baseline_figure(
        inv, baseline_name, spawned, inline_mpi,
        base.empty() ? std::nullopt : std::optional<double>(total / median(base)), size);
    report rep(inv.opts.json);
    row r{s.route == "direct" ? std::string("wordcount") : "wordcount-" + s.route,
          std::string(cairn::to_string(w.engine())),
          w.size(),
          size,
          std::string(metric),
          std::string(better),
          total / median(mine),
          std::string(baseline_name),
          base_rate};
    r.size_unit = "vocabulary words";
    r.set("distinct_words", std::to_string(in.distinct));
    r.set("forwarded", std::to_string(last.forwarded));  // calls, over all ranks, last sample
    r.set("combined_hops", std::to_string(last.combined_hops));
    r.set("delivered", std::to_string(last.delivered));
    rep.add(std::move(r));
  });
}

const param_registrar params{
    "wordcount",
    {{"words", "words per rank", "10000000, 1000000 with --quick"},
     {"vocabulary", "V, distinct words of the vocabulary (the rows' size)", "2^20"},
     {"zipf", "the Zipf exponent s (a number >= 0): word j has probability ∝ 1/(j+1)^s", "1.0"},
     {"samples", "timed runs per figure (the median is reported)", "3, 1 with --quick"},
     {"rounds", "the baseline's MPI_Alltoallv rounds", "about 64 MiB per rank per round"},
     {"cache-slots", "slots of the set's combining cache (0: none)", "the container's default"},
     {"route", "the set's route: direct, grid or hypercube (calls forwarded through ranks)",
      "direct"},
     {"combine-hops", "1: counts passing through a rank join its cache (combine_hops); 0: off",
      "1"}}};

const registrar reg{{"wordcount",
                     "word count of Zipf-distributed strings, counting_set vs hand-written "
                     "MPI_Alltoallv (words/s, all ranks)",
                     run_wordcount}};

}  // namespace

}  // namespace cairn::bench
