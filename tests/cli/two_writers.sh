#!/bin/bash
# Issue 8 item 10, fault test "two writers on one file": two `pipebench run` sweeps started together on
# the same new --out, without --append. One must be refused with exit code 2 and one message before it
# measures anything; the other's runs must all be in the file, intact, and only its own.
# Usage: two_writers.sh MPIEXEC PIPEBENCH WORKDIR
set -u
mpiexec=$1 exe=$2 work=$3
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
sweep=(run --schedule 1f1b,gpipe -m 4,8 --tf 2ms --tb 4ms --tw 2ms --warmup 0 --steps 2 -o shared.h5)
"$mpiexec" -n 1 "$exe" "${sweep[@]}" >a.out 2>a.err &
a=$!
"$mpiexec" -n 1 "$exe" "${sweep[@]}" >b.out 2>b.err &
b=$!
wait $a; rc_a=$?
wait $b; rc_b=$?
echo "exit codes: $rc_a $rc_b"
if [[ "$rc_a $rc_b" == "0 2" ]]; then loser=b; elif [[ "$rc_a $rc_b" == "2 0" ]]; then loser=a; else
  echo "FAIL: expected one sweep to finish (0) and one to be refused (2)"; cat a.out a.err b.out b.err; exit 1
fi
errors=$(grep -c "pipebench: error:" $loser.err)
if [[ $errors != 1 ]] || ! grep -qE "results file 'shared.h5' (already exists|was created by another process)" $loser.err; then
  echo "FAIL: the refused sweep must say why, once"; cat $loser.err; exit 1
fi
if grep -q "^ *[0-9]" $loser.out; then echo "FAIL: the refused sweep measured something"; cat $loser.out; exit 1; fi
listing=$("$exe" report shared.h5) || { echo "FAIL: report"; echo "$listing"; exit 1; }
echo "$listing"
if ! grep -q "shared.h5: 4 complete run(s)$" <<<"$listing"; then echo "FAIL: expected the 4 runs of one sweep"; exit 1; fi
pids=$("$exe" report shared.h5 --json | grep -c '"id"')
for id in 1 2 3 4; do "$exe" report shared.h5 --run $id | grep "writer_pid"; done | sort -u >pids.txt
if [[ $(wc -l <pids.txt) != 1 ]]; then echo "FAIL: runs from more than one writer"; cat pids.txt; exit 1; fi
echo "ok: one writer, one refused ($pids runs listed)"
