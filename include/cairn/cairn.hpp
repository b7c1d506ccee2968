#pragma once
/// \file
/// Everything of cairn in one include.

#include "cairn/array/array.hpp"
#include "cairn/coll/algorithms.hpp"
#include "cairn/coll/collectives.hpp"
#include "cairn/coll/generalized.hpp"
#include "cairn/coll/op.hpp"
#include "cairn/coll/schedule.hpp"
#include "cairn/flow/graph.hpp"
#include "cairn/msg/async.hpp"
#include "cairn/msg/channel.hpp"
#include "cairn/msg/grid_model.hpp"
#include "cairn/msg/prefetch.hpp"
#include "cairn/msg/serial_channel.hpp"
#include "cairn/runtime/error.hpp"
#include "cairn/runtime/group.hpp"
#include "cairn/runtime/launch.hpp"
#include "cairn/runtime/request.hpp"
#include "cairn/runtime/status.hpp"
#include "cairn/runtime/world.hpp"
