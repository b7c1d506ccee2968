#include "transport/cross_memory.hpp"

#include <sys/types.h>

#include <cerrno>

namespace cairn::detail {

void cross_memory_reader::flush() noexcept {
  if (!nl_) return;
  if (!error_) {
    const ssize_t got = process_vm_readv(pid_, local_, nl_, remote_, nr_, 0);
    if (got < 0) error_ = errno ? errno : EFAULT;
    else if (static_cast<std::size_t>(got) != want_) error_ = EFAULT;  // a fault part way
  }
  nl_ = nr_ = want_ = 0;
}

int cross_memory_copy(int pid, void* local, void* remote, std::size_t bytes, bool write) noexcept {
  auto* l = static_cast<std::byte*>(local);
  auto* r = static_cast<std::byte*>(remote);
  while (bytes) {  // a call stops short only at a fault: another call reports it
    const iovec lv{l, bytes}, rv{r, bytes};
    const ssize_t got = write ? process_vm_writev(pid, &lv, 1, &rv, 1, 0) : process_vm_readv(pid, &lv, 1, &rv, 1, 0);
    if (got < 0) return errno ? errno : EFAULT;
    if (got == 0) return EFAULT;
    l += got;
    r += got;
    bytes -= static_cast<std::size_t>(got);
  }
  return 0;
}

bool cross_memory_probe(int pid, const void* from, unsigned long long expect) noexcept {
  unsigned long long got = 0;
  thread_local cross_memory_reader r;
  r.begin(pid);
  r.add(reinterpret_cast<std::byte*>(&got), static_cast<const std::byte*>(from), sizeof got);
  return r.finish() == 0 && got == expect;
}

}  // namespace cairn::detail
