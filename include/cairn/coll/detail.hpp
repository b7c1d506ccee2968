#pragma once
/// \file
/// Kept for existing includes: moved to cairn/coll/detail/prepare.hpp.

#include "cairn/coll/detail/prepare.hpp"
