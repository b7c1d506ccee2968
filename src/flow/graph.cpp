// Building a flow graph: instances, collective modules, flow statements and their errors; and
// drawing it (to_dot, describe) from its lowering.
#include <algorithm>
#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cairn/flow/graph.hpp"
#include "flow/lowered.hpp"
#include "flow/round_buffers.hpp"

namespace cairn::flow {
namespace detail {

graph_data::graph_data(const world& world, graph_options o) : w(world), opts(o) {}

void graph_data::fail(const char* call, const std::string& what) const {
  cairn::detail::fail(call, w.rank(), what);
}

std::string graph_data::instance_name(int instance) const {
  const group_decl& g =
      groups[static_cast<std::size_t>(group_of[static_cast<std::size_t>(instance)])];
  if (!g.vector) return g.name;
  std::string s = g.name;
  s += '[';
  s += std::to_string(instance - g.first);
  s += ']';
  return s;
}

void graph_data::check_index(const char* call, int group, int i, int count) const {
  if (i < 0 || i >= count)
    fail(call, "index " + std::to_string(i) + " outside the " + std::to_string(count) +
                   " instances of '" + groups[static_cast<std::size_t>(group)].name + "'");
}

int graph_data::add_group(std::string name, int count, bool vector, const char* type,
                          std::function<std::unique_ptr<module_box>(int)> make) {
  if (count < 1)
    fail("flow::graph::add",
         "module vector '" + name + "' of " + std::to_string(count) + " instances (at least 1)");
  for (const group_decl& g : groups)
    if (g.name == name) fail("flow::graph::add", "two modules named '" + name + "'");
  for (const collective_decl& c : collectives)
    if (c.name == name)
      fail("flow::graph::add", "a module and a reduce or bcast named '" + name + "'");
  group_decl g;
  g.name = std::move(name);
  g.first = static_cast<int>(group_of.size());
  g.count = count;
  g.vector = vector;
  g.module_type = type;
  g.make = std::move(make);
  groups.push_back(std::move(g));
  group_of.insert(group_of.end(), static_cast<std::size_t>(count),
                  static_cast<int>(groups.size()) - 1);
  placed.insert(placed.end(), static_cast<std::size_t>(count), -1);
  return static_cast<int>(groups.size()) - 1;
}

int graph_data::add_collective(collective_decl d) {
  for (const group_decl& g : groups)
    if (g.name == d.name)
      fail("flow::graph::reduce", "a module and a reduce or bcast named '" + d.name + "'");
  for (const collective_decl& c : collectives)
    if (c.name == d.name)
      fail("flow::graph::reduce", "two reduce or bcast modules named '" + d.name + "'");
  collectives.push_back(std::move(d));
  receivers.emplace_back();
  return static_cast<int>(collectives.size()) - 1;
}

namespace {

std::string kind_of(const collective_decl& c) {
  return std::string(c.is_reduce ? "reduce '" : "bcast '") + c.name + "'";
}

}  // namespace

void graph_data::connect(const char* call, const end_desc& from, const std::vector<end_desc>& to) {
  const auto port_name = [&](int instance, const queue_ref& q) {
    return instance_name(instance) + "." + q.name;
  };
  if (to.empty()) fail(call, "a flow to no queue");
  if (from.collective >= 0) {  // a collective module into input queues: its receivers
    const collective_decl& c = collectives[static_cast<std::size_t>(from.collective)];
    std::vector<in_port>& rs = receivers[static_cast<std::size_t>(from.collective)];
    for (const end_desc& e : to) {
      if (e.collective >= 0)
        fail(call, kind_of(c) + " flows into " +
                       kind_of(collectives[static_cast<std::size_t>(e.collective)]) +
                       ": a reduce or bcast flows into instances' input queues only");
      for (int i : e.instances) {
        const in_port p{i, e.q};
        if (std::find(rs.begin(), rs.end(), p) != rs.end())
          fail(call, kind_of(c) + " flows into " + port_name(i, e.q) + " twice");
        rs.push_back(p);
      }
    }
    return;
  }
  const auto bind = [&](int instance, out_decl d) {
    for (const out_decl& o : outs)
      if (o.instance == instance && o.q.id == from.q.id) {
        const std::string first = o.collective >= 0
                                      ? kind_of(collectives[static_cast<std::size_t>(o.collective)])
                                      : port_name(o.targets.front().instance, o.targets.front().q);
        fail(call, "output queue " + port_name(instance, from.q) + " is bound twice (first to " +
                       first + "): state a fan-out in one flow statement");
      }
    d.instance = instance;
    d.q = from.q;
    outs.push_back(std::move(d));
  };
  if (to.size() == 1 && to.front().collective >= 0) {  // into a reduce or bcast
    for (int i : from.instances) {
      out_decl d;
      d.collective = to.front().collective;
      bind(i, std::move(d));
    }
    return;
  }
  for (const end_desc& e : to)
    if (e.collective >= 0)
      fail(call, "a flow into " + kind_of(collectives[static_cast<std::size_t>(e.collective)]) +
                     " and other queues in one statement");
  const std::size_t n = from.instances.size();
  std::vector<in_port> all;
  for (const end_desc& e : to)
    for (int i : e.instances) all.push_back({i, e.q});
  const auto check_unique = [&](const std::vector<in_port>& v) {
    for (std::size_t a = 0; a < v.size(); ++a)
      for (std::size_t b = a + 1; b < v.size(); ++b)
        if (v[a] == v[b])
          fail(call, "input queue " + port_name(v[a].instance, v[a].q) +
                         " is a target twice in one statement");
  };
  if (to.size() == 1 && n == all.size()) {  // one to one
    for (std::size_t k = 0; k < n; ++k) {
      out_decl d;
      d.targets = {all[k]};
      bind(from.instances[k], std::move(d));
    }
  } else if (n == 1) {  // fan-out
    check_unique(all);
    out_decl d;
    d.targets = all;
    bind(from.instances.front(), std::move(d));
  } else if (to.size() == 1 && all.size() == 1) {  // fan-in
    for (int i : from.instances) {
      out_decl d;
      d.targets = all;
      bind(i, std::move(d));
    }
  } else {
    fail(call, "cannot connect " + std::to_string(n) + " instances' " + from.q.name + " to " +
                   std::to_string(all.size()) +
                   " input queues: one to one needs equal counts, else one instance on a side");
  }
}

void graph_data::place(const std::vector<int>& instances, const std::vector<int>& ranks) {
  if (instances.size() != ranks.size())
    fail("flow::graph::place", std::to_string(ranks.size()) + " ranks for " +
                                   std::to_string(instances.size()) + " instances");
  for (std::size_t k = 0; k < instances.size(); ++k) {
    if (ranks[k] < 0 || ranks[k] >= w.size())
      fail("flow::graph::place", instance_name(instances[k]) + " placed on rank " +
                                     std::to_string(ranks[k]) + " of a world of " +
                                     std::to_string(w.size()));
    placed[static_cast<std::size_t>(instances[k])] = ranks[k];
  }
}

}  // namespace detail

graph::graph(const world& w, graph_options opts)
    : data_(std::make_unique<detail::graph_data>(w, opts)),
      buffers_(std::make_unique<detail::round_buffers>()) {}

graph::~graph() = default;

const detail::lowered& graph::lower() {
  if (!plan_) plan_ = std::make_unique<detail::lowered>(detail::lower(*data_, data_->w.size()));
  return *plan_;
}

int graph::rank_of_instance(int instance) {
  return lower().rank_of[static_cast<std::size_t>(instance)];
}

namespace {

// A fingerprint of what a graph was told, the same on every rank that built the same graph:
// module vectors, placement, collective modules and flow statements, by names and numbers
// (never addresses, which differ between processes).
struct fingerprint {
  std::uint64_t h = 0xCBF29CE484222325ull;  // FNV-1a
  void add(std::uint64_t v) {
    for (int i = 0; i < 8; ++i, v >>= 8) h = (h ^ (v & 0xFF)) * 0x100000001B3ull;
  }
  void add(std::string_view s) {
    add(s.size());
    for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001B3ull;
  }
  void add(const detail::in_port& p) {
    add(static_cast<std::uint64_t>(p.instance));
    add(p.q.name);
  }
};

std::uint64_t structure_of(const detail::graph_data& g) {
  fingerprint f;
  for (const detail::group_decl& gr : g.groups) {
    f.add(gr.name);
    f.add(static_cast<std::uint64_t>(gr.count));
  }
  for (int p : g.placed) f.add(static_cast<std::uint64_t>(p));
  for (std::size_t c = 0; c < g.collectives.size(); ++c) {
    f.add(g.collectives[c].name);
    f.add(static_cast<std::uint64_t>(g.collectives[c].is_reduce));
    f.add(g.collectives[c].elem);
    for (const detail::in_port& p : g.receivers[c]) f.add(p);
  }
  for (const detail::out_decl& o : g.outs) {
    f.add(static_cast<std::uint64_t>(o.instance));
    f.add(o.q.name);
    f.add(static_cast<std::uint64_t>(o.collective));
    for (const detail::in_port& p : o.targets) f.add(p);
  }
  return f.h;
}

}  // namespace

void graph::run() {
  if (!agreed_) {
    // The options, then the graph: the least and (complemented) the greatest of each.
    const char* call = "flow::graph::run";
    const graph_options& o = data_->opts;
    const std::uint64_t mine[4] = {o.window_bytes, o.buffer_bytes, o.balance_reduces ? 1u : 0u,
                                   structure_of(*data_)};
    std::vector<std::uint64_t> v(8), least(8);
    for (std::size_t i = 0; i < 4; ++i) {
      v[i] = mine[i];
      v[4 + i] = ~mine[i];
    }
    data_->w.allreduce(v, least, cairn::min{});
    const char* names[3] = {"window_bytes", "buffer_bytes", "balance_reduces"};
    for (std::size_t i = 0; i < 3; ++i)
      if (least[i] != ~least[4 + i])
        data_->fail(call, std::string("ranks pass different graph_options::") + names[i] +
                              ": from " + std::to_string(least[i]) + " to " +
                              std::to_string(~least[4 + i]) + " (this rank " +
                              std::to_string(mine[i]) + ")");
    if (least[3] != ~least[7])
      data_->fail(call,
                  "ranks built different graphs (module vectors, placement, collective "
                  "modules or flow statements differ; this rank has " +
                      std::to_string(data_->group_of.size()) + " instances and " +
                      std::to_string(data_->outs.size()) + " bound output queues)");
    agreed_ = true;
  }
  const detail::lowered& plan = lower();
  detail::runner r(*data_, plan, *buffers_);
  r.run();
}

namespace {

std::string quoted(const std::string& s) {
  std::string q = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') q += '\\';
    q += c;
  }
  return q + '"';
}

}  // namespace

