#pragma once
/// \file
/// The array layer: layouts, distributed arrays, redistribution plans and transfers, tasks,
/// halo exchange.

#include "cairn/array/darray.hpp"
#include "cairn/array/halo.hpp"
#include "cairn/array/layout.hpp"
#include "cairn/array/plan.hpp"
#include "cairn/array/tasks.hpp"
#include "cairn/array/transfer.hpp"
