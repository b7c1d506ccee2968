// Distributed FFTs: a 3-D real-to-complex transform of a box held in slabs of planes, its half
// spectrum in the layout the last batch of local transforms leaves (no redistribution at the
// end), and the way back. A plane wave in, so the spectrum is known: two peaks, zero elsewhere.
// The backward transform (scaled by 1/N) must give the box back.
//
//   build/examples/fft_roundtrip --cairn-ranks=4
//   scripts/mpiexec -np 2 build/examples/fft_roundtrip
#include <cairn/cairn.hpp>
#include <cairn/fft/fft.hpp>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <numbers>

namespace {

constexpr std::int64_t nz = 24, ny = 20, nx = 18;  // not multiples of most rank counts
constexpr std::int64_t kz = 3, ky = 5, kx = 2;     // the plane wave's frequency

double wave(const std::array<std::int64_t, 3>& g) {
  const double phase = 2 * std::numbers::pi *
                       (static_cast<double>(kz * g[0]) / nz + static_cast<double>(ky * g[1]) / ny +
                        static_cast<double>(kx * g[2]) / nx);
  return std::cos(phase);
}

}  // namespace

int main(int argc, char** argv) {
  return cairn::launch(argc, argv, [](cairn::world& w) {
    const cairn::group all = w.group(cairn::ranks{0, w.size()});
    const std::array<std::int64_t, 3> shape{nz, ny, nx};

    // The box in slabs of z planes; the spectrum where the plan's last batch leaves it.
    const cairn::layout<3> space(
        all, shape, {cairn::dist::block, cairn::dist::block, cairn::dist::block}, {w.size(), 1, 1});
    const auto freq = cairn::fft_frequency_layout<3>(all, shape, cairn::fft_kind::r2c);
    cairn::fft_plan<double, 3> plan(space, freq, cairn::fft_kind::r2c);
    if (w.rank() == 0) std::cout << plan << "\n";

    cairn::darray<double, 3> box(space), back(space);
    box.fill(wave);
    cairn::darray<std::complex<double>, 3> spectrum(freq);
    plan.forward(box, spectrum);

    // cos(2 pi k.x / n) has N/2 at +k and at -k; the half spectrum holds +k (kx <= nx/2), and
    // -k only where its x frequency wraps into the half kept (kx = 0 or nx/2).
    const double half = static_cast<double>(nz * ny * nx) / 2;
    std::int64_t wrong = 0;
    spectrum.for_each([&](const auto& g, const std::complex<double>& v) {
      const bool peak = g[0] == kz && g[1] == ky && g[2] == kx;
      wrong += std::abs(v - std::complex<double>(peak ? half : 0.0)) > 1e-9 * half;
    });

    plan.backward(spectrum, back, cairn::fft_scale::full);
    double err = 0;
    back.for_each([&](const auto& g, double v) { err = std::max(err, std::abs(v - wave(g))); });

    wrong = w.allreduce(wrong, cairn::plus{});
    err = w.allreduce(err, cairn::max{});
    if (w.rank() == 0)
      std::printf("fft_roundtrip: %lld wrong spectrum points, round trip error %.2e on %d ranks\n",
                  static_cast<long long>(wrong), err, w.size());
    if (wrong != 0 || err > 1e-12) throw std::runtime_error("fft_roundtrip: wrong result");
  });
}
