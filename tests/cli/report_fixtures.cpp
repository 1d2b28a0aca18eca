// Writes the files the `pipebench report` command-line tests read (tests/cli/report.cmake), so no
// binary file is committed: results.h5 (runs 1 and 2 complete, run 3 cut short), schema99.h5 (another
// schema version), plain.h5 (HDF5 but not pipebench), notes.txt (not HDF5), damaged.h5 (runs 1-3, run 2
// damaged: its ranks table is a group) and odd.h5 (metadata that is not UTF-8, written raw as another
// tool would) and notgroup.h5 (a pipebench version attribute, but /runs is a dataset), comm.h5 (a
// transformer run and a /comm group, for merge and plan --calibrate). For
// report --html and compare (tests/cli/report_html.cmake): empty.h5 (no runs), v2.h5 (one run as
// schema version 2 wrote it: no variability), compare_b.h5 (results.h5's runs measured again on
// another CPU: run 1 slower beyond the noise, run 2 within it, and one more configuration) and
// disjoint.h5 (a configuration results.h5 does not hold); comm_a.h5 and comm_b.h5 hold no runs but
// one /comm group each in the agreed layout (an allreduce over 4 ranks at 1 KiB, 64 KiB and 1 MiB; B
// twice as fast at 1 MiB beyond the noise, the same within it at the other sizes).
#include <cstddef>
#include <cstdio>
#include <vector>
#include <filesystem>
#include <fstream>
#include <string>

#include "bench/results/h5.hpp"
#include "bench/results/store.hpp"
#include "bench/sample_run.hpp"

