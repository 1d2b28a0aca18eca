#pragma once
// The schedule IR shared by the generators, the validator, the simulator and the executor.
//
// A schedule is, per pipeline rank, the ordered list of actions that rank executes. Stages are numbered
// globally; `stage_rank` says which rank holds each stage. Text form follows
// torch.distributed.pipelining: `{stage}{kind}{mb}` such as `3F0`, `7I2`, `0W5`, and the overlapped
// forward/backward pair of DualPipe as `(0F7;7B3)`.
#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace pipebench::analysis {

// F forward, B full backward, I backward for inputs, W backward for weights, FB an overlapped pair of a
// forward and a full backward (DualPipe's F&B).
enum class Kind : std::uint8_t { F = 0, B = 1, I = 2, W = 3, FB = 4 };
inline constexpr int kNumKinds = 5;

char kind_letter(Kind k);       // 'F','B','I','W'; '&' for FB
const char* kind_name(Kind k);  // "F","B","I","W","F&B"

struct Action {
  Kind kind = Kind::F;
  int stage = 0;  // FB: the forward's stage
  int mb = 0;     // FB: the forward's micro-batch
  int b_stage = -1;  // FB only: stage of the overlapped full backward
  int b_mb = -1;     // FB only: its micro-batch

  static Action make(Kind k, int stage, int mb) { return Action{k, stage, mb, -1, -1}; }
  static Action overlapped(int f_stage, int f_mb, int b_stage, int b_mb) {
    return Action{Kind::FB, f_stage, f_mb, b_stage, b_mb};
  }
  bool operator==(const Action& o) const {
    return kind == o.kind && stage == o.stage && mb == o.mb && b_stage == o.b_stage && b_mb == o.b_mb;
  }
  bool operator!=(const Action& o) const { return !(*this == o); }
};

std::string to_string(const Action& a);
// Parses the text form; throws UsageError naming the text and the expected form.
Action parse_action(std::string_view text);

struct Schedule {
  std::string name;
  int p = 1;      // pipeline ranks
  int m = 1;      // micro-batches, all pipes together
  int pipes = 1;  // model copies that run through the ranks (2 for DualPipe, else 1)
  // Stage s is held by rank stage_rank[s]. Stages are split into `pipes` equal consecutive chains:
  // stage s feeds s+1 within a chain. Micro-batches are split the same way: micro-batch k runs through
  // chain k / (m / pipes).
  std::vector<int> stage_rank;
  std::vector<std::vector<Action>> actions;  // per rank, in execution order

  int num_stages() const { return static_cast<int>(stage_rank.size()); }
  int stages_per_pipe() const { return num_stages() / pipes; }
  // Chunks of layers per rank: a chunk's work is 1/v of a rank's whole share (docs/design.md "Vocabulary").
  int v() const { return stages_per_pipe() / p; }
  int mbs_per_pipe() const { return m / pipes; }
  int pipe_of_stage(int s) const { return s / stages_per_pipe(); }
  int pipe_of_mb(int mb) const { return mb / mbs_per_pipe(); }
  bool is_first_stage(int s) const { return s % stages_per_pipe() == 0; }
  bool is_last_stage(int s) const { return s % stages_per_pipe() == stages_per_pipe() - 1; }
  // Position of stage s within its chain (0 = first stage of the model copy).
  int depth_of_stage(int s) const { return s % stages_per_pipe(); }
  // Index of stage s among the stages its rank holds, in ascending stage order.
  int chunk_of_stage(int s) const;
  std::vector<int> stages_of_rank(int r) const;
  std::size_t num_actions() const;
};

// The grid text form: one line per rank, actions separated by spaces (`rank 0: 0F0 0F1 ...`).
std::string to_grid(const Schedule& s);
void write_grid(std::ostream& os, const Schedule& s);  // the same text, written as it goes

}  // namespace pipebench::analysis
