#pragma once
/// \file
/// Kept for existing includes: channel_options and channel_stats are in
/// cairn/msg/channel_options.hpp, the untyped half of a channel in
/// cairn/msg/detail/channel_core.hpp.

#include "cairn/msg/channel_options.hpp"
#include "cairn/msg/detail/channel_core.hpp"
