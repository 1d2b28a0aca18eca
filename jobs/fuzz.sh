#!/usr/bin/env bash
# The longer fuzz run (docs/fuzzing.md). Usage: jobs/fuzz.sh TARGET SECONDS [libFuzzer flags...]
# TARGET is csv, schedule_text, flags, config or results (tests/fuzz/fuzz_TARGET.cpp). Builds it in the debug-asan
# preset (clang, ASan, UBSan; jobs/setup.sh debug-asan installs what that needs), then fuzzes from the seed
# corpus plus what earlier long runs kept in build/debug-asan/fuzz/TARGET/corpus. It keeps going after a
# finding, so that one defect does not hide the next; each finding's input is saved as
# build/debug-asan/fuzz/TARGET/{crash,timeout,oom}-*, and the exit code is 1 when libFuzzer counted any.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ $# -lt 2 ]]; then
  echo "usage: jobs/fuzz.sh TARGET SECONDS [libFuzzer flags...]; TARGET: $(cd tests/fuzz && ls fuzz_*.cpp | sed 's/fuzz_//; s/\.cpp//' | xargs)" >&2
  exit 2
fi
target=$1 seconds=$2
shift 2
[[ -f tests/fuzz/fuzz_$target.cpp ]] || { echo "pipebench: error: no fuzz target '$target' in tests/fuzz" >&2; exit 2; }
cmake --preset debug-asan >/dev/null
cmake --build --preset debug-asan -j "$(nproc)" --target "fuzz_$target"
work=build/debug-asan/fuzz/$target
mkdir -p "$work"
# -fork=1: one child process at a time fuzzes; a crash, timeout or OOM is saved and the next child goes on.
KEEP_CORPUS=1 tests/fuzz/run.sh "build/debug-asan/tests/fuzz/fuzz_$target" "tests/fuzz/corpus/$target" "$work" "$seconds" \
  -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 "$@" 2>&1 | tee "$work/last.log" || true
# The findings are libFuzzer's own count, not the files: the results reader's child process, whose
# faults the reader contains, leaves a crash-* file too when ASan stops it.
counts=$(grep -o 'oom/timeout/crash: [0-9]*/[0-9]*/[0-9]*' "$work/last.log" | tail -n 1 | cut -d" " -f2 || true)
# A job cut short by the end of the run reports its finding only in its exit code.
last_exit=$(grep -o 'INFO: exiting: [0-9]*' "$work/last.log" | tail -n 1 | cut -d" " -f3 || true)
echo "# fuzz $target: oom/timeout/crash ${counts:-?}, last job's exit ${last_exit:-?}; inputs in $work" \
     "(run one: build/debug-asan/tests/fuzz/fuzz_$target FILE)"
[[ $counts == 0/0/0 && $last_exit == 0 ]]
