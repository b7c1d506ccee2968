#include "cairn/msg/detail/call_registry.hpp"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <string_view>
#include <vector>

#include "cairn/runtime/error.hpp"

namespace cairn::msg::detail {

struct call_registry::state {
  struct entry {
    const char* name;
    call_thunk thunk;
  };
  std::vector<entry> entries;
  std::once_flag frozen;
  std::uint64_t fingerprint = 0;
};

// Never freed: functions may be looked up while static objects are destroyed.
call_registry::call_registry() : s_(new state) {}

call_registry& call_registry::get() {
  static call_registry r;
  return r;
}

int call_registry::add(const char* name, call_thunk thunk) {
  s_->entries.push_back({name, thunk});
  return 0;
}

void call_registry::freeze() {
  std::call_once(s_->frozen, [this] {
    auto& e = s_->entries;
    std::sort(e.begin(), e.end(),
              [](const auto& a, const auto& b) { return std::strcmp(a.name, b.name) < 0; });
    // One type name is one function even if several shared objects registered it.
    e.erase(
        std::unique(e.begin(), e.end(),
                    [](const auto& a, const auto& b) { return std::strcmp(a.name, b.name) == 0; }),
        e.end());
    std::uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a over the names, in order
    for (const auto& x : e) {
      for (const char* c = x.name; *c; ++c)
        h = (h ^ static_cast<unsigned char>(*c)) * 0x100000001b3ULL;
      h = (h ^ 0xff) * 0x100000001b3ULL;
    }
    s_->fingerprint = h;
  });
}

std::uint32_t call_registry::index_of(const char* name) {
  freeze();
  const auto& e = s_->entries;
  const auto it = std::lower_bound(e.begin(), e.end(), name, [](const auto& a, const char* n) {
    return std::strcmp(a.name, n) < 0;
  });
  if (it == e.end() || std::strcmp(it->name, name) != 0)
    throw error(std::string("cairn::async: function type ") + name +
                " was registered after the registry was first used (a shared object loaded "
                "late?)");
  return static_cast<std::uint32_t>(it - e.begin());
}

call_thunk call_registry::thunk(std::uint32_t index) const noexcept {
  return index < s_->entries.size() ? s_->entries[index].thunk : nullptr;
}

std::uint64_t call_registry::fingerprint() {
  freeze();
  return s_->fingerprint;
}

std::size_t call_registry::size() const noexcept { return s_->entries.size(); }

}  // namespace cairn::msg::detail
