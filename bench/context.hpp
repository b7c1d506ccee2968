#pragma once
/// \file
/// The run context every JSON row carries (`"context"`): what a figure was measured on and with.

#include <string>

namespace cairn::bench {

/// The context as one JSON object: commit (`git describe` of the source at build time, "-dirty"
/// with uncommitted changes), date (UTC, when the process started), host, cores (hardware
/// threads), compiler, and the MPI library's version line (null without MPI). Computed once.
const std::string& run_context_json();

}  // namespace cairn::bench
