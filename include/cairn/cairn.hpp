#pragma once
/// \file
/// Everything of cairn in one include.

#include "cairn/runtime/error.hpp"
#include "cairn/runtime/launch.hpp"
#include "cairn/runtime/request.hpp"
#include "cairn/runtime/status.hpp"
#include "cairn/runtime/world.hpp"
