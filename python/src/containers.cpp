// The containers' direct-route classes, and the entry point that binds both routes.
#include "containers.hpp"

#include "containers_bind.hpp"

namespace cairn_python {

void bind_containers(nb::module_& m, nb::class_<cairn::world>& world,
                     nb::class_<cairn::group>& group) {
  // The containers' default combining cache, which the Python factories take as theirs.
  m.attr("_DEFAULT_CACHE_SLOTS") = cairn::containers::container_options{}.cache_slots;
  const containers_detail::factories on{world, group};
  containers_detail::bind_routed<cairn::msg::route::direct>(m, on, "");
  containers_detail::bind_grid(m, on);
}

}  // namespace cairn_python
