// The library's instances of combine_typed for the predefined operations on the arithmetic types
// (CAIRN_DETAIL_BUILTIN_COMBINES, cairn/coll/detail/prepare.hpp): every reduction of such
// elements, in any caller's code, runs these loops, compiled here at -O3 (src/coll/CMakeLists.txt)
// so that they are vectorized whatever the build type.
#include "cairn/coll/detail/prepare.hpp"

namespace cairn::detail {

#define CAIRN_DETAIL_INSTANTIATE_COMBINE(T, Op) \
  template void combine_typed<T, Op>(const void*, const void*, void*, std::size_t, bool);
CAIRN_DETAIL_BUILTIN_COMBINES(CAIRN_DETAIL_INSTANTIATE_COMBINE)
#undef CAIRN_DETAIL_INSTANTIATE_COMBINE

}  // namespace cairn::detail
