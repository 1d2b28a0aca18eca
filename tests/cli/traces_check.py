#!/usr/bin/env python3
"""Issue 26: the per-rank traces others' tools read, checked against the schedule that ran.

Runs `pipebench run --trace-kineto P --trace-chakra P` on 4 ranks for each schedule given (synthetic
stages), then for every rank:
  Kineto (HTA): distributedInfo names the rank and world size; the compute kernels are the schedule's
  row of the rank, once per timed step, in order; no two kernels of one stream overlap; every
  communication kernel is ncclDevKernel_* with HTA's NCCL arguments; a ProfilerStep#k per step.
  Chakra (ASTRA-sim): decoded with `protoc --decode` against tests/data/chakra_et_def.proto; the
  metadata names the rank and world size; the compute nodes are the schedule's row per step in id
  order, each ctrl-dependent on the node before it that runs on the rank; each send depends on one
  compute node and each receive feeds one; a send and its receive (src, dst, tag, in order) join a
  producer and a consumer the schedule links: a forward of stage s into a forward of s+1, a backward
  (B or I) of s into a backward of s-1, same micro-batch.
`pipebench report FILE --run 1` writes the same files from the stored run. Exit 77 (skipped) without
protoc, after the Kineto checks.
Usage: traces_check.py PIPEBENCH MPIEXEC WORKDIR SCHEDULE...
"""
import json
import os
import re
import shutil
import subprocess
import sys

RANKS, M, STEPS = 4, 8, 2
PROTO_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data")
PART = re.compile(r"(\d+)([FBIW])(\d+)")


def fail(msg):
    print("traces_check: FAILED: " + msg)
    sys.exit(1)


def parts(name):
    return [(int(s), k, int(mb)) for s, k, mb in PART.findall(name)]


def schedule_rows(exe, schedule):
    out = subprocess.run([exe, "schedule", "--schedule", schedule, "-p", str(RANKS), "-m", str(M), "--format", "csv"],
                         check=True, capture_output=True, text=True).stdout
    return [[a.replace("OVERLAP_F_B", "") for a in line.split(",")] for line in out.strip().splitlines()]


