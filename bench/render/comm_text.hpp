#pragma once
// Text, JSON and CSV of `pipebench comm` results (docs/comm-bench.md): nccl-tests' table for
// collectives and sendrecv, OSU's columns for latency, bw and bibw, the footer lines and the fit; the
// row objects of JSON and their CSV lines; and the listing `pipebench report` prints for the /comm
// groups of a results file.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/render/sink.hpp"
#include "bench/render/table.hpp"
#include "bench/results/comm_results.hpp"

namespace pipebench::bench {

// Where a rank runs, for the header's "# Using devices" lines. device < 0: host memory (MPI backend).
struct RankPlace {
  int rank = 0, group = 0, pid = 0;
  std::string host;
  int device = -1;
  std::string pci_bus, device_name;
};
// nccl-tests' lines, one per rank: "#  Rank  0 Group  0 Pid   1234 on     node01 device  0 [0000:04:00]
// NVIDIA H100 80GB HBM3", or "... device host memory (MPI)" for a rank without a device.
std::string comm_device_lines(const std::vector<RankPlace>& ranks);
// The column header lines (each starting with '#').
std::string comm_table_head(const CommResult& r);
// One line for a size: the out-of-place row, and the in-place row where the operation has one.
std::string comm_row_text(const CommResult& r, const CommBenchRow& out_of_place, const CommBenchRow* in_place);
// Every row of r, paired by size.
std::string comm_rows_text(const CommResult& r);
// The CSV columns of r's rows: the keys of their JSON objects, each with its unit apart ("time_us" is
// "time (us)").
Table comm_columns(const CommResult& r);
// One size for the sink: its text row (comm_row_text), its JSON object(s) (out of place, then in place
// where the operation has that form), each with op, group, groups, group_size, backend, dtype and
// redop, and a CSV line per object with the objects' values (null: an empty cell).
Record comm_record(const CommResult& r, const CommBenchRow& out_of_place, const CommBenchRow* in_place);
// "# Out of bounds values : 0 OK", "# Avg bus bandwidth    : 1.23" (nccl-tests' tests: the collectives and
// sendrecv; not OSU's latency, bw and bibw).
std::string comm_summary(const CommResult& r);
// "# fit all_reduce over tp: t(bytes) = 12.3 us + bytes / 4.56 GB/s (worst relative error 7.8 % over 10 sizes)"
std::string comm_fit_line(const CommResult& r);
// comm_summary, then the fit line.
std::string comm_footer(const CommResult& r);
// `pipebench report FILE --json`'s "comm" list (docs/report.md): per /comm group its id, op, group,
// groups, group_size, one_group, mapping, backend, config, date_utc, the fit and the rows (the fields
// of comm --json's row objects that are the row's own).
nlohmann::ordered_json comm_results_json(const std::vector<StoredComm>& comms);
// What `pipebench report FILE` adds for the file's /comm groups ("" when it has none).
std::string render_comm_listing(const std::vector<StoredComm>& comms);

}  // namespace pipebench::bench
