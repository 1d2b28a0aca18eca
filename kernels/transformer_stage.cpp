#include "kernels/transformer_stage.hpp"

namespace pipebench::kernels {

template class TransformerStage<float, Kokkos::DefaultExecutionSpace>;
template class TransformerStage<double, Kokkos::DefaultExecutionSpace>;

}  // namespace pipebench::kernels
