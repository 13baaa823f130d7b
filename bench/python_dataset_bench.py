"""The Python layer's cost: records/s rebuilt through uihstore.torch's
SnapshotDataset and a DataLoader (0, 1 and 2 workers) against the C
materializer driven directly on the same log, side by side in one run.

    PYTHONPATH=python python3 bench/python_dataset_bench.py [--users 2000] [--days 8] [--per-user 16]
        [--length 256] [--batch 256] [--passes 3] [--dir DIR]

Data: `uih gen` histories; all days but the last loaded, the last appended
to the mutable tier; --per-user inference requests per active user of the
last day snapshotted by `uih snapshot` into one log, in time order (so a
user's records are spread over the day); then the last day loaded. Each
way rebuilds every record of the log, --passes times; the best pass is
reported (the page cache is warm for all of them).
"""

import argparse
import os
import shutil
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))

import uihstore  # noqa: E402
from uihstore.torch import SnapshotDataset  # noqa: E402


def uih(*args, **kw):
    exe = os.environ.get("UIH_CLI") or os.path.join(ROOT, "build", "release", "cli", "uih")
    return subprocess.run([exe] + [str(a) for a in args], check=True, capture_output=True, text=True, **kw)


def build(a, work):
    schema = os.path.join(ROOT, "examples", "feed.schema.json")
    hist, day = os.path.join(work, "hist.csv"), os.path.join(work, "day.csv")
    uih("gen", "--schema", schema, "--group", "engagement", "--users", a.users, "--days", a.days, "--seed", 7,
        "--out", hist)
    ts = np.loadtxt(hist, delimiter=",", skiprows=1, usecols=2, dtype=np.int64)
    cut = int(ts.min()) + (a.days - 1) * 86400000  # the last day
    with open(hist) as f, open(os.path.join(work, "old.csv"), "w") as old, open(day, "w") as new:
        header = f.readline()
        old.write(header)
        new.write(header)
        for line in f:
            (new if int(line.split(",", 3)[2]) >= cut else old).write(line)
    st = os.path.join(work, "st")
    uih("init", "--store", st, "--schema", schema, "--shards", 2)
    uih("load", "--store", st, "--through", cut, os.path.join(work, "old.csv"))
    uih("append", "--store", st, day)
    d = np.loadtxt(day, delimiter=",", skiprows=1, usecols=(0, 2), dtype=np.int64)
    rng = np.random.default_rng(1)
    reqs = []
    for u in np.unique(d[:, 0]):
        ts_u = d[d[:, 0] == u, 1]
        for t in rng.choice(ts_u, size=a.per_user):
            reqs.append((int(t) + 1, int(u)))
    reqs.sort()
    with open(os.path.join(work, "req.csv"), "w") as f:
        f.write("user_id,request_ts\n")
        for t, u in reqs:
            f.write("%d,%d\n" % (u, t))
    log = os.path.join(work, "snap.log")
    uih("snapshot", "--store", st, "--group", "engagement:%d" % a.length, "--requests",
        os.path.join(work, "req.csv"), "--log", log, "--quiet")
    uih("load", "--store", st, day)
    return st, log


def c_materializer(st_path, log_path, proj, batch):
    """The C materializer on the log's records, batches submitted ahead."""
    log = uihstore.SnapshotLog(log_path)
    n = len(log)
    with uihstore.Store.open(st_path, read_only=True) as st, st.materializer(proj, threads=1, depth=2) as m:
        t = time.perf_counter()
        starts = list(range(0, n, batch))
        sent, rows = 0, 0
        for k in range(len(starts)):
            while sent < len(starts) and sent <= k + 2:
                s = starts[sent]
                m.submit((log.pointers[s:s + batch], log.lengths[s:s + batch]))
                sent += 1
            rows += int(m.next()["engagement"].lengths.sum())
        return n / (time.perf_counter() - t), rows


def dataset(st_path, log_path, proj, batch, workers):
    from torch.utils.data import DataLoader
    ds = SnapshotDataset(st_path, log_path, proj, batch_size=batch, threads=1, depth=2)
    t = time.perf_counter()
    n = rows = 0
    for b in DataLoader(ds, batch_size=None, num_workers=workers):
        n += b["records"]
        rows += int(b["engagement"]["lengths"].sum())
    return n / (time.perf_counter() - t), rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--users", type=int, default=2000)
    ap.add_argument("--days", type=int, default=8)
    ap.add_argument("--per-user", type=int, default=16)
    ap.add_argument("--length", type=int, default=256)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--dir", default="/tmp/uih-python-bench")
    a = ap.parse_args()
    shutil.rmtree(a.dir, ignore_errors=True)
    os.makedirs(a.dir)
    st, log = build(a, a.dir)
    n = len(uihstore.SnapshotLog(log))
    print("python_dataset_bench: %d records of %d users' last day, spec engagement:%d, batches of %d, "
          "best of %d passes" % (n, a.users, a.length, a.batch, a.passes))
    for layout in ("shared", "jagged"):
        proj = uihstore.Projection({"engagement": a.length}, layout=layout)
        base, rows = max(c_materializer(st, log, proj, a.batch) for _ in range(a.passes))
        print("\n%s layout (%.1f events per record)" % (layout, rows / n))
        print("%-44s %12s %8s" % ("", "records/s", "vs C"))
        print("%-44s %12.0f %7.2fx" % ("C materializer (1 thread, 2 batches ahead)", base, 1.0))
        for workers in (0, 1, 2):
            r, rows2 = max(dataset(st, log, proj, a.batch, workers) for _ in range(a.passes))
            assert rows2 == rows, "the dataset rebuilt %d events, the materializer %d" % (rows2, rows)
            print("%-44s %12.0f %7.2fx" % ("SnapshotDataset, DataLoader num_workers=%d" % workers, r, r / base))


if __name__ == "__main__":
    main()
