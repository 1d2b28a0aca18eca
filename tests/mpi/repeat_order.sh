#!/bin/bash
# Issue 26: `run --repeats N --repeat-order interleaved|consecutive` (bench/run/repeat_order.hpp).
#   order        the progress lines of a 3-configuration x 3-repeat sweep come exactly round-robin
#                (interleaved, the default) or each configuration's repeats together (consecutive);
#                either way the file holds one run per configuration with all 3 repeats' steps
#   resume_last  SIGUSR1 before the last round's second configuration: the first is written, the
#                other two are missing with their 4 measured repeats dropped (exit 75); --append
#                --resume skips the first and runs exactly the other two, interleaved, 3 repeats each
#   resume_first SIGUSR1 in the first round: nothing written; --resume runs all three
# Usage: repeat_order.sh MPIEXEC PIPEBENCH WORKDIR CASE
set -u
MPIEXEC=$1 B=$2 WORK=$3 CASE=$4
fail() { echo "FAIL ($CASE): $*"; echo "--- output ---"; cat "$WORK"/err*.txt 2>/dev/null; exit 1; }
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK" || exit 1
ARGS=(run --schedule 1f1b -m 2,3,4 --tf 200us --tb 400us --tw 200us --warmup 0 --steps 2 --repeats 3
      --job-warmup 0 --timeout 10s -o r.h5)
# The visits as "m:repeat" from the progress lines "# [i/N] 1f1b ... m=M, repeat R/3".
visits() { sed -n '/skipped (--resume)/!s/^# \[[0-9]*\/[0-9]*\] .* m=\([0-9]*\), repeat \([0-9]\)\/3.*/\1:\2/p' "$1" | tr '\n' ' '; }
# Per run of the file: m, repeats, stored steps and the repeat numbers the steps carry.
runs() {
  for id in 1 2 3 4; do
    "$B" report r.h5 --json --run $id 2>/dev/null || continue
    echo
  done | python3 -c '
import json, sys
dec, text, out = json.JSONDecoder(), sys.stdin.read(), []
i = 0
while text[i:].strip():
    while text[i].isspace(): i += 1
    r, i = dec.raw_decode(text, i)
    steps = r.get("steps", [])
    out.append("m=%s repeats=%s steps=%d reps=%s" % (r["config"]["m"], r["summary"]["repeats"], len(steps),
               "".join(sorted({str(s["repeat"]) for s in steps}))))
print(" ".join(sorted(out)), end=" " if out else "")'
}
ALL="m=2 repeats=3 steps=6 reps=012 m=3 repeats=3 steps=6 reps=012 m=4 repeats=3 steps=6 reps=012 "
case $CASE in
order)
  "$MPIEXEC" -n 2 "$B" "${ARGS[@]}" >out.txt 2>err.txt || fail "interleaved run"
  got=$(visits err.txt)
  [ "$got" = "2:1 3:1 4:1 2:2 3:2 4:2 2:3 3:3 4:3 " ] || fail "interleaved visits: $got"
  grep -q "3 repeats each (scoring median, interleaved)" out.txt || fail "header"
  [ "$(runs)" = "$ALL" ] || fail "interleaved file: $(runs)"
  [ "$("$B" report r.h5 --json --run 1 | python3 -c "import json,sys; print(json.load(sys.stdin)['metadata']['repeat_order'])")" = interleaved ] ||
    fail "metadata repeat_order"
  rm -f r.h5
  "$MPIEXEC" -n 2 "$B" "${ARGS[@]}" --repeat-order consecutive >out.txt 2>err.txt || fail "consecutive run"
  got=$(visits err.txt)
  [ "$got" = "2:1 2:2 2:3 3:1 3:2 3:3 4:1 4:2 4:3 " ] || fail "consecutive visits: $got"
  [ "$(runs)" = "$ALL" ] || fail "consecutive file: $(runs)"
  ;;
resume_last|resume_first)
  if [ "$CASE" = resume_last ]; then FAULT=0:2:usr1:3 KEPT=1 DROPPED=4 AT="configuration 2 of 3, repeat 3 of 3"
  else FAULT=1:3:usr1:1 KEPT=0 DROPPED=2 AT="configuration 3 of 3, repeat 1 of 3"; fi
  PIPEBENCH_TEST_FAULT=$FAULT "$MPIEXEC" -n 2 "$B" "${ARGS[@]}" >out.txt 2>err.txt
  rc=$?
  [ $rc -eq 75 ] || fail "exit code $rc, expected 75"
  grep -qF "pipebench: stopped by SIGUSR1 before $AT: $KEPT configuration(s) written to r.h5 by this sweep, $((3 - KEPT)) missing ($DROPPED measured repeat(s) of them dropped" err.txt ||
    fail "stop line: $(grep stopped err.txt)"
  if [ $KEPT -gt 0 ]; then
    [ "$(runs)" = "m=2 repeats=3 steps=6 reps=012 " ] || fail "file after the stop: $(runs)"
  else
    ! "$B" report r.h5 2>/dev/null | grep -q "[1-9] complete run(s)" || fail "runs written: $("$B" report r.h5 | head -2)"
  fi
  "$MPIEXEC" -n 2 "$B" "${ARGS[@]}" --append --resume >out2.txt 2>err2.txt || fail "resume failed"
  [ "$(grep -c 'already in .*, skipped (--resume)' err2.txt)" -eq $KEPT ] || fail "resume skipped other than $KEPT"
  got=$(visits err2.txt)
  if [ $KEPT -gt 0 ]; then want="3:1 4:1 3:2 4:2 3:3 4:3 "; else want="2:1 3:1 4:1 2:2 3:2 4:2 2:3 3:3 4:3 "; fi
  [ "$got" = "$want" ] || fail "resume visits: '$got', expected '$want'"
  [ "$(runs)" = "$ALL" ] || fail "file after resume: $(runs)"
  ;;
*) fail "unknown case" ;;
esac
echo "repeat_order $CASE: ok"
