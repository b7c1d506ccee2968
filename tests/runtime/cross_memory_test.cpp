// cross_memory_move (src/node/cross_memory.hpp) with a fake system call that moves less than
// asked, fails part way or moves nothing: every byte arrives in order, no call is asked for
// more than the cap, the lists come back unchanged, a failure returns its errno and nothing
// loops forever. Also the real process_vm_readv on this process with a small cap.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "node/cross_memory.hpp"

using cairn::detail::cross_memory_move;

namespace {
// The fake's behaviour and what it saw.
struct fake_state {
  std::size_t cap = 0;        // fail the test if a call asks for more
  std::size_t most = 0;       // move at most this much per call (0: all asked)
  long long fail_after = -1;  // fail (EFAULT) once this many bytes moved; -1: never
  bool stall = false;         // move nothing and return 0
  std::size_t calls = 0, moved = 0, largest_ask = 0;
  std::mt19937 g{7};
} fake;

std::size_t total(const iovec* v, unsigned long n) {
  std::size_t t = 0;
  for (unsigned long k = 0; k < n; ++k) t += v[k].iov_len;
  return t;
}

// Copies remote -> local in the same process (a read), as far as `fake` allows.
ssize_t fake_read(pid_t, const iovec* l, unsigned long nl, const iovec* r, unsigned long nr,
                  unsigned long) {
  ++fake.calls;
  const std::size_t ask = total(l, nl);
  EXPECT_EQ(ask, total(r, nr));
  EXPECT_LE(ask, fake.cap);
  fake.largest_ask = std::max(fake.largest_ask, ask);
  if (fake.stall) return 0;
  std::size_t n = ask;
  if (fake.most) n = std::min<std::size_t>(n, 1 + fake.g() % fake.most);
  if (fake.fail_after >= 0) {
    const auto left = static_cast<std::size_t>(fake.fail_after) - fake.moved;
    if (left == 0) {
      errno = EFAULT;
      return -1;
    }
    n = std::min(n, left);
  }
  // Byte by byte over both lists.
  unsigned long li = 0, ri = 0;
  std::size_t lo = 0, ro = 0;
  for (std::size_t k = 0; k < n; ++k) {
    while (l[li].iov_len == lo) ++li, lo = 0;
    while (r[ri].iov_len == ro) ++ri, ro = 0;
    static_cast<std::byte*>(l[li].iov_base)[lo++] =
        static_cast<const std::byte*>(r[ri].iov_base)[ro++];
  }
  fake.moved += n;
  return static_cast<ssize_t>(n);
}

// Cuts [0, bytes) of `base` into iovecs of random sizes (some empty).
std::vector<iovec> pieces(std::byte* base, std::size_t bytes, unsigned seed) {
  std::mt19937 g(seed);
  std::vector<iovec> v;
  std::size_t at = 0;
  while (at < bytes) {
    const std::size_t len = std::min<std::size_t>(bytes - at, g() % 97);
    v.push_back({base + at, len});
    at += len;
  }
  return v;
}

bool same(const std::vector<iovec>& a, const std::vector<iovec>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t k = 0; k < a.size(); ++k)
    if (a[k].iov_base != b[k].iov_base || a[k].iov_len != b[k].iov_len) return false;
  return true;
}
}  // namespace

TEST(CrossMemory, ShortCallsMoveEveryByte) {
  for (unsigned seed = 1; seed <= 40; ++seed) {
    const std::size_t bytes = 1000 + seed * 37;
    std::vector<std::byte> from(bytes), to(bytes);
    for (std::size_t k = 0; k < bytes; ++k) from[k] = static_cast<std::byte>(k * 131 + seed);
    auto l = pieces(to.data(), bytes, seed), r = pieces(from.data(), bytes, seed + 1000);
    const auto l0 = l, r0 = r;
    fake = {};
    fake.cap = 64 + seed;
    fake.most = seed % 3 ? seed * 5 : 0;  // some runs only meet the cap
    EXPECT_EQ(cross_memory_move(fake_read, 1, l.data(), l.size(), r.data(), r.size(), fake.cap), 0);
    EXPECT_EQ(std::memcmp(to.data(), from.data(), bytes), 0) << "seed " << seed;
    EXPECT_EQ(fake.moved, bytes);
    EXPECT_EQ(fake.largest_ask, fake.cap);
    EXPECT_TRUE(same(l, l0) && same(r, r0)) << "lists not restored, seed " << seed;
  }
}

TEST(CrossMemory, FailurePartWayReturnsItsErrno) {
  std::vector<std::byte> from(500, std::byte{1}), to(500);
  iovec l{to.data(), 500}, r{from.data(), 500};
  fake = {};
  fake.cap = 1000;
  fake.fail_after = 123;  // a short call, then the fault
  EXPECT_EQ(cross_memory_move(fake_read, 1, &l, 1, &r, 1, fake.cap), EFAULT);
  EXPECT_EQ(fake.moved, 123u);
  EXPECT_EQ(fake.calls, 2u);
  EXPECT_EQ(l.iov_len, 500u);
}

TEST(CrossMemory, NoProgressFailsInsteadOfLooping) {
  std::vector<std::byte> from(10), to(10);
  iovec l{to.data(), 10}, r{from.data(), 10};
  fake = {};
  fake.cap = 1000;
  fake.stall = true;
  EXPECT_EQ(cross_memory_move(fake_read, 1, &l, 1, &r, 1, fake.cap), EFAULT);
  EXPECT_EQ(fake.calls, 1u);
}

TEST(CrossMemory, NothingToMove) {
  fake = {};
  iovec l{nullptr, 0}, r{nullptr, 0};
  EXPECT_EQ(cross_memory_move(fake_read, 1, &l, 1, &r, 1, 10), 0);
  EXPECT_EQ(fake.calls, 0u);
}

TEST(CrossMemory, RealReadOfThisProcessInWindows) {
  // process_vm_readv of this process's own memory (always allowed), windows of 4099 bytes.
  const std::size_t bytes = 100000;
  std::vector<std::byte> from(bytes), to(bytes);
  for (std::size_t k = 0; k < bytes; ++k) from[k] = static_cast<std::byte>(k * 7 + 3);
  auto l = pieces(to.data(), bytes, 5), r = pieces(from.data(), bytes, 6);
  ASSERT_GT(l.size(), 1024u);  // more entries than one call takes (IOV_MAX): windows cut them
  EXPECT_EQ(
      cross_memory_move(process_vm_readv, getpid(), l.data(), l.size(), r.data(), r.size(), 4099),
      0);
  EXPECT_EQ(std::memcmp(to.data(), from.data(), bytes), 0);
}
