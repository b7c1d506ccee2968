#include "contract.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "cairn/cairn.hpp"
#include "context.hpp"
#include "registry.hpp"

namespace cairn::bench {

namespace {

// JSON has no NaN or infinity; a figure that is not finite is reported as missing.
std::string json_number(std::optional<double> v) {
  if (!v || !std::isfinite(*v)) return "null";
  std::array<char, 64> buf{};
  std::snprintf(buf.data(), buf.size(), "%.6g", *v);
  return buf.data();
}

std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      std::array<char, 8> buf{};
      std::snprintf(buf.data(), buf.size(), "\\u%04x", static_cast<unsigned>(c));
      out += buf.data();
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// About four significant digits, never in exponent form: easy to scan in a column.
std::string table_number(std::optional<double> v) {
  if (!v || !std::isfinite(*v)) return "n/a";
  const double a = std::fabs(*v);
  const char* fmt = a >= 1000  ? "%.0f"
                    : a >= 100 ? "%.1f"
                    : a >= 10  ? "%.2f"
                    : a >= 1   ? "%.3f"
                               : "%.4f";
  std::array<char, 64> buf{};
  std::snprintf(buf.data(), buf.size(), fmt, *v);
  return buf.data();
}

std::string ratio_text(std::optional<double> v) {
  if (!v || !std::isfinite(*v)) return "n/a";
  std::array<char, 64> buf{};
  std::snprintf(buf.data(), buf.size(), "%.2f", *v);
  return buf.data();
}

}  // namespace

std::optional<std::size_t> parse_size(std::string_view text) {
  std::size_t i = 0;
  std::size_t value = 0;
  constexpr std::size_t max = std::numeric_limits<std::size_t>::max();
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
    const auto digit = static_cast<std::size_t>(text[i] - '0');
    if (value > (max - digit) / 10) return std::nullopt;
    value = value * 10 + digit;
    ++i;
  }
  if (i == 0) return std::nullopt;
  std::size_t shift = 0;
  if (i < text.size()) {
    switch (std::tolower(static_cast<unsigned char>(text[i]))) {
      case 'k':
        shift = 10;
        ++i;
        break;
      case 'm':
        shift = 20;
        ++i;
        break;
      case 'g':
        shift = 30;
        ++i;
        break;
      default: break;
    }
    if (shift && i < text.size() && text[i] == 'i') ++i;  // KiB
    if (i < text.size() && (text[i] == 'B' || text[i] == 'b')) ++i;
  }
  if (i != text.size()) return std::nullopt;
  if (shift && value > (max >> shift)) return std::nullopt;
  return value << shift;
}

std::string parse_size_range(std::string_view text, options& opts) {
  const auto dash = text.find('-');
  const auto lo = parse_size(text.substr(0, dash));
  const auto hi = dash == std::string_view::npos ? lo : parse_size(text.substr(dash + 1));
  if (!lo || !hi)
    return "--sizes=" + std::string(text) + ": expected a-b, e.g. 8-4M (K, M, G are binary)";
  if (*lo < 1 || *lo > *hi || *hi > max_message_size)
    return "--sizes=" + std::string(text) + ": need 1 <= a <= b <= 1G";
  opts.min_size = *lo;
  opts.max_size = *hi;
  opts.sizes_given = true;
  return {};
}

std::vector<std::size_t> size_ladder(const options& opts) {
  if (!opts.size_list.empty()) return opts.size_list;
  std::vector<std::size_t> all;
  for (std::size_t s = opts.min_size; s < opts.max_size; s *= 2) all.push_back(s);
  all.push_back(opts.max_size);
  if (!opts.quick || all.size() <= 2) return all;
  // Counting from the top keeps the largest (most expensive, most telling) size exact.
  std::vector<std::size_t> picked{all.front()};
  std::vector<std::size_t> from_top;
  for (std::size_t k = all.size() - 1;; k -= 3) {
    if (k > 0) from_top.push_back(all[k]);
    if (k < 3) break;
  }
  picked.insert(picked.end(), from_top.rbegin(), from_top.rend());
  return picked;
}

namespace {
// `n` in the largest binary multiple that divides it: prefix "", "Ki", "Mi" or "Gi".
std::string binary_multiple(std::size_t n, const std::string& unit) {
  static constexpr std::array<const char*, 4> prefixes{"", "Ki", "Mi", "Gi"};
  std::size_t u = 0;
  while (u + 1 < prefixes.size() && n >= 1024 && n % 1024 == 0) {
    n /= 1024;
    ++u;
  }
  return std::to_string(n) + " " + prefixes[u] + unit;
}
}  // namespace

std::string human_size(std::size_t bytes) { return binary_multiple(bytes, "B"); }

std::string row_size_text(std::size_t size, const std::string& unit) {
  if (unit == "B") return human_size(size);
  // "Ki" apart from the unit: "256 Ki vertices".
  std::string text = binary_multiple(size, "");
  if (text.back() != ' ') text += ' ';
  return text + unit;
}

std::optional<double> row::ratio() const {
  if (!cairn || !baseline_value || *baseline_value == 0) return std::nullopt;
  return *cairn / *baseline_value;
}

bool row::has(std::string_view key) const {
  return std::any_of(extra.begin(), extra.end(), [&](const auto& f) { return f.first == key; });
}

std::string json_text(std::string_view s) { return json_string(s); }
std::string json_text(std::optional<double> v) { return json_number(v); }
std::string json_text(bool b) { return b ? "true" : "false"; }

