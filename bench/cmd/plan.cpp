// `pipebench plan`: the performance model of analysis/plan/model.hpp as a planner (docs/plan.md) — a search
// over t x p x d = --gpus, v, b, schedule, recompute, sequence parallelism and ZeRO-1 printing the --top K
// configurations by step time, or --evaluate of one configuration; the table, its JSON or its CSV through
// one sink (bench/render/sink.hpp).
#include <chrono>
#include <iostream>
#include <memory>
#include <sstream>
#include <utility>

#include <nlohmann/json.hpp>

#include "analysis/train_cost.hpp"
#include "analysis/catalog.hpp"
#include "analysis/error.hpp"
#include "analysis/limits.hpp"
#include "analysis/plan/model.hpp"
#include "analysis/plan/search.hpp"
#include "analysis/text.hpp"
#include "analysis/transformer/params.hpp"
#include "bench/commands.hpp"
#include "bench/flags.hpp"
#include "bench/cmd/plan_inputs.hpp"
#include "bench/cmd/plan_json.hpp"
#include "bench/cmd/run_flags.hpp"
#include "bench/render/output.hpp"
#include "bench/render/sink.hpp"
#include "bench/render/table.hpp"
#include "topology/grid.hpp"

namespace pipebench::bench {

namespace {

namespace plan = analysis::plan;

struct PlanSettings {
  std::string model;
  int layers = 0, hidden = 0, heads = 0, seq = 0, vocab = 0, ffn = 0, kv_heads = 0;
  int global_batch = 0;
  std::vector<int> micro_batch_sizes;
  int gpus = 0, gpus_per_node = 0;
  bool allow_cross_node_tp = false;
  std::vector<Mapping> mappings;
  int cp = 1, ep = 0;  // ep 0: searched (every power of two dividing E); --search-context-parallel: cp too
  bool search_cp = false;
  analysis::transformer::Moe moe;  // --experts ... (bench/cmd/run_flags.hpp add_moe_flags)
  std::vector<std::string> moe_flags;
  double routing_imbalance = 1;
  std::string pipeline_layout;
  bool tp_overlap = false, no_dp_overlap = false, fp8 = false, ep_overlap = false, no_async_tp = false;
  std::vector<std::string> schedules;
  std::vector<int> vs;
  std::vector<std::string> recomputes;
  bool sp = false, no_sp = false;
  std::vector<int> zero;
  std::string order = topology::default_order();
  std::string machine = "a100-80gb";
  std::string calibrate;
  int top = 10;
  double train_tokens = 0, gpu_hour_price = 0;  // --train-tokens, --gpu-hour-price (analysis/train_cost.hpp)
  bool evaluate = false;
  bool json = false, csv = false;
  std::string out;
  bool force = false;
};

// The model: a preset, or the shape flags (all five required without a preset; with one they override it).
plan::ModelSpec model_of(const PlanSettings& f) {
  plan::ModelSpec m;
  const bool custom = f.layers || f.hidden || f.heads || f.seq || f.vocab || f.ffn || f.kv_heads;
  if (!f.model.empty()) {
    m = plan::model_preset(f.model);
  } else {
    if (!custom) throw UsageError("give --model NAME (docs/model.md lists the presets) or the shape: "
                                  "--layers --hidden --heads --seq --vocab");
    for (auto [v, name] : {std::pair{f.layers, "--layers"}, {f.hidden, "--hidden"}, {f.heads, "--heads"},
                           {f.seq, "--seq"}, {f.vocab, "--vocab"}})
      if (v == 0) throw UsageError(std::string(name) + " is required for a model without --model (or give --model NAME)");
    m.name = "custom";
    m.source = "command line";
  }
  if (f.layers) m.layers = f.layers;
  if (f.hidden) m.hidden = f.hidden;
  if (f.heads) m.heads = f.heads;
  if (f.seq) m.seq = f.seq;
  if (f.vocab) m.vocab = f.vocab;
  if (f.ffn) m.ffn = f.ffn;
  if (f.kv_heads) m.kv_heads = f.kv_heads;
  for (const std::string& flag : f.moe_flags) {  // the MoE flags given override the preset's
    if (flag == "--experts") m.experts = f.moe.experts;
    if (flag == "--top-k") m.top_k = f.moe.top_k;
    if (flag == "--moe-ffn") m.expert_ffn = f.moe.expert_ffn;
    if (flag == "--shared-experts") m.shared_experts = f.moe.shared_experts;
    if (flag == "--moe-every") m.moe_every = f.moe.moe_every;
    if (flag == "--router") m.router = f.moe.router;
    if (flag == "--capacity-factor") throw UsageError("--capacity-factor is not allowed in plan: the planner models dropless routing");
  }
  if ((custom || !f.moe_flags.empty()) && !f.model.empty()) m.name = f.model + " (modified)";
  analysis::transformer::check(m);
  return m;
}

// The problem from the flags: the model, the machine (calibrated where asked), the batch, the nodes and
// the rank order (topology::Grid's, which refuses a bad one with its own message).
plan::Problem problem_of(const PlanSettings& f) {
  plan::Problem pr;
  pr.model = model_of(f);
  pr.machine = load_machine(f.machine);
  if (!f.calibrate.empty()) {
    const Calibration c = read_calibration(f.calibrate);
    pr.machine = calibrated(pr.machine, c);
    pr.value_bytes = c.value_bytes;
  }
  pr.global_batch = f.global_batch;
  pr.gpus_per_node = f.gpus_per_node;
  pr.allow_cross_node_tp = f.allow_cross_node_tp;
  pr.routing_imbalance = f.routing_imbalance;
  pr.rank_order = rank_order(f.order);
  if (f.global_batch < 1) throw UsageError("--global-batch is required: the global batch in sequences");
  if (f.global_batch > analysis::kMaxGlobalBatch)
    throw UsageError("--global-batch " + std::to_string(f.global_batch) + " is not allowed: expected 1 to " +
                     std::to_string(analysis::kMaxGlobalBatch) + " sequences (the planner simulates m = B / (b d) micro-batches per candidate)");
  return pr;
}

// The search space, and the GPU counts the first line names: --gpus, or the sizes of the listed mappings
// ("4096,1024": without --gpus they may differ, as in the global-batch example).
struct Space {
  plan::SearchSpace space;
  std::string gpus_text;
};

Space space_of(const PlanSettings& f, const std::vector<plan::Recompute>& rcs) {
  Space s;
  plan::SearchSpace& space = s.space;
  space.top = f.top;
  for (const Mapping& m : f.mappings) space.mappings.push_back({m.t, m.p, m.d});
  space.schedules = f.schedules;
  space.vs = f.vs;
  space.micro_batch_sizes = f.micro_batch_sizes;
  space.recomputes = rcs;
  if (f.sp) space.sequence_parallel = {true};
  if (f.no_sp) space.sequence_parallel = {false};
  space.zero = f.zero;
  space.gpus = f.gpus;
  space.cp = f.cp;
  if (f.ep > 0) space.eps = {f.ep};
  if (f.search_cp)
    for (int cp = 1; cp <= 32; cp *= 2)
      if (f.gpus % cp == 0) space.cps.push_back(cp);
  if (f.cp < 1 || (f.gpus && f.gpus % f.cp != 0))
    throw UsageError("--context-parallel " + std::to_string(f.cp) + " is not allowed: it must divide --gpus " +
                     std::to_string(f.gpus) + " (t cp p d GPUs)");
  s.gpus_text = std::to_string(f.gpus);
  for (const Mapping& m : f.mappings) {
    const long long n = 1LL * m.t * m.p * m.d * f.cp;
    if (n > topology::Grid::kMaxWorldSize)
      throw UsageError("--mapping " + to_string(m) + " has " + std::to_string(n) + " GPUs: at most " +
                       std::to_string(topology::Grid::kMaxWorldSize) + " (2^24)");
    if (f.gpus && n != f.gpus)
      throw UsageError("--mapping " + to_string(m) + " has " + std::to_string(n) + " GPUs, not --gpus " +
                       std::to_string(f.gpus));
    if (f.gpus) continue;
    if (space.gpus == 0) {
      space.gpus = static_cast<int>(n);
      s.gpus_text = std::to_string(n);
    } else if (("," + s.gpus_text + ",").find("," + std::to_string(n) + ",") == std::string::npos) {
      s.gpus_text += "," + std::to_string(n);
    }
  }
  if (space.gpus == 0) throw UsageError("--gpus N is required (or --mapping TxPxD)");
  return s;
}

// --evaluate's one configuration: one value of each flag the search takes a list of.
plan::Layout evaluated_layout(const PlanSettings& f, const std::vector<plan::Recompute>& rcs) {
  auto one = [](std::size_t n, const char* flag) {
    if (n > 1) throw UsageError(std::string("--evaluate takes one configuration: give one value of ") + flag);
  };
  one(f.mappings.size(), "--mapping");
  if (f.mappings.empty()) throw UsageError("--evaluate needs --mapping TxPxD");
  if (f.schedules.size() != 1) throw UsageError("--evaluate needs one --schedule");
  one(f.vs.size(), "-v");
  if (f.micro_batch_sizes.size() != 1) throw UsageError("--evaluate needs one --micro-batch-size");
  one(rcs.size(), "--recompute");
  one(f.zero.size(), "--zero");
  plan::Layout l;
  l.t = f.mappings[0].t, l.p = f.mappings[0].p, l.d = f.mappings[0].d;
  l.schedule = f.schedules[0];
  l.v = f.vs.empty() ? 0 : f.vs[0];
  l.micro_batch_size = f.micro_batch_sizes[0];
  l.recompute = rcs.empty() ? plan::Recompute::none : rcs[0];
  l.sequence_parallel = f.sp;
  l.zero = f.zero.empty() ? 0 : f.zero[0];
  l.cp = f.cp;
  l.ep = std::max(1, f.ep);
  l.fp8 = f.fp8;
  l.tp_overlap = f.tp_overlap;
  l.async_tp = !f.no_async_tp;
  l.ep_overlap = f.ep_overlap;
  l.dp_overlap = !f.no_dp_overlap;
  if (!f.pipeline_layout.empty()) l.stage_layers = plan::parse_pipeline_layout(f.pipeline_layout);
  return l;
}

// What the command prints: the configurations, fastest first, and what it took to find them.
struct Outcome {
  std::vector<plan::Prediction> shown;
  std::int64_t evaluated = 0, simulated = 0;
  double seconds = 0;
  std::vector<plan::Infeasible> infeasible;
};

Outcome evaluate_one(const plan::Problem& pr, const plan::Layout& l) {
  Outcome o;
  const auto start = std::chrono::steady_clock::now();
  const plan::Refusal r = plan::check_layout(pr, l);
  if (!r.reason.empty()) throw UsageError("--evaluate: the configuration cannot run (" + r.reason + "): " + r.detail);
  o.shown.push_back(plan::evaluate(pr, l));
  o.evaluated = o.simulated = 1;
  o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return o;
}

// The search; UsageError naming every failed constraint with its closest configuration when none fits.
Outcome search_all(const plan::Problem& pr, const Space& s) {
  plan::SearchResult res = plan::search(pr, s.space);
  if (res.top.empty()) {
    std::string why;
    for (const auto& x : res.infeasible)
      why += (why.empty() ? "" : "; ") + x.reason + " (" + std::to_string(x.count) + ", closest: " + x.example + ")";
    throw UsageError("no configuration of " + s.gpus_text + " GPUs can train " + pr.model.name + " on " +
                     pr.machine.name + ": " + (why.empty() ? "the search space is empty" : why));
  }
  Outcome o;
  o.shown = std::move(res.top);
  o.evaluated = res.evaluated;
  o.simulated = res.simulated;
  o.seconds = res.seconds;
  o.infeasible = std::move(res.infeasible);
  return o;
}

// The columns; cp and ep where they vary (--search-context-parallel, an MoE model).
Table plan_table(bool cp, bool ep) {
  std::vector<Column> columns;
  for (const char* name : {"rank", "t", "cp", "ep", "p", "d", "v", "m", "b"})
    if ((cp || std::string(name) != "cp") && (ep || std::string(name) != "ep")) columns.push_back({name, "", true});
  for (const char* name : {"schedule", "recompute", "sp"}) columns.push_back({name, "", false});
  const std::pair<const char*, const char*> numbers[] = {
      {"zero", ""},   {"step", "s"},   {"tokens/s", ""}, {"TFLOP/s", "model/GPU"}, {"MFU", "%"},
      {"memory", "GiB"}, {"bubble", "%"}, {"compute", "s"}, {"tp", "s"}, {"pp", "s"},
      {"dp", "s"},    {"idle", "s"},   {"other", "s"}};
  for (const auto& [name, unit] : numbers) columns.push_back({name, unit, true});
  return Table(columns);
}

// One configuration: the table's cells (the text and CSV) and its JSON object.
Record record_of(int rank, const plan::Prediction& p, bool cp, bool ep) {
  const plan::Layout& l = p.layout;
  const analysis::Breakdown& b = p.breakdown;
  Record r;
  r.cells = {std::to_string(rank), std::to_string(l.t)};
  if (cp) r.cells.push_back(std::to_string(l.cp));
  if (ep) r.cells.push_back(std::to_string(l.ep));
  r.cells.insert(r.cells.end(), {std::to_string(l.p), std::to_string(l.d),
             std::to_string(p.v), std::to_string(p.m), std::to_string(l.micro_batch_size), l.schedule,
             plan::recompute_name(l.recompute), l.sequence_parallel ? "on" : "off", std::to_string(l.zero),
             fixed(p.step_time, 3), fixed(p.tokens_per_second, 0), fixed(p.model_tflops_per_gpu, 1),
             fixed(100 * p.mfu, 1), fixed(p.memory_bytes / plan::kGiB, 1),
             fixed(100 * p.bubble_fraction, 1), fixed(b.compute, 3), fixed(b.tp, 3), fixed(b.pp, 3),
             fixed(b.dp, 3), fixed(b.bubble, 3), fixed(b.other, 3)});
  r.objects = {config_json(p)};
  return r;
}

// The text's lines above the table: the model, the machine and what was evaluated.
std::string head_lines(const PlanSettings& f, const plan::Problem& pr, const std::string& gpus_text, const Outcome& o) {
  const plan::ModelSpec& model = pr.model;
  std::ostringstream os;
  os << "# pipebench plan: " << model.name << " (L=" << model.layers << " h=" << model.hidden << " a=" << model.heads
     << " s=" << model.seq << " V=" << model.vocab << ", "
     << num(double(analysis::transformer::total_params(model)) / 1e9, 3) << "B parameters) on " << gpus_text << " x "
     << pr.machine.name << ", global batch " << pr.global_batch << " sequences\n";
  if (f.cp > 1) os << "# context parallel: cp = " << f.cp << " in every configuration (t cp p d GPUs)\n";
  os << "# machine: " << num(pr.machine.peak_flops / 1e12, 3) << " TFLOP/s peak, "
     << num(pr.machine.memory_bytes / plan::kGiB, 3) << " GiB; rates from " << pr.machine.rates_from << '\n';
  os << "# evaluated " << o.evaluated << " configuration" << (o.evaluated == 1 ? "" : "s") << " in " << num(o.seconds, 3)
     << " s (" << o.simulated << " simulated)";
  if (!f.evaluate) {
    std::string inf;
    for (const auto& x : o.infeasible) inf += (inf.empty() ? "" : ", ") + x.reason + " " + std::to_string(x.count);
    os << "; infeasible: " << (inf.empty() ? "none" : inf);
  }
  os << '\n';
  return os.str();
}

// The text's lines below the table: --evaluate's memory by part, or the search's refusals by reason.
std::string tail_lines(const PlanSettings& f, const plan::Problem& pr, const Outcome& o) {
  std::ostringstream os;
  if (!f.evaluate) {
    for (const auto& x : o.infeasible) os << "# infeasible (" << x.reason << "): " << x.count << ", e.g. " << x.example << '\n';
    return os.str();
  }
  const auto& p = o.shown.front();
  const double gib = plan::kGiB;
  os << "# memory per GPU: weights " << fixed(p.weights_bytes / gib, 2) << " GiB, gradients "
     << fixed(p.gradients_bytes / gib, 2) << ", optimizer " << fixed(p.optimizer_bytes / gib, 2) << ", activations "
     << fixed(p.activation_bytes / gib, 2) << ", reserve " << fixed(pr.machine.memory_reserve_bytes / gib, 2) << "; "
     << (p.fits ? "fits in " : "does NOT fit in ") << fixed(pr.machine.memory_bytes / gib, 1) << " GiB\n";
  os << "# hardware TFLOP/s per GPU (with recomputation): " << fixed(p.hardware_tflops_per_gpu, 1) << '\n';
  return os.str();
}

// The output in the form asked for: the text's table between its lines, the JSON document
// --train-tokens: days, GPU-hours and cost of each shown layout at its predicted tokens per second.
std::string train_lines(const PlanSettings& f, const Outcome& o) {
  if (!(f.train_tokens > 0)) return "";
  std::string s = "# time to train " + num(f.train_tokens) + " tokens at the predicted tokens per second:\n";
  int rank = 0;
  for (const auto& p : o.shown) {
    ++rank;
    if (!(p.tokens_per_second > 0)) continue;
    const int gpus = p.layout.t * p.layout.p * p.layout.d;
    const analysis::TrainCost c = analysis::train_cost(
        p.tokens_per_second, gpus, f.train_tokens, f.gpu_hour_price > 0 ? std::optional<double>(f.gpu_hour_price) : std::nullopt);
    s += "#   " + std::to_string(rank) + ": " + num(c.days, 4) + " days, " + num(c.gpu_hours, 4) + " GPU-hours" +
         (c.cost ? ", cost " + num(*c.cost, 4) : std::string()) + "\n";
  }
  return s;
}

// {evaluated, seconds, configurations: [...]} (docs/plan.md) or the table's CSV.
void write_plan(std::ostream& out, Format format, const PlanSettings& f, const plan::Problem& pr,
                const std::string& gpus_text, const Outcome& o) {
  JsonDocument doc;
  doc.head["evaluated"] = o.evaluated;
  doc.head["seconds"] = o.seconds;
  doc.list_key = "configurations";
  const auto sink = make_sink(format, out, std::cerr, doc);
  sink->legend(head_lines(f, pr, gpus_text, o));
  const bool ep = pr.model.experts > 0;
  sink->begin_table(plan_table(f.search_cp, ep), true);
  int rank = 0;
  for (const auto& p : o.shown) sink->record(record_of(++rank, p, f.search_cp, ep));
  sink->end_table();
  sink->legend(tail_lines(f, pr, o));
  sink->legend(train_lines(f, o));
  sink->finish();
}

void run(const PlanSettings& f) {
  // Everything is checked before any work.
  if (f.search_cp && f.cp > 1) throw UsageError("--search-context-parallel and --context-parallel exclude each other");
  if (!f.evaluate && (!f.pipeline_layout.empty() || f.tp_overlap || f.no_dp_overlap || f.fp8 || f.ep_overlap || f.no_async_tp))
    throw UsageError("--pipeline-model-parallel-layout, --tp-comm-overlap, --ep-comm-overlap, --no-overlap-grad-reduce, "
                     "--no-async-tensor-model-parallel-allreduce and --fp8 go with --evaluate");
  const Format format = output_format(f.json, f.csv);
  if (f.top < 1) throw UsageError("--top 0 is not allowed: need K >= 1");
  const plan::Problem pr = problem_of(f);
  if (f.ep > 1 && pr.model.experts == 0)
    throw UsageError("--expert-parallel " + std::to_string(f.ep) + " is not allowed: the model has no MoE layers (give --experts)");
  if (f.ep > 1) analysis::transformer::check_expert_parallel(pr.model, f.ep, "--expert-parallel");
  if (f.routing_imbalance < 1)
    throw UsageError("--routing-imbalance " + num(f.routing_imbalance) + " is not allowed: expected >= 1 (the busiest rank over the mean)");
  for (const auto& s : f.schedules) analysis::schedule_row(s);  // unknown names fail here
  std::vector<plan::Recompute> rcs;
  for (const auto& r : f.recomputes) rcs.push_back(plan::parse_recompute(r));
  if (f.sp && f.no_sp) throw UsageError("--sequence-parallel and --no-sequence-parallel exclude each other");
  const Space space = space_of(f, rcs);
  if (!f.out.empty()) check_output_path(f.out, "--out", f.force);

  const Outcome o = f.evaluate ? evaluate_one(pr, evaluated_layout(f, rcs)) : search_all(pr, space);
  if (f.out.empty()) {
    write_plan(std::cout, format, f, pr, space.gpus_text, o);
    return;
  }
  write_output(f.out, "--out", [&](std::ostream& os) { write_plan(os, format, f, pr, space.gpus_text, o); }, f.force);
  // The file is the output; only the text form says where it went (JSON and CSV leave stdout empty).
  if (format == Format::text) std::cout << "# wrote " << f.out << '\n';
}

}  // namespace

void add_plan_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("plan", "Predict step time, memory and MFU of 3D-parallel training; search t x p x d, "
                                         "v, b, schedule, recompute, SP, ZeRO for the fastest (docs/plan.md)");
  auto f = std::make_shared<PlanSettings>();
  add(*cmd, Flag{"--model", "Model preset: gpt3-175b, llama3-405b, bloom-176b, mt-nlg-530b, mixtral-8x7b, deepseek-v3-671b, deepseek-v2-236b (docs/model.md)"}, f->model);
  add(*cmd, flag::layers, f->layers);
  add(*cmd, flag::hidden, f->hidden);
  add(*cmd, flag::heads, f->heads);
  add(*cmd, flag::seq, f->seq);
  add(*cmd, flag::vocab, f->vocab);
  add(*cmd, Flag{"--ffn", "MLP inner size (default 4 x hidden)"}, f->ffn);
  add(*cmd, Flag{"--kv-heads", "Key/value heads (grouped-query attention; default: --heads)"}, f->kv_heads);
  add(*cmd, Flag{"--global-batch", "Global batch B in sequences; m = B / (b d) micro-batches per pipeline"}, f->global_batch)
      ->required();
  add(*cmd, flag::micro_batch_size, f->micro_batch_sizes)
      ->description("Sequences per micro-batch b (a comma list is searched; default 1,2,4,8)");
  add(*cmd, Flag{"--gpus", "GPUs N = t p d to plan for"}, f->gpus);
  add_large_count(*cmd, flag::train_tokens, f->train_tokens);
  add(*cmd, flag::gpu_hour_price, f->gpu_hour_price)->type_name("PRICE");
  add(*cmd, Flag{"--gpus-per-node", "GPUs per node (default: the machine's, 8)"}, f->gpus_per_node);
  cmd->add_flag("--allow-cross-node-tp", f->allow_cross_node_tp, "Allow tensor-parallel groups larger than a node");
  add_layout_flags(*cmd, f->mappings, f->order, f->cp, f->ep)
      .mapping->description("Comma list of TxPxD mappings to consider (default: every t p d = N)");
  add_moe_flags(*cmd, f->moe, f->moe_flags, "Mixture of experts (the model's MoE layers)");
  add(*cmd, Flag{"--routing-imbalance", "Busiest expert-parallel rank's routed tokens over the mean (1: balanced)"},
      f->routing_imbalance);
  cmd->add_flag("--search-context-parallel", f->search_cp, "Search cp over the powers of two to 32 dividing --gpus");
  add(*cmd, flag::schedule, f->schedules)->description("Comma list of schedules (default: every one pipebench generates)");
  add(*cmd, flag::chunks, f->vs)->description("Chunks per rank v for schedules that take one (default 2,4)");
  add(*cmd, flag::recompute, f->recomputes)
      ->description("Activation recomputation: a comma list of none, selective, full (default: all three)");
  cmd->add_flag("--sequence-parallel", f->sp, "Sequence parallelism on only (default: searched, on and off)");
  cmd->add_flag("--no-sequence-parallel", f->no_sp, "Sequence parallelism off only");
  add(*cmd, Flag{"--zero", "ZeRO stage: 0, 1 (optimizer state sharded), 2 (and gradients), 3 (and weights), or a list (default 0,1)", 0, 3},
      f->zero);
  add(*cmd, Flag{"--pipeline-model-parallel-layout", "Layers per stage as Megatron-Core writes them, e.g. \"Et*3|t*4|t*3L\" (--evaluate)"},
      f->pipeline_layout);
  cmd->add_flag("--tp-comm-overlap", f->tp_overlap, "Tensor-parallel collectives overlapped with the GEMMs (--evaluate)");
  cmd->add_flag("--ep-comm-overlap", f->ep_overlap, "MoE all-to-alls hidden behind the layer's GEMMs, as DualPipe pairs chunks (--evaluate)");
  cmd->add_flag("--no-overlap-grad-reduce", f->no_dp_overlap, "Gradient reduction after the backward, not overlapped (--evaluate)");
  cmd->add_flag("--no-async-tensor-model-parallel-allreduce", f->no_async_tp,
                "The backward's TP collectives not hidden behind the weight gradients: pipebench's own runs, Megatron-LM "
                "before 2022 (--evaluate)");
  cmd->add_flag("--fp8", f->fp8, "Matrix products at the machine's FP8 peak (--evaluate)");
  add(*cmd, Flag{"--machine", "Machine preset (a100-40gb, a100-80gb, h100-80gb, h800-80gb, h200-141gb, b200-180gb) or a TOML machine file (docs/model.md)"},
      f->machine);
  add(*cmd, Flag{"--calibrate", "Take the rates and link of this results file (a gemm sweep or transformer runs, comm fits)"},
      f->calibrate);
  add(*cmd, Flag{"--top", "Configurations to print, fastest first"}, f->top);
  cmd->add_flag("--evaluate", f->evaluate, "Predict the one configuration given by --mapping, --schedule, ...");
  add(*cmd, flag::json, f->json)->description("Print JSON: {evaluated, seconds, configurations: [...]} (docs/plan.md)");
  add(*cmd, flag::csv, f->csv);
  add(*cmd, flag::out, f->out);
  add(*cmd, flag::force, f->force);
  cmd->callback([f] { run(*f); });
}

}  // namespace pipebench::bench
