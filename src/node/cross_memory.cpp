#include "node/cross_memory.hpp"

#include <sys/types.h>

#include <cerrno>

namespace cairn::detail {

namespace {
// A position in an iovec list: entry `i`, `off` bytes into it.
struct cursor {
  iovec* v;
  std::size_t n;
  std::size_t i = 0;
  std::size_t off = 0;

  // Skips what is moved (and empty entries).
  void advance(std::size_t bytes) noexcept {
    while (i < n) {
      const std::size_t left = v[i].iov_len - off;
      if (bytes < left) {
        off += bytes;
        return;
      }
      bytes -= left;
      off = 0;
      ++i;
    }
  }
};

// The entries of at most `max` bytes from c: the first is moved up by c.off and the last cut
// at `max` in place; undo() puts both back.
struct window {
  iovec* first = nullptr;
  std::size_t count = 0;
  std::size_t bytes = 0;
  iovec first_was{}, last_was{};

  window(cursor& c, std::size_t max) noexcept {
    if (c.i == c.n) return;
    first = c.v + c.i;
    first_was = *first;
    first->iov_base = static_cast<std::byte*>(first->iov_base) + c.off;
    first->iov_len -= c.off;
    while (c.i + count < c.n && bytes < max) {
      iovec& e = first[count++];
      last_was = count == 1 ? first_was : e;
      if (e.iov_len > max - bytes) e.iov_len = max - bytes;
      bytes += e.iov_len;
    }
  }
  void undo() noexcept {
    if (!count) return;
    first[count - 1] = last_was;  // the first entry last, in case they are one
    first[0] = first_was;
  }
};
}  // namespace

int cross_memory_move(cross_memory_call call, int pid, iovec* local, std::size_t nl, iovec* remote,
                      std::size_t nr, std::size_t max_per_call) noexcept {
  cursor l{local, nl}, r{remote, nr};
  l.advance(0);
  r.advance(0);
  while (l.i < l.n && r.i < r.n) {
    window lw(l, max_per_call);
    window rw(r, lw.bytes);  // the same bytes on both sides
    const ssize_t got = call(static_cast<pid_t>(pid), lw.first, lw.count, rw.first, rw.count, 0);
    const int err = errno;
    rw.undo();
    lw.undo();
    if (got < 0) return err ? err : EFAULT;
    if (got == 0) return EFAULT;  // no progress: never loop forever
    l.advance(static_cast<std::size_t>(got));
    r.advance(static_cast<std::size_t>(got));
  }
  return l.i < l.n || r.i < r.n ? EINVAL : 0;  // totals that differ: a caller's mistake
}

void cross_memory_batch::flush() noexcept {
  if (!nl_) return;
  if (!error_)
    error_ = cross_memory_move(write_ ? process_vm_writev : process_vm_readv, pid_, local_, nl_,
                               remote_, nr_);
  nl_ = nr_ = 0;
}

int cross_memory_copy(int pid, void* local, void* remote, std::size_t bytes, bool write) noexcept {
  iovec l{local, bytes}, r{remote, bytes};
  return cross_memory_move(write ? process_vm_writev : process_vm_readv, pid, &l, 1, &r, 1);
}

bool cross_memory_probe(int pid, const void* from, unsigned long long expect) noexcept {
  unsigned long long got = 0;
  thread_local cross_memory_batch r;
  r.begin(pid);
  r.add(reinterpret_cast<std::byte*>(&got), static_cast<const std::byte*>(from), sizeof got);
  return r.finish() == 0 && got == expect;
}

}  // namespace cairn::detail
