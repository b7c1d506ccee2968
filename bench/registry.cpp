#include "registry.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <stdexcept>

namespace cairn::bench {

namespace {
// A function-local static, so registrars in other files may run before anything here.
std::vector<bench_entry>& table() {
  static std::vector<bench_entry> entries;
  return entries;
}

std::map<std::string, std::vector<param_spec>, std::less<>>& param_table() {
  static std::map<std::string, std::vector<param_spec>, std::less<>> params;
  return params;
}

// The recorded parameters and their lock: on the threads engine every rank's thread reads its
// parameters (count_param inside the launched function) while rank 0 may print a row.
struct recorded_values {
  std::mutex lock;
  std::vector<std::pair<std::string, std::string>> values;
};
recorded_values& recorded() {
  static recorded_values r;
  return r;
}

std::uint64_t checked(std::string_view name, std::string_view text, std::uint64_t lo,
                      std::uint64_t hi) {
  const auto v = parse_count(text);
  if (!v || *v < lo || *v > hi)
    throw std::invalid_argument("--" + std::string(name) + "=" + std::string(text) +
                                ": expected a count in [" + std::to_string(lo) + ", " +
                                std::to_string(hi) + "] (e.g. 1000, 64K, 2^20)");
  return *v;
}
}  // namespace

registrar::registrar(bench_entry entry) { table().push_back(entry); }

param_registrar::param_registrar(std::string_view bench, std::vector<param_spec> params) {
  auto& list = param_table()[std::string(bench)];
  list.insert(list.end(), params.begin(), params.end());
}

std::vector<param_spec> params_of(std::string_view bench) {
  const auto& t = param_table();
  const auto it = t.find(bench);
  return it == t.end() ? std::vector<param_spec>{} : it->second;
}

std::optional<std::uint64_t> parse_count(std::string_view text) {
  if (text.starts_with("2^")) {
    const auto k = parse_size(text.substr(2));
    if (!k || *k > 62) return std::nullopt;
    return std::uint64_t{1} << *k;
  }
  const auto v = parse_size(text);
  if (!v) return std::nullopt;
  return static_cast<std::uint64_t>(*v);
}

std::uint64_t count_param(const options& o, std::string_view name, std::uint64_t def,
                          std::uint64_t lo, std::uint64_t hi) {
  const auto it = o.params.find(name);
  const std::uint64_t v = it == o.params.end() ? def : checked(name, it->second, lo, hi);
  record_param(name, std::to_string(v));
  return v;
}

std::vector<std::uint64_t> count_list_param(const options& o, std::string_view name,
                                            std::vector<std::uint64_t> def, std::uint64_t lo,
                                            std::uint64_t hi) {
  std::vector<std::uint64_t> v = std::move(def);
  if (const auto it = o.params.find(name); it != o.params.end()) {
    v.clear();
    std::string_view rest = it->second;
    while (true) {
      const auto comma = rest.find(',');
      v.push_back(checked(name, rest.substr(0, comma), lo, hi));
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }
  std::string text = "[";
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) text += ',';
    text += std::to_string(v[i]);
  }
  record_param(name, text + "]");
  return v;
}

void record_param(std::string_view name, std::string json_value) {
  auto& r = recorded();
  const std::lock_guard<std::mutex> guard(r.lock);
  for (auto& [k, v] : r.values)
    if (k == name) {
      v = std::move(json_value);
      return;
    }
  r.values.emplace_back(std::string(name), std::move(json_value));
}

std::vector<std::pair<std::string, std::string>> recorded_params() {
  auto& r = recorded();
  const std::lock_guard<std::mutex> guard(r.lock);
  return r.values;
}

std::vector<bench_entry> registered_benches() {
  std::vector<bench_entry> sorted = table();
  std::sort(sorted.begin(), sorted.end(),
            [](const bench_entry& a, const bench_entry& b) { return a.name < b.name; });
  return sorted;
}

const bench_entry* find_bench(std::string_view name) {
  const auto& entries = table();
  const auto it = std::find_if(entries.begin(), entries.end(),
                               [&](const bench_entry& e) { return e.name == name; });
  return it == entries.end() ? nullptr : &*it;
}

}  // namespace cairn::bench