def check_kineto(path, rank, row):
    d = json.load(open(path))
    info = d["distributedInfo"]
    if info["rank"] != rank or info["world_size"] != RANKS:
        fail(f"{path}: distributedInfo {info}")
    kernels = [e for e in d["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "kernel"]
    compute = [e["name"] for e in sorted(kernels, key=lambda e: e["ts"]) if not e["name"].startswith("nccl")]
    if compute != row * STEPS:
        fail(f"{path}: compute kernels {compute} are not the schedule's {row} x {STEPS}")
    by_stream = {}
    for e in kernels:
        if e["args"]["stream"] != e["tid"]:
            fail(f"{path}: stream arg {e['args']['stream']} is not the thread {e['tid']}")
        by_stream.setdefault(e["tid"], []).append((e["ts"], e["ts"] + e["dur"]))
    for s, iv in by_stream.items():
        iv.sort()
        if any(b[0] < a[1] - 1e-3 for a, b in zip(iv, iv[1:])):
            fail(f"{path}: kernels of stream {s} overlap")
    comms = [e for e in kernels if e["name"].startswith("ncclDevKernel_")]
    keys = ["Collective name", "In msg nelems", "Out msg nelems", "dtype", "Group size", "Process Group Name",
            "Process Group Ranks", "Rank"]
    for e in comms:
        if any(k not in e["args"] for k in keys) or rank not in e["args"]["Process Group Ranks"]:
            fail(f"{path}: communication kernel without HTA's arguments: {e}")
    steps = sorted(e["name"] for e in d["traceEvents"] if e.get("name", "").startswith("ProfilerStep#"))
    if steps != [f"ProfilerStep#{k}" for k in range(STEPS)]:
        fail(f"{path}: iterations {steps}")
    return len(comms)


def varint(n):
    out = b""
    while n >= 0x80:
        out += bytes([(n & 0x7F) | 0x80])
        n >>= 7
    return out + bytes([n])


def decode_chakra(path):
    """The file's messages as one PipebenchEtFile (field 1: the metadata, 2: each node), decoded by protoc."""
    data, i, wrapped, first = open(path, "rb").read(), 0, b"", True
    while i < len(data):
        n = shift = 0
        while True:
            c = data[i]
            i += 1
            n |= (c & 0x7F) << shift
            shift += 7
            if c < 0x80:
                break
        wrapped += (b"\x0a" if first else b"\x12") + varint(n) + data[i:i + n]
        i, first = i + n, False
    r = subprocess.run(["protoc", "--proto_path=" + PROTO_DIR, "--decode=ChakraProtoMsg.PipebenchEtFile",
                        "chakra_et_def.proto"], input=wrapped, capture_output=True)
    if r.returncode != 0:
        fail(f"{path}: protoc --decode: {r.stderr.decode()}")
    return parse_text(r.stdout.decode().splitlines())


def parse_text(lines):
    """protoc's text format as nested dicts of lists."""
    root, stack = {}, []
    cur = root
    for line in lines:
        line = line.strip()
        if line.endswith("{"):
            child = {}
            cur.setdefault(line[:-1].strip(), []).append(child)
            stack.append(cur)
            cur = child
        elif line == "}":
            cur = stack.pop()
        elif line:
            k, v = line.split(":", 1)
            v = v.strip()
            cur.setdefault(k, []).append(json.loads(v) if v.startswith('"') else v)
    return root


def attrs(node):
    out = {}
    for a in node.get("attr", []):
        name = a["name"][0]
        vals = [v for k, v in a.items() if k.endswith("_val")]
        out[name] = vals[0][0] if vals else a.get("int64_list", [{}])[0].get("values", [])
    return out


def check_chakra(path, rank, row):
    et = decode_chakra(path)
    meta = attrs(et["metadata"][0])
    if int(meta["rank"]) != rank or int(meta["world_size"]) != RANKS:
        fail(f"{path}: metadata {meta}")
    nodes = sorted(et.get("node", []), key=lambda n: int(n.get("id", ["0"])[0]))
    ids = [int(n.get("id", ["0"])[0]) for n in nodes]
    if ids != list(range(len(nodes))):
        fail(f"{path}: node ids {ids}")
    kind = {i: n["type"][0] for i, n in zip(ids, nodes)}
    compute = [n for n in nodes if n["type"][0] == "COMP_NODE"]
    if [n["name"][0] for n in compute] != row * STEPS:
        fail(f"{path}: compute nodes are not the schedule's row x {STEPS}")
    prev, consumers = None, {}
    for i, n in zip(ids, nodes):
        ctrl = [int(x) for x in n.get("ctrl_deps", [])]
        data = [int(x) for x in n.get("data_deps", [])]
        t = n["type"][0]
        if t in ("COMP_NODE", "COMM_COLL_NODE"):
            if ctrl != ([] if prev is None else [prev]):
                fail(f"{path}: node {i} ctrl_deps {ctrl}, expected the previous compute/collective {prev}")
            prev = i
        if t == "COMP_NODE":
            for d in data:
                if kind.get(d) != "COMM_RECV_NODE" or d in consumers:
                    fail(f"{path}: node {i} data_dep {d} is no unconsumed receive")
                consumers[d] = n["name"][0]
        if t == "COMM_SEND_NODE" and (len(data) != 1 or kind.get(data[0]) != "COMP_NODE"):
            fail(f"{path}: send {i} depends on {data}, not on one compute node")
    names = {i: n["name"][0] for i, n in zip(ids, nodes)}
    sends, recvs = [], []
    for i, n in zip(ids, nodes):
        a = attrs(n)
        key = (int(a.get("comm_src", -1)), int(a.get("comm_dst", -1)), int(a.get("comm_tag", -1)))
        if n["type"][0] == "COMM_SEND_NODE":
            sends.append((key, names[int(n["data_deps"][0])]))
        if n["type"][0] == "COMM_RECV_NODE":
            if i not in consumers:
                fail(f"{path}: receive {i} feeds no compute node")
            recvs.append((key, consumers[i]))
    return sends, recvs


def linked(producer, consumer):
    for s, k, mb in parts(producer):
        for s2, k2, mb2 in parts(consumer):
            if mb == mb2 and ((k == "F" and k2 == "F" and s2 == s + 1) or (k in "BI" and k2 in "BI" and s2 == s - 1)):
                return True
    return False


def main():
    exe, mpiexec, work, schedules = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    have_protoc = shutil.which("protoc") is not None
    for schedule in schedules:
        prefix = os.path.join(work, schedule)
        cmd = [mpiexec, "-n", str(RANKS), exe, "run", "--schedule", schedule, "-m", str(M), "--steps", str(STEPS),
               "--warmup", "1", "--out", prefix + ".h5", "--trace-kineto", prefix, "--trace-chakra", prefix]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            fail(f"{' '.join(cmd)}: exit {r.returncode}\n{r.stdout}{r.stderr}")
        # `report --run 1` writes the same traces from the stored run.
        again = prefix + "-report"
        r = subprocess.run([exe, "report", prefix + ".h5", "--run", "1", "--trace-kineto", again, "--trace-chakra", again],
                           capture_output=True, text=True)
        if r.returncode != 0 or f"# Chakra traces of run 1 written to {again}.<rank>.et ({RANKS} ranks)" not in r.stdout:
            fail(f"report --trace-kineto --trace-chakra: exit {r.returncode}\n{r.stdout}{r.stderr}")
        for k in range(RANKS):
            for ext in ("json", "et"):
                if open(f"{prefix}.{k}.{ext}", "rb").read() != open(f"{again}.{k}.{ext}", "rb").read():
                    fail(f"{again}.{k}.{ext} (from the results file) differs from {prefix}.{k}.{ext} (from the run)")
        rows = schedule_rows(exe, schedule)
        comms = sum(check_kineto(f"{prefix}.{k}.json", k, rows[k]) for k in range(RANKS))
        if not have_protoc:
            continue
        sends, recvs = {}, {}
        for k in range(RANKS):
            s, rv = check_chakra(f"{prefix}.{k}.et", k, rows[k])
            for key, name in s:
                sends.setdefault(key, []).append(name)
            for key, name in rv:
                recvs.setdefault(key, []).append(name)
        if sorted(sends) != sorted(recvs) or any(len(sends[k]) != len(recvs[k]) for k in sends):
            fail(f"{schedule}: sends and receives do not pair up by (src, dst, tag)")
        for key in sends:
            for producer, consumer in zip(sends[key], recvs[key]):
                if not linked(producer, consumer):
                    fail(f"{schedule}: message {key} joins {producer} to {consumer}, which the schedule does not link")
        print(f"traces_check: {schedule}: {comms} communication kernels, {sum(map(len, sends.values()))} messages "
              f"matched to the schedule on {RANKS} ranks")
    if not have_protoc:
        print("traces_check: protoc not found (Debian: protobuf-compiler): the Chakra traces were not decoded")
        sys.exit(77)


if __name__ == "__main__":
    main()
