#!/usr/bin/env python3
"""Item 5 of the plan issue: calibrated from a results file holding one transformer run and one
`pipebench comm` sweep, `pipebench plan --evaluate` predicts the measured step time of other 2-rank
transformer runs (other schedules, m, v) within 15 %. Timing-dependent (label perf): run it on a quiet machine.
Usage: plan_calibrated.py PIPEBENCH MPIEXEC WORKDIR"""
import json
import os
import shutil
import subprocess
import sys

exe, mpiexec, work = sys.argv[1], sys.argv[2], sys.argv[3]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
model = ["--workload", "transformer", "--layers", "8", "--hidden", "256", "--heads", "8", "--seq", "128"]


def run(args, out):
    subprocess.run([mpiexec, "-n", "2", exe, "run"] + model + args + ["-o", os.path.join(work, out)],
                   check=True, stdout=subprocess.DEVNULL)


def attempt():
    """One calibration file (a transformer run and a sendrecv sweep of pipebench comm), the runs it
    predicts; the worst relative error."""
    for f in ("cal.h5", "other.h5", "other2.h5"):
        if os.path.exists(os.path.join(work, f)):
            os.remove(os.path.join(work, f))
    run(["--schedule", "1f1b", "-m", "8"], "cal.h5")
    subprocess.run([mpiexec, "-n", "2", exe, "comm", "sendrecv", "-b", "16K", "-e", "1M", "-n", "20", "-w", "5",
                    "--poll-us", "20", "--out", os.path.join(work, "cal.h5"), "--append"], check=True, stdout=subprocess.DEVNULL)
    run(["--schedule", "zbv,gpipe,1f1b", "-m", "4,8"], "other.h5")
    run(["--schedule", "interleaved", "-v", "2", "-m", "8"], "other2.h5")
    worst = 0.0
    for other in ("other.h5", "other2.h5"):
        report = subprocess.run([exe, "report", os.path.join(work, other), "--json"], capture_output=True, text=True, check=True)
        for r in json.loads(report.stdout)["runs"]:
            c = r["config"]
            cmd = [exe, "plan", "--calibrate", os.path.join(work, "cal.h5"), "--layers", c["layers"], "--hidden", c["hidden"],
                   "--heads", c["heads"], "--seq", c["seq"], "--vocab", c["vocab"],
                   "--global-batch", str(int(c["m"]) * int(c["micro_batch_size"]) * int(c["d"])),
                   "--mapping", "%sx%sx%s" % (c["t"], c["p"], c["d"]), "--schedule", c["schedule"], "-v", c["v"],
                   "--micro-batch-size", c["micro_batch_size"], "--recompute", c["recompute"], "--evaluate", "--json"]
            p = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)["configurations"][0]
            measured = r["summary"]["step_time"]
            err = p["step_time"] / measured - 1
            worst = max(worst, abs(err))
            print("%s run %d: %s v=%s m=%s measured %.1f ms, predicted %.1f ms, error %+.1f %%" %
                  (other, r["id"], c["schedule"], c["v"], c["m"], 1e3 * measured, 1e3 * p["step_time"], 100 * err))
    return worst


# Timing on a shared machine drifts between the calibration run and the others: a second attempt is
# made when the first misses, and every attempt is printed.
for n in (1, 2):
    worst = attempt()
    print("attempt %d: worst error %.1f %%" % (n, 100 * worst))
    if worst <= 0.15:
        sys.exit(0)
sys.exit(1)
