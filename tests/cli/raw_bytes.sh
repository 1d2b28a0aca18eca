#!/bin/bash
# Issue 27: user text with newlines, ESC, CR and bytes that are not UTF-8 never reaches the terminal raw:
# every case below is refused with exit 2 and one line whose bytes are printable (one_line,
# analysis/text.hpp): no control byte but the final newline, valid UTF-8.
# Usage: raw_bytes.sh PIPEBENCH MPIEXEC WORKDIR
set -u
B=$1 MPIEXEC=$2 WORK=$3
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK" || exit 1
BAD=$'x\e[31m\r\ny\xff'
n=0
check() {  # check DESCRIPTION COMMAND...
  local d=$1; shift
  "$@" >out.txt 2>err.txt; local rc=$?
  [ $rc -eq 2 ] || { echo "FAIL: $d: exit $rc: $(cat -v err.txt)"; exit 1; }
  [ "$(wc -l <err.txt)" -eq 1 ] || { echo "FAIL: $d: not one line: $(cat -v err.txt)"; exit 1; }
  python3 - err.txt <<'EOF' || { echo "FAIL: $d: raw bytes on the terminal: $(cat -v err.txt)"; exit 1; }
import sys
b = open(sys.argv[1], "rb").read()
try:
    b.decode("utf-8")
except UnicodeDecodeError:
    sys.exit(1)
sys.exit(1 if any(c < 0x20 or c == 0x7f for c in b[:-1]) else 0)
EOF
  n=$((n + 1))
}
check "report of a file name with raw bytes" "$B" report "$BAD.h5"
check "comm's operation" "$B" comm "all_reduce$BAD"
check "comm --group" "$B" comm all_reduce --group "tp$BAD"
check "run --timeout without a unit" "$B" run --timeout "5$BAD"
check "run's configuration prefix" "$MPIEXEC" -n 2 "$B" run --schedule "1f1b$BAD" -o never.h5
check "a config file's name" "$B" --config "$BAD.toml" run
echo "ok: $n messages with raw bytes in their user text printed as one escaped line"
