#pragma once
// Activation recomputation (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
// Transformer Models"), one definition for `run --workload transformer` (kernels/) and `plan`:
//   none      F keeps every tensor the backward reads;
//   selective attention scores and softmax are recomputed in I from the stored Q and K;
//   full      F keeps each layer's input only and I reruns the layer's forward first.
#include <string>

#include "analysis/error.hpp"
#include "analysis/text.hpp"

namespace pipebench::analysis {

enum class Recompute { none, selective, full };
inline constexpr Recompute kRecomputes[] = {Recompute::none, Recompute::selective, Recompute::full};

inline const char* recompute_name(Recompute r) {
  switch (r) {
    case Recompute::none: return "none";
    case Recompute::selective: return "selective";
    case Recompute::full: return "full";
  }
  return "?";
}

// UsageError naming --recompute and the allowed values.
inline Recompute parse_recompute(const std::string& text) {
  for (const Recompute r : kRecomputes)
    if (text == recompute_name(r)) return r;
  throw UsageError("--recompute " + quoted(text) + " is not allowed: expected one of none, selective, full");
}

}  // namespace pipebench::analysis
