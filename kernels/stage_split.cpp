// The split of the model into stages (kernels/transformer_workload.hpp): even, given, or balanced from
// per-layer, embedding and head costs, FLOPs or measured in a calibration step.
#include <algorithm>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "analysis/error.hpp"
#include "kernels/transformer_stage.hpp"
#include "kernels/transformer_workload.hpp"

namespace pipebench::kernels {

std::vector<int> split_layers(int layers, int stages, const std::vector<int>& given) {
  if (stages < 1) throw UsageError("a model needs at least one stage");
  if (!given.empty()) {
    if (static_cast<int>(given.size()) != stages)
      throw UsageError("--layers-per-stage has " + std::to_string(given.size()) + " entries; the pipeline has " +
                       std::to_string(stages) + " stages (p*v)");
    long long sum = 0;
    for (int n : given) {
      if (n < 1) throw UsageError("--layers-per-stage entry " + std::to_string(n) + ": every stage needs >= 1 layer");
      sum += n;
    }
    if (sum != layers)
      throw UsageError("--layers-per-stage sums to " + std::to_string(sum) + " layers, the model has --layers " +
                       std::to_string(layers));
    return given;
  }
  if (layers < stages)
    throw UsageError("--layers " + std::to_string(layers) + " is fewer than the " + std::to_string(stages) +
                     " stages of the pipeline (p*v): every stage needs at least one layer");
  std::vector<int> split(stages, layers / stages);
  // The remainder goes to the middle stages, from the second one on.
  const int extra = layers % stages;
  for (int k = 0; k < extra; ++k) ++split[stages > 2 ? 1 + k % (stages - 2) : k];
  return split;
}

std::vector<int> stage_layers(const TransformerWorkloadConfig& c, int stages) {
  const int own = (c.embedding_stage ? 1 : 0) + (c.head_stage ? 1 : 0);
  if (stages <= own)
    throw UsageError("--embedding-stage/--head-stage need more stages than the " + std::to_string(own) +
                     " they take: the pipeline has " + std::to_string(stages) + " (p*v)");
  if (!c.layers_per_stage.empty()) {
    if (c.layers_auto) throw UsageError("--layers-per-stage is either auto or a list");
    if (!own) return split_layers(c.layers, stages, c.layers_per_stage);
    if (static_cast<int>(c.layers_per_stage.size()) != stages)
      throw UsageError("--layers-per-stage has " + std::to_string(c.layers_per_stage.size()) +
                       " entries; the pipeline has " + std::to_string(stages) + " stages (p*v)");
    const int first = c.embedding_stage ? 1 : 0, last = stages - (c.head_stage ? 1 : 0);
    if ((c.embedding_stage && c.layers_per_stage.front() != 0) || (c.head_stage && c.layers_per_stage.back() != 0))
      throw UsageError("with --embedding-stage / --head-stage, --layers-per-stage has 0 for that stage");
    std::vector<int> inner(c.layers_per_stage.begin() + first, c.layers_per_stage.begin() + last);
    split_layers(c.layers, last - first, inner);  // checks the rest
    return c.layers_per_stage;
  }
  const int first = c.embedding_stage ? 1 : 0, n = stages - own;
  std::vector<int> inner;
  if (!c.layers_auto || n == 1) {
    inner = split_layers(c.layers, n, {});
  } else {
    if (c.layers < n)
      throw UsageError("--layers " + std::to_string(c.layers) + " is fewer than the " + std::to_string(n) +
                       " stages that hold layers: every such stage needs at least one layer");
    // A stage of its own carries the embedding's or the head's cost: the layers' stages do not.
    const StageCosts k = balance_costs(c);
    inner = balance_layers(c.layers, n, k.layer, c.embedding_stage ? 0 : k.embedding, c.head_stage ? 0 : k.head);
  }
  std::vector<int> split(static_cast<std::size_t>(stages), 0);
  std::copy(inner.begin(), inner.end(), split.begin() + first);
  return split;
}

std::vector<int> balance_layers(int layers, int stages, double layer, double first, double last) {
  if (stages < 1 || layers < stages)
    throw UsageError("--layers " + std::to_string(layers) + " cannot be balanced over " + std::to_string(stages) +
                     " stages: every stage that holds layers needs at least one");
  if (stages == 1) return {layers};
  const int mid = stages - 2;
  std::vector<int> best;
  std::vector<double> best_key;
  for (int k1 = 1; k1 + 1 + mid <= layers; ++k1)
    for (int k2 = 1; k1 + k2 + mid <= layers; ++k2) {
      if (mid == 0 && k1 + k2 != layers) continue;
      std::vector<int> split{k1};
      if (mid > 0) {
        const auto inner = split_layers(layers - k1 - k2, mid, {});
        split.insert(split.end(), inner.begin(), inner.end());
      }
      split.push_back(k2);
      std::vector<double> key = stage_costs(split, {layer, first, last});
      std::sort(key.begin(), key.end(), std::greater<double>());
      if (best.empty() || key < best_key) best = split, best_key = key;  // ties keep the earlier (fewer first)
    }
  return best;
}

std::vector<double> stage_costs(const std::vector<int>& split, const StageCosts& k) {
  std::vector<double> c;
  for (std::size_t i = 0; i < split.size(); ++i)
    c.push_back(split[i] * k.layer + (i == 0 ? k.embedding : 0) + (i + 1 == split.size() ? k.head : 0));
  return c;
}

namespace {

enum class Part { layer, embedding, head };

// One part of c's model alone, as a stage of c's shape holds it: its first layer, the embedding, or the
// head (final LayerNorm, output layer and loss). Untied: the part has no copy to sum with.
TransformerConfig part_config(const TransformerWorkloadConfig& c, Part p) {
  TransformerConfig t = stage_config(c, {c.layers}, 0);
  t.first_layer = p == Part::head ? c.layers : 0;
  t.num_layers = p == Part::layer ? 1 : 0;
  t.embedding = p == Part::embedding;
  t.head = p == Part::head;
  t.tie_embeddings = false;
  return t;
}

// Median seconds of `reps` runs of fn after one warm-up.
template <class Fn>
double median_time(int reps, Fn fn) {
  fn();
  std::vector<double> t;
  for (int r = 0; r < std::max(reps, 1); ++r) {
    const auto start = std::chrono::steady_clock::now();
    fn();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

template <class S>
StageCosts measure(const TransformerWorkloadConfig& c, int reps) {
  using Stage = TransformerStage<S>;
  using Act = typename Stage::Activations;
  const auto filled = [&](const char* label) {
    Act a(std::string(label), static_cast<std::size_t>(c.micro_batch), static_cast<std::size_t>(c.seq),
          static_cast<std::size_t>(c.hidden));
    Kokkos::deep_copy(Kokkos::DefaultExecutionSpace(), a, S(0.01));
    Kokkos::DefaultExecutionSpace().fence();
    return a;
  };
  const Act x = filled("pipebench::calibration_input"), dy = filled("pipebench::calibration_grad");
  // The stages have no hooks: the tensor-parallel sums are left out, the work is this rank's slice's.
  StageCosts k;
  {
    Stage st(part_config(c, Part::layer));
    k.layer = median_time(reps, [&] {
      st.forward(0, x);
      st.backward(0, dy);
    });
  }
  {
    Stage st(part_config(c, Part::embedding));
    k.embedding = median_time(reps, [&] {
      st.forward(0);
      st.backward(0, dy);
    });
  }
  {
    Stage st(part_config(c, Part::head));
    k.head = median_time(reps, [&] {
      st.forward(0, x);
      st.backward(0);
    });
  }
  return k;
}

}  // namespace

StageCosts balance_costs(const TransformerWorkloadConfig& c) {
  if (c.balance == Balance::measured) {
    const auto it = c.measured_costs.find(c.tp_size);
    if (it != c.measured_costs.end()) return it->second;
  }
  // FLOPs: one layer, and the output layer and loss; the embedding's lookups count none.
  StageCosts k;
  k.layer = stage_flops(part_config(c, Part::layer)).total();
  k.head = stage_flops(part_config(c, Part::head)).total();
  return k;
}

StageCosts measure_stage_costs(const TransformerWorkloadConfig& c, int reps) {
  return c.fp64 ? measure<double>(c, reps) : measure<float>(c, reps);
}

}  // namespace pipebench::kernels
