#!/bin/bash
# `pipebench merge` (issue 12) on the files report_fixtures writes: runs copied whole (the merged run
# reads back equal to its source, metadata included), incomplete runs skipped, duplicates and other
# schema versions refused with one line and exit 2, and the output untouched (absent, or byte for byte
# the same with --append) after every refusal.
# Usage: merge.sh PIPEBENCH FIXTURE_DIR WORKDIR
set -u
B=$1 FIX=$2 WORK=$3
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK" || exit 1
cp "$FIX/results.h5" "$FIX/odd.h5" "$FIX/schema99.h5" "$FIX/damaged.h5" . || fail "fixtures missing"
# A run as JSON without its id, which the merge renumbers.
run_json() { "$B" report "$1" --run "$2" --json | grep -v '^  "id": '; }
no_temp() { [ -z "$(ls | grep '\.tmp$')" ] || fail "temporary file left: $(ls)"; }

"$B" merge out.h5 results.h5 odd.h5 >out.txt 2>&1 || fail "merge: $(cat out.txt)"
grep -q "^# merged 3 run(s) from 2 file(s) into out.h5$" out.txt || fail "summary: $(cat out.txt)"
grep -q "^#   results.h5: runs 1-2 -> 1-2 (incomplete runs 3 skipped)$" out.txt || fail "mapping: $(cat out.txt)"
grep -q "^#   odd.h5: runs 1 -> 3$" out.txt || fail "mapping: $(cat out.txt)"
"$B" report out.h5 | grep -q "^# pipebench results out.h5: 3 complete run(s)$" || fail "not 3 runs"
[ "$(run_json out.h5 1)" = "$(run_json results.h5 1)" ] || fail "run 1 differs from results.h5 run 1"
[ "$(run_json out.h5 2)" = "$(run_json results.h5 2)" ] || fail "run 2 differs from results.h5 run 2"
[ "$(run_json out.h5 3)" = "$(run_json odd.h5 1)" ] || fail "run 3 differs from odd.h5 run 1"
no_temp

# Refusals: exit 2, one line, nothing made or changed.
refused() {  # refused PATTERN merge-args...
  local pattern=$1; shift
  "$B" merge "$@" >out.txt 2>err.txt
  local rc=$?
  [ $rc -eq 2 ] || fail "merge $*: exit $rc, expected 2"
  [ "$(wc -l <err.txt)" -eq 1 ] && grep -Eq "^pipebench: error: .*$pattern" err.txt || fail "merge $*: message $(cat err.txt)"
  [ ! -s out.txt ] || fail "merge $*: printed $(cat out.txt)"
  no_temp
}
refused "is the same run as run 1 of 'results.h5' .*duplicates are refused" new.h5 results.h5 results.h5
[ ! -e new.h5 ] || fail "refused merge made new.h5"
refused "schema version 99" new.h5 results.h5 schema99.h5
[ ! -e new.h5 ] || fail "refused merge made new.h5"
refused "run 2 of 'damaged.h5' is damaged" new.h5 damaged.h5
[ ! -e new.h5 ] || fail "refused merge made new.h5"
sum=$(md5sum <out.h5)
refused "output 'out.h5' already exists; pass --append" out.h5 odd.h5
refused "run 1 of 'odd.h5' is the same run as run 3 of 'out.h5'" --append out.h5 odd.h5
refused "input 'out.h5' is also the output" --append out.h5 out.h5
[ "$(md5sum <out.h5)" = "$sum" ] || fail "a refused merge changed out.h5"

# --append adds after the runs already there.
"$B" merge out2.h5 results.h5 >/dev/null || fail "merge out2"
"$B" merge --append out2.h5 odd.h5 >out.txt 2>&1 || fail "append: $(cat out.txt)"
grep -q "^#   odd.h5: runs 1 -> 3$" out.txt || fail "append mapping: $(cat out.txt)"
[ "$(run_json out2.h5 3)" = "$(run_json out.h5 3)" ] || fail "appended run differs"
# /comm groups are read and appended, renumbered after those already there.
cp "$FIX/comm.h5" .
"$B" merge c.h5 comm.h5 >out.txt 2>&1 || fail "merge comm.h5: $(cat out.txt)"
grep -q "^# merged 1 run(s) and 1 /comm group(s) from 1 file(s) into c.h5$" out.txt || fail "comm summary: $(cat out.txt)"
grep -q "^#   comm.h5: /comm/000001 -> /comm/000001$" out.txt || fail "comm mapping: $(cat out.txt)"
comm_part() { "$B" report --json "$1" | python3 -c "import json,sys; print(json.load(sys.stdin).get('comm'))"; }
[ "$(comm_part c.h5)" = "$(comm_part comm.h5)" ] && [ "$(comm_part c.h5)" != None ] || fail "/comm/000001 not copied whole: $(comm_part c.h5)"
echo "ok: merge"
