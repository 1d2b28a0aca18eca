#!/usr/bin/env bash
# One bounded libFuzzer run (docs/fuzzing.md): replays the seed corpus, then fuzzes for SECONDS.
# Usage: run.sh FUZZER SEEDS WORK SECONDS [libFuzzer flags...]
#   WORK/corpus  what the run adds to the seeds (emptied first unless KEEP_CORPUS=1)
#   WORK/        a finding's input: crash-*, leak-*, timeout-*, oom-* (the run then exits non-zero)
# A finding is any crash, sanitizer report, uncaught exception other than pipebench's (contract.hpp),
# more than 1 GiB of memory (one allocation or in all) or one input taking more than 5 s.
set -euo pipefail
fuzzer=$1 seeds=$2 work=$3 seconds=$4
shift 4
[[ ${KEEP_CORPUS:-0} == 1 ]] || rm -rf "$work/corpus"
mkdir -p "$work/corpus"
# Findings are fatal even when the caller's ASAN_OPTIONS say otherwise; leaks are not checked (HDF5
# and MPICH keep global state).
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}halt_on_error=1:print_stacktrace=1"
exec "$fuzzer" -max_total_time="$seconds" -rss_limit_mb=1024 -timeout=5 -print_final_stats=1 \
     -artifact_prefix="$work/" "$@" "$work/corpus" "$seeds"
