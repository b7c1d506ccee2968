// Point-to-point of values on both engines: trivially copyable values as their bytes, ranges
// sized by the message, and serialized values of any type (random nested containers and user
// types) against the values the sender made from the same seed.
#include <atomic>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <variant>

#include "harness.hpp"

using cairn::test::has_text;
using cairn::test::message_of;
using cairn::test::run;

namespace {
int right_of(const cairn::world& w) { return (w.rank() + 1) % w.size(); }
int left_of(const cairn::world& w) { return (w.rank() + w.size() - 1) % w.size(); }

// A user type with a serialize member.
struct particle {
  std::string name;
  std::vector<double> position;
  std::optional<int> cell;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(name, position, cell);
  }
  friend bool operator==(const particle&, const particle&) = default;
};

// A user type with a free serialize function.
struct edge_list {
  std::map<int, std::set<int>> adjacency;
  friend bool operator==(const edge_list&, const edge_list&) = default;
};
template <class Archive>
void serialize(Archive& ar, edge_list& e) {
  ar(e.adjacency);
}

// A trivially copyable type that also has a serialize member: cairn must move it as its
// bytes and never call serialize (counted).
std::atomic<int> pod_serializations{0};
struct pod_with_serialize {
  double x;
  int id;
  template <class Archive>
  void serialize(Archive& ar) {
    ++pod_serializations;
    ar(x, id);
  }
  friend bool operator==(const pod_with_serialize&, const pod_with_serialize&) = default;
};
static_assert(std::is_trivially_copyable_v<pod_with_serialize>);

using nested = std::map<std::string, std::vector<std::vector<int>>>;
using mixed = std::tuple<int, std::string, std::optional<double>, std::variant<int, std::string>,
                         std::unordered_map<int, std::string>>;

std::string random_string(std::mt19937_64& g) {
  std::string s(g() % 40, ' ');
  for (char& c : s) c = static_cast<char>('a' + g() % 26);
  return s;
}

// Random values of every kind from (seed, rank): the receiver rebuilds what the sender sent.
struct values {
  std::vector<std::string> strings;
  nested tree;
  mixed tuple;
  particle p;
  edge_list edges;
};
values make_values(int rank) {
  std::mt19937_64 g(1234 + static_cast<std::uint64_t>(rank));
  values v;
  v.strings.resize(g() % 200);
  for (auto& s : v.strings) s = random_string(g);
  for (int k = 0, n = static_cast<int>(g() % 20); k < n; ++k) {
    auto& lists = v.tree[random_string(g)];
    lists.resize(g() % 5);
    for (auto& l : lists) l = cairn::test::random_values<int>(g() % 30, g());
  }
  std::unordered_map<int, std::string> m;
  for (int k = 0, n = static_cast<int>(g() % 10); k < n; ++k)
    m[static_cast<int>(g() % 1000)] = random_string(g);
  std::variant<int, std::string> var;
  if (g() % 2)
    var = static_cast<int>(g() % 100);
  else
    var = random_string(g);
  std::optional<double> od;
  if (g() % 2) od = static_cast<double>(g() % 1000) / 7.0;
  v.tuple = mixed{static_cast<int>(g() % 100000), random_string(g), od, var, m};
  v.p.name = random_string(g);
  v.p.position = cairn::test::random_values<double>(3, g());
  if (g() % 2) v.p.cell = static_cast<int>(g() % 64);
  for (int k = 0, n = static_cast<int>(g() % 50); k < n; ++k)
    v.edges.adjacency[static_cast<int>(g() % 100)].insert(static_cast<int>(g() % 100));
  return v;
}
}  // namespace

TEST(Values, SerializeRoundTrip) {
  const values v = make_values(7);
  EXPECT_EQ(cairn::deserialize<std::vector<std::string>>(cairn::serialize(v.strings)), v.strings);
  EXPECT_EQ(cairn::deserialize<nested>(cairn::serialize(v.tree)), v.tree);
  EXPECT_EQ(cairn::deserialize<mixed>(cairn::serialize(v.tuple)), v.tuple);
  EXPECT_EQ(cairn::deserialize<particle>(cairn::serialize(v.p)), v.p);
  EXPECT_EQ(cairn::deserialize<edge_list>(cairn::serialize(v.edges)), v.edges);
  static_assert(cairn::serializable<particle> && cairn::serializable<edge_list>);
  static_assert(!cairn::serializable<double> && cairn::sendable<double>);
  static_assert(!cairn::serializable<pod_with_serialize>);
}

TEST(Values, DeserializeRejectsWrongType) {
  // Too few bytes: an empty optional is one byte; a vector needs an 8-byte size first.
  const auto none = cairn::serialize(std::optional<std::string>{});
  EXPECT_TRUE(has_text(
      message_of([&] { (void)cairn::deserialize<std::vector<std::string>>(none, "recv", 3); }),
      "cairn::recv: rank 3: a message of 1 bytes does not hold a"));
  // Bytes left over.
  const auto two = cairn::serialize(std::pair<std::string, std::string>{"a", "b"});
  EXPECT_TRUE(has_text(message_of([&] { (void)cairn::deserialize<std::string>(two); }),
                       "bytes more; do sender and receiver use the same type?"));
}

