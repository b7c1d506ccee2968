// cairn::fft from the installed package: a 2-D c2c transform of a constant on 2 ranks has all of
// its weight at frequency zero.
#include <cairn/cairn.hpp>
#include <cairn/fft/fft.hpp>

#include <atomic>
#include <cmath>
#include <complex>
#include <cstdio>

int main(int argc, char** argv) {
  std::atomic<int> wrong{0};
  cairn::launch_options o;
  o.engine = cairn::engine::threads;
  o.ranks = 2;
  const int rc = cairn::launch(argc, argv, o, [&](cairn::world& w) {
    const cairn::group all = w.group(cairn::ranks{0, w.size()});
    const cairn::layout<2> l(all, {8, 6}, {cairn::dist::block, cairn::dist::block});
    cairn::fft_options opts;
    opts.rigor = cairn::fft_rigor::estimate;
    cairn::fft_plan<double, 2> plan(l, l, cairn::fft_kind::c2c, opts);
    cairn::darray<std::complex<double>, 2> x(l), y(l);
    x.fill([](const auto&) { return std::complex<double>(1, 0); });
    plan.forward(x, y);
    y.for_each([&](const auto& g, const std::complex<double>& v) {
      const double want = g[0] == 0 && g[1] == 0 ? 48 : 0;
      if (std::abs(v - want) > 1e-12) ++wrong;
    });
  });
  std::printf("fft_consumer: %d wrong\n", wrong.load());
  return rc != 0 || wrong != 0;
}
