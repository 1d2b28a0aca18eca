// Every matrix product of a block must reach the vendor BLAS: KokkosKernels silently runs its own slow
// kernel for views it cannot hand over (strided subviews, mixed layouts). Its gemm announces which path
// it takes as a Kokkos profiling region; this test listens to them.
#include <gtest/gtest.h>

#include <KokkosKernels_config.h>

#include "kernels/transformer_stage.hpp"

#include <string>
#include <vector>

namespace pipebench::kernels {
namespace {

std::vector<std::string>* regions = nullptr;

void on_push_region(const char* name) {
  if (regions && std::string(name).rfind("KokkosBlas::gemm", 0) == 0) regions->push_back(name);
}

TEST(BlasPath, EveryProductOfABlockUsesTheVendorBlas) {
#if !defined(KOKKOSKERNELS_ENABLE_TPL_BLAS) && !defined(KOKKOSKERNELS_ENABLE_TPL_CUBLAS)
  GTEST_SKIP() << "KokkosKernels was built without a vendor BLAS";
#endif
  std::vector<std::string> seen;
  regions = &seen;
  Kokkos::Tools::Experimental::set_push_region_callback(on_push_region);
  for (Recompute mode : {Recompute::none, Recompute::selective}) {
    TransformerConfig c = TransformerConfig::whole_model(16, 4, 8, 2, 13, 1);
    c.recompute = mode;
    TransformerStage<float> st(c);
    st.forward(0);
    st.backward(0);
  }
  Kokkos::Tools::Experimental::set_push_region_callback(nullptr);
  regions = nullptr;
  // One layer, b*a = 8 head matrices. F: 4 linears + 2 per head + the head's projection = 21.
  // I: 4 + 4 per head + 1 = 37, selective 8 more (the scores again). W: 4 weights, 4 bias and 4 LayerNorm
  // column sums, and the head's projection and LayerNorm (3) = 15. So 73 + 81.
  EXPECT_EQ(seen.size(), 73u + 81u);
  for (const std::string& r : seen) EXPECT_NE(r.find("TPL"), std::string::npos) << r;
}

}  // namespace
}  // namespace pipebench::kernels
