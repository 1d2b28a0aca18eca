#!/usr/bin/env python3
"""`pipebench plan --csv` is the text table's cells: its header names each column as "name (unit)" from
the table's two header lines, and each line is the cells of one row of the table (docs/plan.md).
Usage: plan_csv.py PIPEBENCH ARGS..."""
import csv
import io
import subprocess
import sys


def run(args):
    p = subprocess.run(args, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        sys.exit(f"{' '.join(args)}: exit {p.returncode}\n{p.stdout}{p.stderr}")
    return p


def header_columns(names_line, units_line):
    """The columns of the '#' header lines: a unit is the (...) that ends under its name's end."""
    names, units = names_line[1:], units_line[1:]
    columns, end = [], 0
    for word in names.split():
        start = names.index(word, end)
        end = start + len(word)
        unit = ""
        for u_start in range(len(units)):
            if units[u_start] == "(" and ")" in units[u_start:]:
                u_end = units.index(")", u_start) + 1
                # right-aligned numbers: a unit ends where its name ends; text columns: it starts there
                if u_end == end or u_start == start:
                    unit = units[u_start + 1:u_end - 1]
        columns.append(f"{word} ({unit})" if unit else word)
    return columns


def main():
    exe, args = sys.argv[1], sys.argv[2:]
    text = run([exe] + args).stdout.splitlines()
    csv_run = run([exe] + args + ["--csv"])
    header = [line for line in text if line.startswith("#  rank")]
    if len(header) != 1:
        sys.exit("no table header in the text output:\n" + "\n".join(text))
    at = text.index(header[0])
    columns = header_columns(text[at], text[at + 1])
    rows = [line.split() for line in text[at + 2:] if not line.startswith("#")]
    got = list(csv.reader(io.StringIO(csv_run.stdout)))
    if got[0] != columns:
        sys.exit(f"CSV header {got[0]}\n  is not the table's {columns}")
    if got[1:] != rows:
        sys.exit(f"CSV rows {got[1:]}\n  are not the table's {rows}")
    if len(rows) < 2:
        sys.exit(f"expected several rows, got {rows}")
    if csv_run.stderr:
        sys.exit(f"--csv wrote to stderr: {csv_run.stderr}")
    print(f"{len(rows)} rows of {len(columns)} columns agree")


main()
