#pragma once
/// \file
/// Kept for existing includes: the concepts moved to cairn/runtime/detail/transferable.hpp.

#include "cairn/runtime/detail/transferable.hpp"