namespace {

// One row of /comm/<id>/rows as `pipebench comm` writes it (docs/results-schema.md).
struct CommRowFile {
  std::int64_t bytes, count;
  std::int32_t in_place;
  double time_us, time_us_min, time_us_max, algbw_GBps, busbw_GBps;
  std::int64_t wrong;
  double latency_us, bandwidth_MBps;
};

// Five timed steps (schema version 4), so that compare's bootstrap has enough samples.
void set_steps(pipebench::bench::RunResult& r, std::vector<double> times) {
  r.steps.clear();
  const double bubbles[5] = {0.24, 0.245, 0.25, 0.255, 0.26};
  for (int i = 0; i < static_cast<int>(times.size()); ++i) r.steps.push_back({0, i, times[i], times[i] * 0.9, bubbles[i % 5]});
  r.summary.scoring = "median";
}

void write_comm(const std::string& path, double speedup) {
  namespace b = pipebench::bench;
  b::prepare_results_file(path, false);
  b::h5::Id f = b::h5::open_file(path, true);
  b::h5::Id comm = b::h5::create_group(f.get(), "comm");
  b::h5::Id g = b::h5::create_group(comm.get(), "000001");
  b::h5::write_attr(g.get(), "op", std::string("all_reduce"));
  b::h5::write_attr(g.get(), "group", std::string("world"));
  b::h5::write_attr(g.get(), "groups", std::int64_t{1});
  b::h5::write_attr(g.get(), "group_size", std::int64_t{4});
  b::h5::write_attr(g.get(), "backend", std::string("mpi"));
  b::h5::write_attr(g.get(), "mapping", std::string("1x4x1"));
  b::h5::write_attr(g.get(), "one_group", std::int64_t{0});
  b::h5::Id meta = b::h5::create_group(g.get(), "metadata");
  b::h5::write_attr(meta.get(), "cpu", std::string(speedup > 1 ? "Other CPU (x 64)" : "Caf\xc3\xa9 CPU (x 2)"));
  b::h5::write_attr(meta.get(), "date_utc", std::string("2026-11-30T12:00:00Z"));
  b::h5::Id config = b::h5::create_group(g.get(), "config");
  b::h5::write_attr(config.get(), "dtype", std::string("float"));
  b::h5::write_attr(config.get(), "redop", std::string("sum"));
  std::vector<CommRowFile> rows;
  for (const std::int64_t bytes : {1024LL, 65536LL, 1048576LL}) {
    const double factor = bytes == 1048576 ? speedup : 1.0;
    const double t = (10.0 + static_cast<double>(bytes) / 1000.0) / factor;  // us
    const double algbw = static_cast<double>(bytes) / (t * 1e3);              // GB/s
    rows.push_back({bytes, bytes / 4, 0, t, t * 0.95, t * 1.05, algbw, algbw * 1.5, 0, 0.0, 0.0});
  }
  b::h5::Id type = b::h5::compound_type(sizeof(CommRowFile));
  const auto add = [&](const char* name, std::size_t off, hid_t t) { b::h5::insert_member(type.get(), name, off, t); };
  add("bytes", offsetof(CommRowFile, bytes), H5T_NATIVE_INT64);
  add("count", offsetof(CommRowFile, count), H5T_NATIVE_INT64);
  add("in_place", offsetof(CommRowFile, in_place), H5T_NATIVE_INT32);
  add("time_us", offsetof(CommRowFile, time_us), H5T_NATIVE_DOUBLE);
  add("time_us_min", offsetof(CommRowFile, time_us_min), H5T_NATIVE_DOUBLE);
  add("time_us_max", offsetof(CommRowFile, time_us_max), H5T_NATIVE_DOUBLE);
  add("algbw_GBps", offsetof(CommRowFile, algbw_GBps), H5T_NATIVE_DOUBLE);
  add("busbw_GBps", offsetof(CommRowFile, busbw_GBps), H5T_NATIVE_DOUBLE);
  add("wrong", offsetof(CommRowFile, wrong), H5T_NATIVE_INT64);
  add("latency_us", offsetof(CommRowFile, latency_us), H5T_NATIVE_DOUBLE);
  add("bandwidth_MBps", offsetof(CommRowFile, bandwidth_MBps), H5T_NATIVE_DOUBLE);
  b::h5::write_table(g.get(), "rows", type.get(), rows.data(), rows.size());
  b::h5::Id fit = b::h5::create_group(g.get(), "fit");
  b::h5::write_attr(fit.get(), "alpha_s", 10e-6);
  b::h5::write_attr(fit.get(), "beta_Bps", 1e9);
  b::h5::write_attr(fit.get(), "max_rel_error", 0.02);
  b::h5::write_attr(fit.get(), "points", std::int64_t{3});
  b::h5::write_attr(g.get(), "complete", std::int64_t{1});
  b::h5::close_file(f);
}

}  // namespace

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  namespace b = pipebench::bench;
  if (argc != 2) {
    std::fprintf(stderr, "usage: report_fixtures DIR\n");
    return 2;
  }
  const fs::path dir = argv[1];
  try {
    fs::create_directories(dir);
    for (const char* name : {"results.h5", "schema99.h5", "plain.h5", "notes.txt", "damaged.h5", "odd.h5", "notgroup.h5",
                             "empty.h5", "v2.h5", "compare_b.h5", "disjoint.h5", "comm_a.h5", "comm_b.h5", "comm.h5"}) fs::remove(dir / name);

    const std::string results = (dir / "results.h5").string();
    b::RunResult first = b::testing::sample_run("schedule=1f1b,p=2,m=2");
    set_steps(first, {0.0118, 0.0119, 0.012, 0.0122, 0.0125});
    b::append_run(results, first);
    b::RunResult second = b::testing::sample_run("schedule=zb-h1,p=2,m=2");
    second.config["schedule"] = "zb-h1";
    second.summary.bubble_formula.reset();
    second.summary.step_time_max = 0.0121;  // spread 2.5 %: not flagged
    set_steps(second, {0.0118, 0.0119, 0.012, 0.0120, 0.0121});
    b::append_run(results, second);
    {
      b::h5::Id f = b::h5::open_file(results, true);
      b::h5::Id cut = b::h5::create_group(f.get(), "runs/000003");
      b::h5::write_attr(cut.get(), "key", std::string("cut short"));
    }

    b::h5::Id other = b::h5::create_file((dir / "schema99.h5").string());
    b::h5::write_attr(other.get(), "pipebench_schema_version", std::int64_t{99});
    b::h5::create_group(other.get(), "runs");
    b::h5::close_file(other);

    b::h5::Id plain = b::h5::create_file((dir / "plain.h5").string());
    b::h5::create_group(plain.get(), "data");
    b::h5::close_file(plain);

    std::ofstream(dir / "notes.txt") << "this is not an HDF5 file\n";

    const std::string damaged = (dir / "damaged.h5").string();
    for (int i = 0; i < 3; ++i) b::append_run(damaged, b::testing::sample_run("run " + std::to_string(i + 1)));
    {
      b::h5::Id f = b::h5::open_file(damaged, true);
      b::h5::Id g = b::h5::open_group(f.get(), "runs/000002");
      H5Ldelete(g.get(), "ranks", H5P_DEFAULT);
      b::h5::create_group(g.get(), "ranks");
      b::h5::close_file(f);
    }

    b::h5::Id notgroup = b::h5::create_file((dir / "notgroup.h5").string());
    b::h5::write_attr(notgroup.get(), "pipebench_schema_version", b::kResultsSchemaVersion);
    const std::int32_t one = 1;
    b::h5::write_table(notgroup.get(), "runs", H5T_NATIVE_INT32, &one, 1);
    b::h5::close_file(notgroup);

    const std::string odd = (dir / "odd.h5").string();
    b::append_run(odd, b::testing::sample_run("odd"));
    {
      b::h5::Id f = b::h5::open_file(odd, true);
      b::h5::Id meta = b::h5::open_group(f.get(), "runs/000001/metadata");
      b::h5::write_attr(meta.get(), "env.SLURM_BAD", std::string("a\xff" "b"));
      b::h5::close_file(f);
    }

    b::prepare_results_file((dir / "empty.h5").string(), false);

    const std::string v2 = (dir / "v2.h5").string();
    b::append_run(v2, b::testing::sample_run("schedule=1f1b,p=2,m=2"));
    {
      b::h5::Id f = b::h5::open_file(v2, true);
      H5Adelete(f.get(), "pipebench_schema_version");
      b::h5::write_attr(f.get(), "pipebench_schema_version", std::int64_t{2});
      b::h5::Id g = b::h5::open_group(f.get(), "runs/000001");
      for (const char* a : {"step_time_min", "step_time_max", "step_time_cv", "bubble_min", "bubble_max", "repeats", "scoring"})
        H5Adelete(g.get(), a);
      b::h5::close_file(f);
    }

    const std::string compare_b = (dir / "compare_b.h5").string();
    b::RunResult slow = b::testing::sample_run("schedule=1f1b,p=2,m=2");
    slow.metadata["cpu"] = "Other CPU (x 64)";
    slow.summary.step_time = 0.018;
    slow.summary.step_time_min = 0.0175;
    slow.summary.step_time_max = 0.019;
    set_steps(slow, {0.0175, 0.0178, 0.018, 0.0185, 0.019});
    b::append_run(compare_b, slow);
    b::RunResult same = second;
    same.metadata["cpu"] = "Other CPU (x 64)";
    same.summary.step_time = 0.01212;
    same.summary.step_time_min = 0.0119;
    same.summary.step_time_max = 0.0124;
    set_steps(same, {0.0119, 0.0120, 0.01212, 0.0122, 0.0124});
    b::append_run(compare_b, same);
    b::RunResult more = slow;
    more.config["m"] = "4";
    b::append_run(compare_b, more);

    b::RunResult apart = b::testing::sample_run("schedule=1f1b,p=2,m=16");
    apart.config["m"] = "16";
    b::append_run((dir / "disjoint.h5").string(), apart);

    write_comm((dir / "comm_a.h5").string(), 1.0);
    write_comm((dir / "comm_b.h5").string(), 2.0);
    // comm.h5: comm_a.h5's /comm group and a transformer run with FLOP counts (tests/cli/merge.sh
    // copies it, `plan --calibrate` takes it, tests/cli/comm_flips.py flips its bytes).
    write_comm((dir / "comm.h5").string(), 1.0);
    b::RunResult transformer = b::testing::sample_run("with comm");
    transformer.config["workload"] = "transformer";
    b::append_run((dir / "comm.h5").string(), transformer);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "report_fixtures: %s\n", e.what());
    return 1;
  }
  return 0;
}