std::string graph::to_dot() {
  const detail::lowered& plan = lower();
  const detail::graph_data& g = *data_;
  std::ostringstream os;
  const auto inst = [&](const char* prefix, int i) {
    return quoted(std::string(prefix) + g.instance_name(i));
  };
  const auto coll = [&](const char* prefix, int c) {
    return quoted(std::string(prefix) + g.collectives[static_cast<std::size_t>(c)].name);
  };
  const auto coll_label = [&](int c) {
    const detail::collective_decl& d = g.collectives[static_cast<std::size_t>(c)];
    return d.is_reduce ? "Reduce " + d.name : "Broadcast " + d.name;
  };
  os << "digraph flow {\n  compound=true;\n  node [shape=box];\n";
  // The module graph as declared (Figure 7a).
  os << "  subgraph cluster_modules {\n    label=\"module graph\";\n";
  for (std::size_t i = 0; i < g.group_of.size(); ++i)
    os << "    " << inst("m:", static_cast<int>(i))
       << " [label=" << quoted(g.instance_name(static_cast<int>(i))) << "];\n";
  for (std::size_t c = 0; c < g.collectives.size(); ++c)
    os << "    " << coll("m:", static_cast<int>(c))
       << " [shape=ellipse, label=" << quoted(coll_label(static_cast<int>(c))) << "];\n";
  for (const detail::out_decl& o : g.outs) {
    if (o.collective >= 0) {
      os << "    " << inst("m:", o.instance) << " -> " << coll("m:", o.collective)
         << " [label=" << quoted(o.q.name) << "];\n";
    } else {
      for (const detail::in_port& t : o.targets)
        os << "    " << inst("m:", o.instance) << " -> " << inst("m:", t.instance)
           << " [label=" << quoted(std::string(o.q.name) + " > " + t.q.name) << "];\n";
    }
  }
  for (std::size_t c = 0; c < g.collectives.size(); ++c)
    for (const detail::in_port& t : g.receivers[c])
      os << "    " << coll("m:", static_cast<int>(c)) << " -> " << inst("m:", t.instance)
         << " [label=" << quoted(t.q.name) << "];\n";
  os << "  }\n";
  // The rank graph it lowers to (Figure 7b): ranks, their instances, the reduces that remain.
  os << "  subgraph cluster_ranks {\n    label=\"rank graph (" << plan.ranks << " ranks)\";\n";
  for (int r = 0; r < plan.ranks; ++r) {
    os << "    subgraph cluster_rank" << r << " {\n      label=\"rank " << r << "\";\n";
    for (std::size_t i = 0; i < plan.rank_of.size(); ++i)
      if (plan.rank_of[i] == r)
        os << "      " << inst("l:", static_cast<int>(i))
           << " [label=" << quoted(g.instance_name(static_cast<int>(i))) << "];\n";
    os << "    }\n";
  }
  for (const detail::lowered::reduce& red : plan.reduces) {
    std::string label = "generalized reduce " +
                        g.collectives[static_cast<std::size_t>(red.module)].name + "\\nranks {";
    const auto list = [&label](const std::vector<int>& v) {
      for (std::size_t k = 0; k < v.size(); ++k) {
        if (k) label += ',';
        label += std::to_string(v[k]);
      }
    };
    list(red.p_ranks);
    label += "} -> {";
    list(red.r_ranks);
    label += "}";
    os << "    " << coll("l:", red.module) << " [shape=ellipse, label=\"" << label << "\"];\n";
  }
  for (const detail::lowered::binding& b : plan.bindings) {
    if (b.reduce >= 0) {
      os << "    " << inst("l:", b.instance) << " -> "
         << coll("l:", plan.reduces[static_cast<std::size_t>(b.reduce)].module)
         << " [label=" << quoted(b.q.name) << "];\n";
      continue;
    }
    for (const detail::in_port& t : b.targets) {
      std::string label = std::string(b.q.name) + " > " + t.q.name;
      if (b.via >= 0) label += " (" + g.collectives[static_cast<std::size_t>(b.via)].name + ")";
      os << "    " << inst("l:", b.instance) << " -> " << inst("l:", t.instance)
         << " [label=" << quoted(label)
         << (plan.rank_of[static_cast<std::size_t>(b.instance)] ==
                     plan.rank_of[static_cast<std::size_t>(t.instance)]
                 ? ", style=dashed"
                 : "")
         << "];\n";
    }
  }
  for (const detail::lowered::reduce& red : plan.reduces)
    for (const detail::in_port& t : red.receivers)
      os << "    " << coll("l:", red.module) << " -> " << inst("l:", t.instance)
         << " [label=" << quoted(t.q.name) << "];\n";
  os << "  }\n}\n";
  return os.str();
}

