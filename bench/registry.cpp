#include "registry.hpp"

#include <algorithm>

namespace cairn::bench {

namespace {
// A function-local static, so registrars in other files may run before anything here.
std::vector<bench_entry>& table() {
  static std::vector<bench_entry> entries;
  return entries;
}
}  // namespace

registrar::registrar(bench_entry entry) { table().push_back(entry); }

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
