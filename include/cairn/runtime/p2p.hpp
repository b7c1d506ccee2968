#pragma once
/// \file
/// Everything a point-to-point program needs and nothing of the other layers: `launch`, the
/// world's identity and placement (`rank`, `size`, `node`, ...), `send`/`recv`/`isend`/
/// `irecv`/`probe`/`iprobe` (buffers and values of any type), `sendrecv`, `proc_null`,
/// persistent `send_init`/`recv_init`, `request` and `status`, and `cairn::error`. No
/// channels, arrays, algorithm tables or schedules come with it.
///
/// The world's collectives are members of `world` (it derives from coll::collectives and
/// coll::generalized_collectives), so their declarations come along, and so does cereal (the
/// serialization of values that are not trivially copyable): the header is only a little
/// lighter than cairn/cairn.hpp.

#include "cairn/runtime/error.hpp"
#include "cairn/runtime/launch.hpp"
#include "cairn/runtime/request.hpp"
#include "cairn/runtime/status.hpp"
#include "cairn/runtime/world.hpp"
