#pragma once
// cairn.FFTPlan's core (built where cairn has its FFT library, cairn::fft).
#include <nanobind/nanobind.h>

namespace cairn_python {

namespace nb = nanobind;

/// Binds _FFTPlan, _fft_plan and _fft_arrays (over cairn.DArrays) to module `m`.
void bind_fft(nb::module_& m);

}  // namespace cairn_python
