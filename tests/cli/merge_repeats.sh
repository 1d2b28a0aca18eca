#!/bin/bash
# `pipebench merge --as-repeats` (issue 27, the rehearsal's interleaved rounds): the runs of one
# configuration in several files, each written by its own `run` job of one repeat, become one run whose
# repeats they are, stored as `run --repeats` stores its own: every repeat's steps, numbered in input
# order, `repeats` and `scoring` set, the step time the median of the repeats' medians; a configuration
# in one input only is a run of 1 repeat; compare then takes the repeats as its samples; a run that
# holds repeats already is refused with one line, exit 2, nothing written.
# Usage: merge_repeats.sh PIPEBENCH MPIEXEC WORKDIR
set -u
B=$1 MPIEXEC=$2 WORK=$3
fail() { echo "FAIL (merge --as-repeats): $*"; exit 1; }
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK" || exit 1
S=(--schedule 1f1b -m 4 --tf 500us --tb 1ms --tw 500us --warmup 0 --steps 3 --job-warmup 0 --timeout 10s)
for m in a b; do
  for k in 1 2 3 4 5; do
    # (b: the first file alone also holds a gpipe run)
    sched=1f1b
    [ $m$k = b1 ] && sched=1f1b,gpipe
    "$MPIEXEC" -n 2 "$B" run "${S[@]}" --schedule $sched -o $m$k.h5 >/dev/null 2>run.txt || fail "run $m$k: $(cat run.txt)"
  done
done
"$B" merge --as-repeats b.h5 b1.h5 b2.h5 b3.h5 b4.h5 b5.h5 >out.txt 2>&1 || fail "merge b: $(cat out.txt)"
grep -q "^# merged 6 run(s) from 5 file(s) into b.h5$" out.txt || fail "summary: $(cat out.txt)"
grep -q "^#   b1.h5 run 1, b2.h5 run 1, b3.h5 run 1, b4.h5 run 1, b5.h5 run 1 -> run 1 (5 repeat(s))$" out.txt || fail "mapping: $(cat out.txt)"
grep -q "^#   b1.h5 run 2 -> run 2 (1 repeat(s))$" out.txt || fail "mapping of gpipe: $(cat out.txt)"
"$B" merge --as-repeats a.h5 a1.h5 a2.h5 a3.h5 a4.h5 a5.h5 >out.txt 2>&1 || fail "merge a: $(cat out.txt)"
"$B" report --json b.h5 --run 1 >m.json && for k in 1 2 3 4 5; do "$B" report --json b$k.h5 --run 1 >b$k.json; done
python3 - m.json b1.json b2.json b3.json b4.json b5.json <<'PY' || fail "b.h5 run 1 is not the five runs as repeats"
import json, statistics, sys
m, *parts = (json.load(open(f)) for f in sys.argv[1:])
times = lambda r, k: [s['step_time'] for s in r['steps'] if s['repeat'] == k]
s = m['summary']
want = statistics.median(statistics.median(times(p, 0)) for p in parts)
ok = s['repeats'] == 5 and s['scoring'] == 'median' and all(times(m, k) == times(p, 0) for k, p in enumerate(parts))
ok = ok and abs(s['step_time'] - want) < 1e-12 and m['metadata']['statistic'] == "median of 5 repeats' medians over timed steps"
sys.exit(0 if ok else 'merged: %s; repeats %s' % (s, [times(m, k) for k in range(5)]))
PY
"$B" compare a.h5 b.h5 --json >c.json || fail "compare"
python3 -c "
import json, sys
m = json.load(open('c.json'))['matches'][0]['step_time']
sys.exit(0 if (m['basis'], m['samples_a'], m['samples_b']) == ('repeats', 5, 5) else 'compare: %s' % m)" || fail "compare's samples"
"$B" merge --as-repeats new.h5 b.h5 >out.txt 2>err.txt; rc=$?
[ $rc -eq 2 ] && [ "$(wc -l <err.txt)" -eq 1 ] && [ ! -s out.txt ] && [ ! -e new.h5 ] &&
  grep -q "^pipebench: error: run 1 of 'b.h5' holds 5 repeats already: --as-repeats takes runs of one repeat each (nothing was written)$" err.txt ||
  fail "a run of 5 repeats: exit $rc, said $(cat err.txt) $(cat out.txt)"
[ -z "$(ls | grep '\.tmp$')" ] || fail "temporary file left: $(ls)"
echo "ok: merge --as-repeats"
