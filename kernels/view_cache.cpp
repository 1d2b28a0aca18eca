#include "kernels/view_cache.hpp"

#include <utility>

namespace pipebench::kernels::detail {

namespace {
struct Registry {
  std::vector<std::function<void()>> trim, clear;
  bool hooked = false;  // a finalize hook is pending (Kokkos runs each hook once)
};
Registry& registry() {
  static Registry r;
  return r;
}
void clear_all() {
  Registry& r = registry();
  for (auto& f : r.clear) f();
  r.hooked = false;
}
}  // namespace

ViewCacheStats& view_cache_counters() {
  static ViewCacheStats s;
  return s;
}

void clear_at_finalize() {
  Registry& r = registry();
  if (r.hooked) return;
  Kokkos::push_finalize_hook(clear_all);
  r.hooked = true;
}

void register_view_cache(std::function<void()> trim, std::function<void()> clear) {
  registry().trim.push_back(std::move(trim));
  registry().clear.push_back(std::move(clear));
}

}  // namespace pipebench::kernels::detail

namespace pipebench::kernels {

ViewCacheStats view_cache_stats() { return detail::view_cache_counters(); }

void trim_view_cache() {
  for (auto& f : detail::registry().trim) f();
}

}  // namespace pipebench::kernels
