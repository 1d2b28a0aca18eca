#pragma once
// The cache behind alloc() (kernels/views.hpp), as a GPU framework's caching allocator keeps freed
// blocks (PyTorch's CUDA caching allocator): a view whose last user let go stays here and is handed,
// uninitialised, to the next alloc() of the same type and extents. Training steps are alike, so after
// the first step a step allocates and frees nothing. On a device that is more than speed: freeing
// device memory (cudaFree, which Kokkos' CudaSpace calls) synchronises the whole device, and would
// wait for NCCL receives posted ahead of the compute (docs/gpu.md "run --backend nccl").
// One host thread uses the kernels; the cache is not thread-safe.
#include <Kokkos_Core.hpp>

#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace pipebench::kernels {

struct ViewCacheStats {
  std::size_t allocated = 0;  // views made by Kokkos (a miss)
  std::size_t reused = 0;     // views handed out again
  std::size_t bytes = 0;      // bytes the cache owns, in use or not
};
ViewCacheStats view_cache_stats();

// Frees every cached view nobody uses (between configurations: a new model shape needs new sizes).
// Kokkos' finalize empties the cache whole.
void trim_view_cache();

namespace detail {
// Each view type's cache registers its trim and clear functions here on first use.
void register_view_cache(std::function<void()> trim, std::function<void()> clear);
ViewCacheStats& view_cache_counters();
// Kokkos must free the cached views before it finalizes: called whenever a view is cached.
void clear_at_finalize();

template <class V>
class ViewCache {
 public:
  static ViewCache& get() {
    static ViewCache* c = new ViewCache();  // never destroyed: Kokkos' finalize empties it first
    return *c;
  }
  template <class... Extents>
  V take(const char* label, Extents... extents) {
    std::vector<std::size_t> key{static_cast<std::size_t>(extents)...};
    auto& views = free_[key];
    ViewCacheStats& n = view_cache_counters();
    for (const V& v : views)
      if (v.use_count() == 1) {  // only the cache holds it
        ++n.reused;
        return v;
      }
    clear_at_finalize();
    views.push_back(V(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(label)),
                      static_cast<std::size_t>(extents)...));
    ++n.allocated;
    n.bytes += views.back().span() * sizeof(typename V::value_type);
    return views.back();
  }

 private:
  ViewCache() {
    register_view_cache([this] { drop(false); }, [this] { drop(true); });
  }
  void drop(bool all) {
    ViewCacheStats& n = view_cache_counters();
    for (auto& [key, views] : free_)
      for (auto it = views.begin(); it != views.end();)
        if (all || it->use_count() == 1) {
          n.bytes -= it->span() * sizeof(typename V::value_type);
          it = views.erase(it);
        } else {
          ++it;
        }
  }
  std::map<std::vector<std::size_t>, std::vector<V>> free_;
};
}  // namespace detail

}  // namespace pipebench::kernels
