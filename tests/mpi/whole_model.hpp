#pragma once
// The reference of the MPI exactness tests (test_parallel3d, test_context_parallel): the whole model on
// one rank over the global batch, and where an element of a rank's tensor-parallel slice sits in it.
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "kernels/optimizer.hpp"
#include "kernels/transformer_stage.hpp"
#include "kernels/transformer_workload.hpp"

namespace pipebench::testing {

// The loss over every rank's last stages: the sum of their micro-batches' losses and their count
// (tensor-parallel rank 0 reports; every rank calls it).
struct LossSums {
  double sum = 0, count = 0;
  double mean() const { return sum / count; }
};
inline LossSums loss_sums(const kernels::Workload& w, int tp_rank) {
  double mine[2] = {0, 0}, all[2] = {0, 0};
  if (tp_rank == 0)
    for (const auto& f : w.step_figures()) {
      if (f.kind == kernels::Workload::FigureKind::loss_sum) mine[0] += f.value;
      if (f.kind == kernels::Workload::FigureKind::loss_count) mine[1] += f.value;
    }
  MPI_Allreduce(mine, all, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  return {all[0], all[1]};
}

// The whole model on one rank over the global batch, `steps` steps: last step's loss and gradients,
// the weights after the last update.
struct Reference {
  std::map<std::string, std::size_t> offset;  // parameter name -> offset in the flat buffers
  std::vector<double> grads, weights;
  double loss = 0;
  double aux = 0;     // MoE: the aux loss per micro-batch (every MoE layer's), last step
  long dropped = 0;   // MoE: routes capacity dropped, last step, every micro-batch's
  double grad_scale = 0, weight_scale = 0;
};

template <class Options>
Reference whole_model(kernels::TransformerWorkloadConfig c, int global_mbs, const Options& o) {
  kernels::TransformerConfig t =
      kernels::TransformerConfig::whole_model(c.hidden, c.heads, c.seq, c.micro_batch, c.vocab, c.layers);
  t.seed = c.seed;
  t.tie_embeddings = o.tie;
  static_cast<analysis::transformer::Moe&>(t) = c.moe;  // every expert on this one rank
  using Stage = kernels::TransformerStage<double>;
  Stage model(t);
  const std::size_t n = model.weights().extent(0);
  Stage::Flat m("m", n), v("v", n);
  Reference ref;
  for (int step = 1; step <= o.steps; ++step) {
    model.zero_grad();
    ref.loss = ref.aux = 0;
    for (int mb = 0; mb < global_mbs; ++mb) {
      model.forward(mb);
      ref.loss += model.loss(mb) / global_mbs;
      ref.aux += model.aux_loss(mb) / global_mbs;
      model.backward(mb);
    }
    ref.grads.assign(model.gradients().data(), model.gradients().data() + n);
    ref.dropped = model.dropped_tokens();
    if (o.optimizer == kernels::Optimizer::adam) {
      kernels::AdamSettings a;
      a.lr = o.lr;
      a.weight_decay = o.weight_decay;
      kernels::adam_update<double, Kokkos::DefaultExecutionSpace>(model.weights(), model.gradients(), m, v, 0, n, step,
                                                                  a, model.parameters());
    } else {
      for (std::size_t i = 0; i < n; ++i) model.weights()(i) -= o.lr * model.gradients()(i);
    }
    Kokkos::fence();
  }
  ref.weights.assign(model.weights().data(), model.weights().data() + n);
  for (const auto& p : model.parameters()) ref.offset[p.name] = p.offset;
  for (double g : ref.grads) ref.grad_scale = std::max(ref.grad_scale, std::abs(g));
  for (double w : ref.weights) ref.weight_scale = std::max(ref.weight_scale, std::abs(w));
  return ref;
}

// Index in the unsplit tensor of element i of this rank's slice (as kernels/parameters.hpp lays it).
inline std::size_t global_index(const kernels::ParamInfo& p, int t, int rank, std::size_t i) {
  using Split = kernels::ParamInfo::Split;
  std::size_t r = i / p.cols, col = i % p.cols, cols = p.cols;
  const auto tt = static_cast<std::size_t>(t), rr = static_cast<std::size_t>(rank);
  if (p.split == Split::qkv_columns) {
    const std::size_t part = p.cols / 3;
    col = (col / part) * part * tt + rr * part + col % part;
    cols = p.cols * tt;
  } else if (p.split == Split::columns) {
    col += rr * p.cols;
    cols = p.cols * tt;
  } else if (p.split == Split::rows) {
    r += rr * p.rows;
  }
  return r * cols + col;
}

}  // namespace pipebench::testing
