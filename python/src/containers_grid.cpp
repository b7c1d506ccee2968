// The containers' grid-route classes (their names end in "_grid").
#include "containers_bind.hpp"

namespace cairn_python::containers_detail {

void bind_grid(nb::module_& m, const factories& on) {
  bind_routed<cairn::msg::route::grid>(m, on, "_grid");
}

}  // namespace cairn_python::containers_detail
