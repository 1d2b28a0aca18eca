// The cache behind alloc() (kernels/view_cache.hpp): a view comes back only once nobody holds it, and a
// training step after the first allocates nothing, whatever the schedule's order of F, I and W.
#include "helpers.hpp"

#include "kernels/transformer_stage.hpp"
#include "kernels/view_cache.hpp"

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

TEST(ViewCache, AStepAfterTheFirstAllocatesNothing) {
  TransformerConfig c = TransformerConfig::whole_model(16, 4, 8, 2, 13, 2);
  TransformerStage<float> st(c);
  const auto step = [&st] {
    st.zero_grad();
    st.forward(0);
    st.forward(1);
    st.backward_input(0);
    st.backward(1);
    st.backward_weight(0);
  };
  step();
  const std::size_t allocated = view_cache_stats().allocated, reused = view_cache_stats().reused;
  step();
  EXPECT_EQ(view_cache_stats().allocated, allocated);
  EXPECT_GT(view_cache_stats().reused, reused);
}

}  // namespace
}  // namespace pipebench::kernels::test