std::string to_json(const row& r) {
  std::string s = "{";
  s += "\"bench\":" + json_string(r.bench);
  s += ",\"engine\":" + json_string(r.engine);
  s += ",\"ranks\":" + std::to_string(r.ranks);
  s += ",\"size\":" + std::to_string(r.size);
  if (r.size_unit != "B") s += ",\"size_unit\":" + json_string(r.size_unit);
  s += ",\"metric\":" + json_string(r.metric);
  s += ",\"better\":" + json_string(r.better);
  s += ",\"cairn\":" + json_number(r.cairn);
  s += ",\"baseline\":" + json_string(r.baseline);
  s += ",\"baseline_value\":" + json_number(r.baseline_value);
  s += ",\"ratio\":" + json_number(r.ratio());
  s += ",\"value\":" + json_number(r.cairn);
  if (r.min) s += ",\"min\":" + json_number(r.min);
  if (r.max) s += ",\"max\":" + json_number(r.max);
  if (r.baseline_min) s += ",\"baseline_min\":" + json_number(r.baseline_min);
  if (r.baseline_max) s += ",\"baseline_max\":" + json_number(r.baseline_max);
  for (const auto& [key, value] : r.extra) {
    s += ',';
    s += json_string(key);
    s += ':';
    s += value;
  }
  const auto params = recorded_params();
  if (!params.empty()) {
    s += ",\"params\":{";
    bool first = true;
    for (const auto& [key, value] : params) {
      if (!first) s += ',';
      s += json_string(key);
      s += ':';
      s += value;
      first = false;
    }
    s += "}";
  }
  return s + ",\"context\":" + run_context_json() + "}";
}

report::~report() { finish(); }

void report::add(row r) {
  // A raw-MPI baseline not measured by run_sized() (baseline.hpp): in the same processes as
  // cairn under mpirun, or in a child that started it through cairn::launch.
  if (r.baseline.starts_with("mpi") && !r.has("baseline_mode")) {
    r.set("baseline_mode", json_text(r.engine == "mpi" ? "inline" : "cairn-child"));
    const auto level = cairn::mpi_thread_level_provided();
    r.set("baseline_thread_level",
          r.engine == "mpi" && level ? json_text(cairn::to_string(*level)) : "null");
  }
  if (json_) {
    const std::string line = to_json(r) + "\n";
    std::fputs(line.c_str(), stdout);
    std::fflush(stdout);
  } else {
    rows_.push_back(std::move(r));
  }
}

void report::finish() {
  if (finished_) return;
  finished_ = true;
  if (json_ || rows_.empty()) return;
  constexpr std::size_t columns = 13;
  using line = std::array<std::string, columns>;
  // Numbers are right-aligned, names left-aligned.
  constexpr std::array<bool, columns> right{false, false, true, true, false, false, true,
                                            true,  false, true, true, true,  false};
  std::vector<line> lines;
  lines.push_back({"bench", "engine", "ranks", "size", "metric", "better", "cairn", "min-max",
                   "baseline", "baseline_value", "min-max", "ratio", "placement (handoff ns)"});
  auto spread = [](std::optional<double> lo, std::optional<double> hi) -> std::string {
    std::string text;
    if (!lo || !hi) return text;
    text = table_number(lo);
    text += '-';
    text += table_number(hi);
    return text;
  };
  auto field = [](const row& r, std::string_view key) -> std::string {
    for (const auto& [k, v] : r.extra)
      if (k == key) return v;
    return "";
  };
  for (const row& r : rows_) {
    std::string where;
    const std::string before = field(r, "handoff_ns_before"), after = field(r, "handoff_ns_after");
    if (!before.empty() && before != "null") {
      auto rounded = [](const std::string& text) {
        return std::to_string(static_cast<long>(std::strtod(text.c_str(), nullptr) + 0.5));
      };
      where = rounded(before);
      where += " -> ";
      where += after == "null" ? std::string("?") : rounded(after);
      if (field(r, "placement_changed") == "true") where += " changed";
    }
    if (field(r, "unstable") == "true") where += " unstable";
    if (field(r, "remeasured") == "true") where += " remeasured";
    lines.push_back({r.bench, r.engine, std::to_string(r.ranks), row_size_text(r.size, r.size_unit),
                     r.metric, r.better, table_number(r.cairn), spread(r.min, r.max), r.baseline,
                     table_number(r.baseline_value), spread(r.baseline_min, r.baseline_max),
                     ratio_text(r.ratio()), where});
  }
  std::array<std::size_t, columns> width{};
  for (const line& l : lines)
    for (std::size_t c = 0; c < columns; ++c) width[c] = std::max(width[c], l[c].size());
  std::string out;
  for (const line& l : lines) {
    std::string text;
    for (std::size_t c = 0; c < columns; ++c) {
      const std::string pad(width[c] - l[c].size(), ' ');
      if (c) text += "  ";
      text += right[c] ? pad + l[c] : l[c] + pad;
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out += text + "\n";
  }
  std::fputs(out.c_str(), stdout);
  std::fflush(stdout);
}

void note(std::string_view text) {
  const std::string line = "cairn-bench: " + std::string(text) + "\n";
  std::fputs(line.c_str(), stderr);
  std::fflush(stderr);
}

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  const std::size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid), values.end());
  if (values.size() % 2) return values[mid];
  const double upper = values[mid];
  const double lower =
      *std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid));
  return (lower + upper) / 2;
}

}  // namespace cairn::bench
