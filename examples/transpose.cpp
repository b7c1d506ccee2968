// Distributed arrays: the transpose of a matrix held in blocks of rows. One redistribution
// takes A from blocks of rows to blocks of columns, where each rank's columns of A are rows of
// the transpose: a local transpose then gives B = A^T, again in blocks of rows. A second,
// block-cyclic redistribution moves B on. Every element is checked against its global index.
//
//   build/examples/transpose --cairn-ranks=4
//   scripts/mpiexec -np 2 build/examples/transpose
#include <cairn/cairn.hpp>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <span>
#include <string>

namespace {

constexpr std::int64_t rows = 60, cols = 45;

// The value of A at global index (i, j): unique, and exact as a double.
double a_at(std::int64_t i, std::int64_t j) { return static_cast<double>(i * 1000 + j); }

}  // namespace

int main(int argc, char** argv) {
  return cairn::launch(argc, argv, [](cairn::world& w) {
    const cairn::group all = w.group(cairn::ranks{0, w.size()});
    using cairn::dist::block;
    using cairn::dist::replicated;

    // A (rows x cols) in blocks of rows: (BLOCK, *) on a grid of size() x 1.
    const cairn::layout<2> a_rows(all, {rows, cols}, {block, replicated});
    cairn::darray<double, 2> a(a_rows);
    a.fill([](const auto& g) { return a_at(g[0], g[1]); });  // by global index

    // The same matrix in blocks of columns: (*, BLOCK) on a grid of 1 x size(). The plan says
    // which runs of which rows go where; it is computed once and cached.
    const cairn::layout<2> a_cols(all, {rows, cols}, {replicated, block});
    cairn::darray<double, 2> c(a_cols);
    if (w.rank() == 0) std::cout << *cairn::plan_redistribution(a_rows, a_cols, 0, sizeof(double));
    cairn::redistribute(a, c);

    // B = A^T (cols x rows) in blocks of rows: B's rows are A's columns, and BLOCK splits the
    // column index of A and the row index of B alike, so this rank's rows of B are the local
    // transpose of its columns of A.
    const cairn::layout<2> b_rows(all, {cols, rows}, {block, replicated});
    cairn::darray<double, 2> b(b_rows);
    const auto cs = c.local_shape();  // rows x (my columns)
    if (b.local_shape()[0] != cs[1] || b.local_shape()[1] != cs[0])
      throw cairn::error("transpose: local parts do not match");
    for (std::int64_t i = 0; i < cs[0]; ++i)
      for (std::int64_t j = 0; j < cs[1]; ++j) b(j, i) = c(i, j);

    // Non-blocking, to any layout: B again, block-cyclic in both dimensions on a 2-D grid.
    const cairn::layout<2> b_cyclic(all, {cols, rows},
                                    {cairn::dist::block_cyclic(4), cairn::dist::block_cyclic(3)});
    cairn::darray<double, 2> d(b_cyclic);
    cairn::request moving = cairn::iredistribute(b, d);
    moving.wait();

    // Check every local element of B and of its block-cyclic copy by its global index.
    std::int64_t wrong = 0;
    b.for_each([&](const auto& g, double x) { wrong += x != a_at(g[1], g[0]); });
    d.for_each([&](const auto& g, double x) { wrong += x != a_at(g[1], g[0]); });
    w.allreduce(cairn::in_place, std::span(&wrong, 1), cairn::plus{});
    if (w.rank() == 0)
      std::printf(
          "transpose: %d ranks (%s engine), %lldx%lld matrix, grid of the copy %dx%d, "
          "%lld wrong elements\n",
          w.size(), std::string(cairn::to_string(w.engine())).c_str(), static_cast<long long>(rows),
          static_cast<long long>(cols), b_cyclic.grid()[0], b_cyclic.grid()[1],
          static_cast<long long>(wrong));
    if (wrong != 0) throw cairn::error("transpose: B differs from the transpose of A");
  });
}
