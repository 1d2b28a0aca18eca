#include "analysis/memory.hpp"

#include <algorithm>
#include <string>

#include "analysis/error.hpp"

namespace pipebench::analysis {

std::vector<double> peak_activation_bytes(const Schedule& s, const std::vector<StashBytes>& per_stage) {
  if (static_cast<int>(per_stage.size()) != s.num_stages())
    throw Error("peak_activation_bytes: " + std::to_string(per_stage.size()) + " stash sizes for " +
                std::to_string(s.num_stages()) + " stages");
  std::vector<double> peak(s.actions.size(), 0.0);
  for (std::size_t r = 0; r < s.actions.size(); ++r) {
    double held = 0;
    for (const Action& a : s.actions[r]) {
      const StashBytes& f = per_stage[a.stage];
      switch (a.kind) {
        case Kind::F: held += f.forward; break;
        case Kind::B: held -= f.forward; break;
        case Kind::I: held += f.weight - f.forward; break;
        case Kind::W: held -= f.weight; break;
        case Kind::FB:
          held += f.forward;
          peak[r] = std::max(peak[r], held);
          held -= per_stage[a.b_stage].forward;
          break;
      }
      peak[r] = std::max(peak[r], held);
    }
  }
  return peak;
}

}  // namespace pipebench::analysis