TEST(Values, TriviallyCopyableValues) {
  run([](cairn::world& w) {
    const int right = right_of(w), left = left_of(w);
    const double x = 0.5 + w.rank();
    const pod_with_serialize pod{1.5 * w.rank(), w.rank()};
    auto rx = w.irecv<double>(left, 1);
    auto rpod = w.irecv<pod_with_serialize>(left, 2);
    w.send(x, right, 1);
    auto sp = w.isend(pod, right, 2);
    EXPECT_EQ(rx.wait(), 0.5 + left);
    EXPECT_EQ(rx.last_status().source, left);
    EXPECT_EQ(rpod.wait(), (pod_with_serialize{1.5 * left, left}));
    sp.wait();
    // Blocking forms.
    w.send(static_cast<std::int64_t>(w.rank()) * 3, right, 3);
    EXPECT_EQ(w.recv<std::int64_t>(left, 3), std::int64_t{left} * 3);
    EXPECT_EQ(pod_serializations.load(), 0);
  });
}

TEST(Values, RangesSizedByTheMessage) {
  run([](cairn::world& w) {
    const int right = right_of(w), left = left_of(w);
    const auto mine = cairn::test::random_values<double>(
        static_cast<std::size_t>(w.rank()) * 1000 + 3, 11, static_cast<std::uint64_t>(w.rank()));
    const std::string text(static_cast<std::size_t>(w.rank()) * 37, 'a' + w.rank() % 26);
    auto r = w.irecv<std::vector<double>>(left, 4);
    w.send(mine, right, 4);
    w.send(text, right, 5);
    const auto expect = cairn::test::random_values<double>(
        static_cast<std::size_t>(left) * 1000 + 3, 11, static_cast<std::uint64_t>(left));
    EXPECT_EQ(r.wait(), expect);
    EXPECT_EQ(w.recv<std::string>(left, 5),
              std::string(static_cast<std::size_t>(left) * 37, 'a' + left % 26));
  });
}

TEST(Values, AnyTypeRing) {
  run([](cairn::world& w) {
    const int right = right_of(w), left = left_of(w);
    const values mine = make_values(w.rank());
    const values theirs = make_values(left);
    // Non-blocking receives first (all pending at once), then the sends, some from temporaries.
    auto r1 = w.irecv<std::vector<std::string>>(left, 10);
    auto r2 = w.irecv<nested>(left, 11);
    auto r3 = w.irecv<mixed>(cairn::any_source, 12);
    std::vector<cairn::request> sends;
    sends.push_back(w.isend(mine.strings, right, 10));       // a range of strings: serialized
    sends.push_back(w.isend(nested(mine.tree), right, 11));  // a temporary: owned
    sends.push_back(w.isend(mine.tuple, right, 12));
    w.send(mine.p, right, 13);
    w.send(mine.edges, right, 14);
    EXPECT_EQ(w.recv<particle>(left, 13), theirs.p);
    cairn::status st;
    EXPECT_EQ(w.recv<edge_list>(cairn::any_source, 14, st), theirs.edges);
    EXPECT_EQ(st.source, left);
    cairn::wait_all(sends);
    EXPECT_EQ(r1.wait(), theirs.strings);
    EXPECT_EQ(r2.wait(), theirs.tree);
    // Completed through its handle first, then the value.
    r3.handle().wait();
    EXPECT_EQ(r3.wait(), theirs.tuple);
    EXPECT_EQ(r3.last_status().source, left);
  });
}

TEST(Values, ManyMessagesInOrder) {
  run([](cairn::world& w) {
    const int right = right_of(w), left = left_of(w);
    constexpr int n = 50;
    std::vector<cairn::value_request<std::vector<std::string>>> recvs;
    for (int i = 0; i < n; ++i) recvs.push_back(w.irecv<std::vector<std::string>>(left, 7));
    for (int i = 0; i < n; ++i)
      w.send(std::vector<std::string>(static_cast<std::size_t>(i % 5), std::to_string(i)), right,
             7);
    for (int i = 0; i < n; ++i)
      EXPECT_EQ(recvs[static_cast<std::size_t>(i)].wait(),
                std::vector<std::string>(static_cast<std::size_t>(i % 5), std::to_string(i)));
  });
}

TEST(Values, WrongSizeIsAnError) {
  run([](cairn::world& w) {
    const int right = right_of(w), left = left_of(w);
    const float f = 1.0f;
    w.send(f, right, 20);
    EXPECT_TRUE(has_text(message_of([&] { (void)w.recv<double>(left, 20); }),
                         "cairn::recv: rank " + std::to_string(w.rank()) +
                             ": message of 4 bytes from rank " + std::to_string(left) +
                             " (tag 20) does not hold one 8-byte value"));
    w.send(f, right, 21);
    auto r = w.irecv<double>(left, 21);
    EXPECT_TRUE(has_text(message_of([&] { (void)r.wait(); }), "does not hold one 8-byte value"));
    const std::array<char, 5> five{};
    w.send(five, right, 22);
    EXPECT_TRUE(has_text(message_of([&] { (void)w.recv<std::vector<int>>(left, 22); }),
                         "is not a whole number of 4-byte elements"));
    w.send(std::optional<std::string>{}, right, 23);
    EXPECT_TRUE(has_text(message_of([&] { (void)w.recv<std::vector<std::string>>(left, 23); }),
                         "do sender and receiver use the same type?"));
  });
}
