#pragma once
// Copies straight out of (and into) another process's memory (Linux cross-memory attach,
// process_vm_readv / process_vm_writev): on the MPI engine with every process on one node,
// array transfers read the sender's local part as the threads engine reads it in its one
// address space — one copy, no packing, no intermediate buffer — and long board collectives
// (src/coll/board/shared_memory_direct.cpp) read their peers' inputs and write their outputs.
// mpi_transport probes at launch whether the kernel lets every process read its peers (same
// user, no ptrace restriction); CAIRN_CMA=0 turns it off.
//
// One call moves at most the kernel's MAX_RW_COUNT (2 GiB - 4 KiB) and returns the count it
// moved, so every copy here goes through cross_memory_move: windows of at most that size,
// again after a short call, until every byte moved or a call fails (its errno).

#include <sys/types.h>
#include <sys/uio.h>

#include <cstddef>

namespace cairn::detail {

/// The most one process_vm_readv/writev call moves (the kernel's MAX_RW_COUNT: INT_MAX rounded
/// down to a 4 KiB page); a call asked for more returns short.
inline constexpr std::size_t cross_memory_call_max = 0x7ffff000;

/// One process_vm_readv / process_vm_writev call (their signature; tests pass a fake).
using cross_memory_call = ssize_t (*)(pid_t, const iovec*, unsigned long, const iovec*,
                                      unsigned long, unsigned long);

/// Moves every byte of `local[0..nl)` from or to `remote[0..nr)` of process `pid` (both lists
/// hold the same total) with `call`, at most `max_per_call` bytes per call, again after a call
/// that stopped short. 0 when every byte moved, else the errno of the call that failed (EFAULT
/// for one that moved nothing). Trims the lists' entries during a call and restores them.
int cross_memory_move(cross_memory_call call, int pid, iovec* local, std::size_t nl, iovec* remote,
                      std::size_t nr, std::size_t max_per_call = cross_memory_call_max) noexcept;

/// Gathers the runs copied from (or, begun to write, to) one peer and moves them in batches of
/// iovecs (one system call per `batch` iovecs on either side). Large (32 KiB of iovecs): keep
/// one per thread.
class cross_memory_batch {
 public:
  /// iovecs per side and system call (the kernel's IOV_MAX).
  static constexpr std::size_t batch = 1024;

  /// Starts reading from (or, with `write`, writing to) process `pid` (what was gathered
  /// before is dropped).
  void begin(int pid, bool write = false) noexcept {
    pid_ = pid;
    write_ = write;
    error_ = 0;
    nl_ = nr_ = 0;
  }
  /// Reading: copies `bytes` from address `from` of the peer to `to` (at the latest in
  /// finish()).
  void add(std::byte* to, const std::byte* from, std::size_t bytes) noexcept {
    add_run(to, const_cast<std::byte*>(from), bytes);
  }
  /// Writing: copies `bytes` from `from` to address `to` of the peer (at the latest in
  /// finish()).
  void add_write(std::byte* to, const std::byte* from, std::size_t bytes) noexcept {
    add_run(const_cast<std::byte*>(from), to, bytes);
  }
  /// Moves what is gathered; 0 if every byte arrived, else the errno of the failed call.
  int finish() noexcept {
    flush();
    return error_;
  }

 private:
  // A run between `local` (here) and `remote` (the peer); one adjacent to the previous run on
  // either side extends its iovec (the kernel's cost is per remote iovec).
  void add_run(std::byte* local, std::byte* remote, std::size_t bytes) noexcept {
    if (!bytes) return;
    bool grow_local = nl_ && end(local_[nl_ - 1]) == local;
    bool grow_remote = nr_ && end(remote_[nr_ - 1]) == remote;
    if ((!grow_local && nl_ == batch) || (!grow_remote && nr_ == batch)) {
      flush();  // both lists hold the same bytes: whole runs only
      grow_local = grow_remote = false;
    }
    if (grow_local)
      local_[nl_ - 1].iov_len += bytes;
    else
      local_[nl_++] = {local, bytes};
    if (grow_remote)
      remote_[nr_ - 1].iov_len += bytes;
    else
      remote_[nr_++] = {remote, bytes};
  }
  void flush() noexcept;
  static const std::byte* end(const iovec& v) noexcept {
    return static_cast<const std::byte*>(v.iov_base) + v.iov_len;
  }

  int pid_ = 0;
  bool write_ = false;
  int error_ = 0;
  std::size_t nl_ = 0, nr_ = 0;
  iovec local_[batch], remote_[batch];
};

/// Copies `bytes` between this process's `local` and process `pid`'s `remote` memory in one
/// span each way: reads (remote -> local) or, with `write`, writes (local -> remote); 0 if every
/// byte moved, else the errno of the failed call. Any size: see cross_memory_move.
int cross_memory_copy(int pid, void* local, void* remote, std::size_t bytes, bool write) noexcept;

/// True if this process can read the 8-byte word at address `from` of process `pid` and finds
/// `expect` there (the launch probe).
bool cross_memory_probe(int pid, const void* from, unsigned long long expect) noexcept;

}  // namespace cairn::detail