std::string graph::describe() {
  const detail::lowered& plan = lower();
  const detail::graph_data& g = *data_;
  std::ostringstream os;
  os << "flow graph on " << plan.ranks << " ranks: " << plan.rank_of.size() << " instances, "
     << plan.bindings.size() << " bound output queues, " << plan.reduces.size()
     << " generalized reduces\n";
  for (std::size_t i = 0; i < plan.rank_of.size(); ++i)
    os << "  " << g.instance_name(static_cast<int>(i)) << " on rank " << plan.rank_of[i] << "\n";
  for (const detail::lowered::reduce& red : plan.reduces) {
    os << "  reduce " << g.collectives[static_cast<std::size_t>(red.module)].name << ": "
       << red.participants.size() << " participants on ranks {";
    for (std::size_t k = 0; k < red.p_ranks.size(); ++k) os << (k ? "," : "") << red.p_ranks[k];
    os << "}, " << red.receivers.size() << " receivers on ranks {";
    for (std::size_t k = 0; k < red.r_ranks.size(); ++k) os << (k ? "," : "") << red.r_ranks[k];
    os << "}\n";
  }
  for (const detail::lowered::lane& ln : plan.lanes)
    os << "  lane " << g.groups[static_cast<std::size_t>(ln.group)].name << "." << ln.q.name
       << ": the items of " << ln.bindings.size()
       << " instances to other ranks on a typed channel\n";
  for (int c : plan.vanished) {
    const detail::collective_decl& d = g.collectives[static_cast<std::size_t>(c)];
    os << "  " << (d.is_reduce ? "reduce " : "bcast ") << d.name
       << " lowered to direct sends to its receivers\n";
  }
  return os.str();
}

}  // namespace cairn::flow
