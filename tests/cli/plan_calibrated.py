#!/usr/bin/env python3
"""Item 5 of the plan issue: calibrated from a results file holding one transformer run and one
`pipebench comm` sweep, `pipebench plan --evaluate` predicts the measured step time of other 2-rank
transformer runs (other schedules, m, v; with --tp-dp 1F1B on 2x1x1 and 1x1x2 too, and an all_reduce sweep
over the tp group for the tp collectives) within a tolerance:
the target is 15 % on a quiet machine (docs/model.md). Timing-dependent (label perf). Exit 1 when every attempt misses.
With --gemm the file holds a `pipebench gemm` sweep too, and the planner times each product at its
shape's measured rate and the element-wise work at the sweep's bandwidth.
Usage: plan_calibrated.py PIPEBENCH MPIEXEC WORKDIR [--tolerance PCT] [--attempts N] [--gemm] [--tp-dp]"""
import argparse
import json
import os
import shutil
import subprocess
import sys

ap = argparse.ArgumentParser()
ap.add_argument("exe")
ap.add_argument("mpiexec")
ap.add_argument("work")
ap.add_argument("--tolerance", type=float, default=15.0, help="worst error allowed, percent (default 15)")
ap.add_argument("--attempts", type=int, default=2, help="attempts, calibration included (default 2)")
ap.add_argument("--gemm", action="store_true",
                help="calibrate from a `pipebench gemm` sweep too (the products at their shapes' rates)")
ap.add_argument("--tp-dp", action="store_true",
                help="predict 1F1B runs with tensor (2x1x1) and data (1x1x2) parallelism too, m = 4 and 8")
args = ap.parse_args()
exe, mpiexec, work = args.exe, args.mpiexec, args.work
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
model = ["--workload", "transformer", "--layers", "8", "--hidden", "256", "--heads", "8", "--seq", "128"]


def run(args, out):
    subprocess.run([mpiexec, "-n", "2", exe, "run"] + model + args + ["-o", os.path.join(work, out)],
                   check=True, stdout=subprocess.DEVNULL)


def attempt():
    """One calibration file (a transformer run and a sendrecv sweep of pipebench comm), the runs it
    predicts; the worst relative error."""
    for f in ("cal.h5", "other.h5", "other2.h5", "other3.h5"):
        if os.path.exists(os.path.join(work, f)):
            os.remove(os.path.join(work, f))
    run(["--schedule", "1f1b", "-m", "8"], "cal.h5")
    subprocess.run([mpiexec, "-n", "2", exe, "comm", "sendrecv", "-b", "16K", "-e", "1M", "-n", "20", "-w", "5",
                    "--poll-us", "20", "--out", os.path.join(work, "cal.h5"), "--append"], check=True, stdout=subprocess.DEVNULL)
    if args.tp_dp:  # each group's all-reduces about the sizes of its run's (tp: 128 KiB activations, dp: 27.5 MB of
        # gradients in one bucket), at run's poll interval
        for group, mapping, lo, hi in (("tp", "2x1x1", "64K", "1M"), ("dp", "1x1x2", "4M", "32M")):
            subprocess.run([mpiexec, "-n", "2", exe, "comm", "all_reduce", "--group", group, "--mapping", mapping, "-b", lo,
                            "-e", hi, "-n", "10", "-w", "3", "--poll-us", "50", "--out", os.path.join(work, "cal.h5"),
                            "--append"], check=True, stdout=subprocess.DEVNULL)
    if args.gemm:
        subprocess.run([exe, "gemm", "--sizes", "32,64,128,256,512,1024", "--out", os.path.join(work, "cal.h5"), "--append"],
                       check=True, stdout=subprocess.DEVNULL)
    run(["--schedule", "zbv,gpipe,1f1b", "-m", "4,8"], "other.h5")
    run(["--schedule", "interleaved", "-v", "2", "-m", "8"], "other2.h5")
    others = ["other.h5", "other2.h5"]
    if args.tp_dp:
        run(["--mapping", "2x1x1,1x1x2", "--schedule", "1f1b", "-m", "4,8"], "other3.h5")
        others.append("other3.h5")
    worst = 0.0
    for other in others:
        report = subprocess.run([exe, "report", os.path.join(work, other), "--json"], capture_output=True, text=True, check=True)
        for r in json.loads(report.stdout)["runs"]:
            c = r["config"]
            cmd = [exe, "plan", "--calibrate", os.path.join(work, "cal.h5"), "--layers", c["layers"], "--hidden", c["hidden"],
                   "--heads", c["heads"], "--seq", c["seq"], "--vocab", c["vocab"],
                   "--global-batch", str(int(c["m"]) * int(c["micro_batch_size"]) * int(c["d"])),
                   "--mapping", "%sx%sx%s" % (c["t"], c["p"], c["d"]), "--schedule", c["schedule"], "-v", c["v"],
                   "--micro-batch-size", c["micro_batch_size"], "--recompute", c["recompute"], "--evaluate", "--json",
                   "--no-async-tensor-model-parallel-allreduce"]  # pipebench's executor: I's all-reduces not hidden
            if c.get("dp_buckets", "0") == "0":  # run's default: the gradients reduced after the flush
                cmd.append("--no-overlap-grad-reduce")
            p = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)["configurations"][0]
            measured = r["summary"]["step_time"]
            err = p["step_time"] / measured - 1
            worst = max(worst, abs(err))
            print("%s run %d: %sx%sx%s %s v=%s m=%s measured %.1f ms, predicted %.1f ms, error %+.1f %%" %
                  (other, r["id"], c["t"], c["p"], c["d"], c["schedule"], c["v"], c["m"], 1e3 * measured, 1e3 * p["step_time"], 100 * err))
    return worst


# Timing on a shared machine drifts between the calibration run and the others: another attempt is
# made when one misses, and every attempt is printed.
for n in range(1, args.attempts + 1):
    worst = attempt()
    print("attempt %d: worst error %.1f %% (tolerance %.0f %%)" % (n, 100 * worst, args.tolerance))
    if worst <= args.tolerance / 100:
        sys.exit(0)
sys.exit(1)
