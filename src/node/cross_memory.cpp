#include "node/cross_memory.hpp"

#include <sys/types.h>

#include <cerrno>

namespace cairn::detail {

void cross_memory_reader::flush() noexcept {
  if (!nl_) return;
  if (!error_) {
    const ssize_t got = process_vm_readv(pid_, local_, nl_, remote_, nr_, 0);
    if (got < 0)
      error_ = errno ? errno : EFAULT;
    else if (static_cast<std::size_t>(got) != want_)
      error_ = EFAULT;  // a fault part way
  }
  nl_ = nr_ = want_ = 0;
}

int cross_memory_copy(int pid, void* local, void* remote, std::size_t bytes, bool write) noexcept {
  const iovec l{local, bytes}, r{remote, bytes};
  const ssize_t got =
      write ? process_vm_writev(pid, &l, 1, &r, 1, 0) : process_vm_readv(pid, &l, 1, &r, 1, 0);
  if (got < 0) return errno ? errno : EFAULT;
  return static_cast<std::size_t>(got) == bytes ? 0 : EFAULT;  // a fault part way
}

bool cross_memory_probe(int pid, const void* from, unsigned long long expect) noexcept {
  unsigned long long got = 0;
  thread_local cross_memory_reader r;
  r.begin(pid);
  r.add(reinterpret_cast<std::byte*>(&got), static_cast<const std::byte*>(from), sizeof got);
  return r.finish() == 0 && got == expect;
}

}  // namespace cairn::detail
