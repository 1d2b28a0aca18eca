// The cache behind alloc() (kernels/view_cache.hpp): a view comes back only once nobody holds it, and a
// training step after the first allocates nothing, whatever the schedule's order of F, I and W.
#include "helpers.hpp"

#include "kernels/transformer_stage.hpp"
#include "kernels/view_cache.hpp"

#include <cstdint>

namespace pipebench::kernels::test {
namespace {

using Mat = Views<float, Kokkos::DefaultExecutionSpace>::Mat;

TEST(ViewCache, AViewComesBackOnlyWhenNobodyHoldsIt) {
  trim_view_cache();
  Mat a = alloc<Mat>("a", 3, 7);
  const Mat b = alloc<Mat>("b", 3, 7);
  EXPECT_NE(a.data(), b.data());  // both held
  const float* first = a.data();
  const Mat other_shape = alloc<Mat>("c", 7, 3);
  EXPECT_NE(other_shape.data(), first);
  a = Mat();
  const Mat again = alloc<Mat>("d", 3, 7);
  EXPECT_EQ(again.data(), first);  // released, same type and extents: reused
  const auto held = view_cache_stats().bytes;
  trim_view_cache();  // frees nothing held
  EXPECT_EQ(view_cache_stats().bytes, held);
}

// Kokkos' own allocation events, not only the cache's: a view made around the cache counts too.
std::size_t kokkos_allocations = 0;
void on_allocate(Kokkos::Profiling::SpaceHandle, const char*, const void*, std::uint64_t) { ++kokkos_allocations; }

// The whole stage in each recomputation mode, and tensor-parallel with the vocabulary-parallel loss and
// sequence parallelism (the collectives are no-ops here: the values do not matter, the allocations do).
TEST(ViewCache, AStepAfterTheFirstAllocatesNothing) {
  using Stage = TransformerStage<float>;
  for (const int variant : {0, 1, 2, 3}) {
    const int t = variant < 2 ? 1 : 2;
    TransformerConfig c = TransformerConfig::whole_model(16, 4, 8, 2, 14, 2);
    c.recompute = variant == 1 ? Recompute::full : variant == 2 ? Recompute::selective : Recompute::none;
    c.tp_size = t;
    c.vocab_parallel = t > 1;
    c.sequence_parallel = variant == 3;
    Stage st(c, [](const Stage::Matrix&, TpPoint) {});
    if (c.sequence_parallel)
      st.set_sequence_parallel([](const Stage::Matrix&, const Stage::Matrix&, TpPoint) {},
                               [](const Stage::Matrix&, const Stage::Matrix&, TpPoint) {});
    const auto step = [&st] {
      st.zero_grad();
      st.forward(0);
      st.forward(1);
      st.backward_input(0);
      st.backward(1);
      st.backward_weight(0);
    };
    Kokkos::Tools::Experimental::set_allocate_data_callback(on_allocate);
    kokkos_allocations = 0;
    step();
    const std::size_t first = kokkos_allocations, reused = view_cache_stats().reused;
    step();
    Kokkos::Tools::Experimental::set_allocate_data_callback(nullptr);
    EXPECT_GT(first, 0u) << "variant " << variant;  // the callback sees allocations
    EXPECT_EQ(kokkos_allocations, first) << "variant " << variant << ": the second step allocated";
    EXPECT_GT(view_cache_stats().reused, reused) << "variant " << variant;
  }
}

}  // namespace
}  // namespace pipebench::kernels::test
