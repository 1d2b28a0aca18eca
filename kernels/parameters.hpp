#pragma once
// The parameters of a stage, laid out in one flat buffer (and the gradients in a second one of the same
// layout), so that a data-parallel all-reduce, a norm or an optimizer step is one call over one span.
// Each value is a pure function of (seed, parameter name, global element index): the name carries the
// global layer index, and the index is taken in the unsplit tensor, so that any split into stages and
// tensor-parallel ranks reproduces the whole model's weights exactly.
#include "kernels/random.hpp"
#include "kernels/transformer_config.hpp"
#include "kernels/views.hpp"

#include <cmath>
#include <string>
#include <vector>

namespace pipebench::kernels {

struct ParamInfo {
  enum class Init { normal, ones, zeros };
  // How this rank's slice sits in the unsplit tensor: qkv_columns = columns (q|k|v, head, j) of this
  // rank's heads; columns / rows = the rank's contiguous block of columns / rows.
  enum class Split { none, qkv_columns, columns, rows };
  std::string name;  // e.g. "layers.3.qkv.weight", "embedding.tokens", "head.out.weight"
  int layer = -1;    // global layer index; -1 for the embedding and the head
  std::size_t offset = 0, rows = 1, cols = 0;  // local shape; vectors have rows = 1
  Init init = Init::zeros;
  double stddev = 0;  // for Init::normal (uniform with this standard deviation)
  Split split = Split::none;
  std::size_t size() const { return rows * cols; }
};

// Embedding (first stage), then the layers in order, then the head (last stage).
std::vector<ParamInfo> parameter_table(const TransformerConfig& c);

// Tied embeddings: where a stage's copy of the shared matrix lies in its flat buffer (false where the
// stage holds none, or holds both the embedding and the head: one matrix, nothing to keep equal).
bool tied_range(const TransformerConfig& c, const std::vector<ParamInfo>& table, std::size_t& offset, std::size_t& count);
// The routed experts' elements, the table's last (false where it holds none).
bool routed_expert_range(const std::vector<ParamInfo>& table, std::size_t& offset, std::size_t& count);

template <class S, class E>
void init_parameter(const typename Views<S, E>::Vec& flat, const ParamInfo& p, const TransformerConfig& c) {
  const std::size_t off = p.offset, size = p.size();
  if (p.init != ParamInfo::Init::normal) {
    const S value = p.init == ParamInfo::Init::ones ? S(1) : S(0);
    Kokkos::parallel_for(
        "pipebench::init_constant", Kokkos::RangePolicy<E>(0, size),
        KOKKOS_LAMBDA(std::size_t i) { flat(off + i) = value; });
    return;
  }
  const std::uint64_t key = hash3(c.seed, name_hash(p.name), 0x7061726d);
  const std::size_t rows = p.rows, cols = p.cols, t = static_cast<std::size_t>(c.tp_size),
                    rank = static_cast<std::size_t>(c.tp_rank);
  const ParamInfo::Split split = p.split;
  const double amplitude = p.stddev * std::sqrt(3.0);  // uniform on [-a, a) has std a/sqrt(3)
  Kokkos::parallel_for(
      "pipebench::init_uniform", Kokkos::RangePolicy<E>(0, size), KOKKOS_LAMBDA(std::size_t i) {
        std::size_t r = i / cols, col = i % cols, global_cols = cols;
        if (split == ParamInfo::Split::qkv_columns) {
          const std::size_t part = cols / 3;
          col = (col / part) * part * t + rank * part + col % part;
          global_cols = cols * t;
        } else if (split == ParamInfo::Split::columns) {
          col += rank * cols;
          global_cols = cols * t;
        } else if (split == ParamInfo::Split::rows) {
          r += rank * rows;
        }
        flat(off + i) = static_cast<S>(amplitude * uniform_pm1(hash3(key, r * global_cols + col, 0)));
      });
}

}  // namespace pipebench::kernels
