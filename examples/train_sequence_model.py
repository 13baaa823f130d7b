"""End to end in a minute: generate histories, load day 1, serve inference
snapshots on day 2 (logging only their records), load day 2, then train a
tiny next-item model from the snapshot log, each batch rebuilt exactly as
inference saw it.

    PYTHONPATH=python python3 examples/train_sequence_model.py [--users 400] [--epochs 5] [--dir DIR]

Needs the built libraries and `uih` (scripts/build), numpy and torch.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

import uihstore  # noqa: E402
from uihstore.torch import SnapshotDataset  # noqa: E402

VOCAB = 4096  # item ids hashed into this many buckets
CONTEXT = 64  # events the model reads


def uih(*args):
    exe = os.environ.get("UIH_CLI") or os.path.join(os.path.dirname(HERE), "build", "release", "cli", "uih")
    subprocess.run([exe] + [str(a) for a in args], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def last_ts(path):
    ts = np.loadtxt(path, delimiter=",", skiprows=1, usecols=2, dtype=np.int64)
    return int(ts.max()), ts


class NextItem(nn.Module):
    """Mean of the context's item embeddings, then a linear layer over the
    item buckets."""

    def __init__(self, dim=32):
        super().__init__()
        self.items = nn.EmbeddingBag(VOCAB, dim, mode="mean")
        self.out = nn.Linear(dim, VOCAB)

    def forward(self, items, offsets):
        return self.out(self.items(items, offsets))


def examples(batch):
    """(context items, context offsets, next item) of a jagged batch: each
    record's sequence minus its newest event predicts that event."""
    g = batch["engagement"]
    lengths = g["lengths"].long()
    keep = lengths >= 2
    ends = torch.cumsum(lengths, 0)
    items = torch.remainder(g["values"]["item_id"], VOCAB)  # int64 bits of the ids
    target = items[(ends - 1)[keep]]
    starts = (ends - lengths)[keep]
    ctx_len = lengths[keep] - 1
    index = torch.cat([torch.arange(s, s + n) for s, n in zip(starts.tolist(), ctx_len.tolist())])
    offsets = torch.cat([torch.zeros(1, dtype=torch.long), torch.cumsum(ctx_len, 0)[:-1]])
    return items[index], offsets, target


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--users", type=int, default=400)
    ap.add_argument("--requests", type=int, default=40, help="inference requests per hour")
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--workers", type=int, default=0, help="DataLoader worker processes")
    ap.add_argument("--dir")
    a = ap.parse_args()
    work = a.dir or tempfile.mkdtemp(prefix="uih-train-")
    shutil.rmtree(os.path.join(work, "st"), ignore_errors=True)
    os.makedirs(work, exist_ok=True)
    schema = os.path.join(HERE, "feed.schema.json")
    t0 = time.time()

    # 1. Generate two days; day 1 loaded, day 2 arriving during inference.
    d1, d2 = os.path.join(work, "d1.csv"), os.path.join(work, "d2.csv")
    uih("gen", "--schema", schema, "--group", "engagement", "--users", a.users, "--days", 6, "--seed", 1, "--out", d1)
    through = last_ts(d1)[0] + 1
    uih("gen", "--schema", schema, "--group", "engagement", "--users", a.users, "--days", 1, "--seed", 2,
        "--start-ts", through, "--out", d2)
    st = uihstore.Store.create(os.path.join(work, "st"), schema, shards=2)
    day1 = st.load([d1], through=through, progress=False)
    print("day 1 loaded: %d events of %d users" % (day1["events"], day1["histories"]))

    # 2. Day 2: events reach the mutable tier; inference requests snapshot.
    users = np.loadtxt(d2, delimiter=",", skiprows=1, usecols=0, dtype=np.uint64)
    end, ts2 = last_ts(d2)
    items = np.loadtxt(d2, delimiter=",", skiprows=1, usecols=3, dtype=np.uint64)
    order = np.argsort(ts2, kind="stable")
    rng = np.random.default_rng(3)
    log_path = os.path.join(work, "snap.log")
    if os.path.exists(log_path):
        os.remove(log_path)
    logged = shown = 0
    seen = []  # what inference returned, to compare with the rebuild
    with uihstore.LogWriter(log_path) as log:
        for chunk in np.array_split(order, 24):  # the day in 24 slices, appended then served
            for u in np.unique(users[chunk]):
                mine = chunk[users[chunk] == u]
                st.append(int(u), {"event_ts": ts2[mine], "item_id": items[mine]}, group="engagement")
            now = int(ts2[chunk].max()) + 1
            for u in rng.choice(np.unique(users[chunk]), size=min(a.requests, len(np.unique(users[chunk]))),
                                replace=False):
                seqs, record = st.snapshot(int(u), now, {"engagement": CONTEXT + 1})
                log.append(record)
                seen.append(seqs["engagement"]["item_id"])
                logged += 1
                shown += len(seqs["engagement"])
    print("day 2: %d inference snapshots logged, %.1f events shown each, %.0f bytes logged each" %
          (logged, shown / max(logged, 1), os.path.getsize(log_path) / max(logged, 1)))
    st.load([d2], progress=False)  # tonight's load: the records still rebuild exactly
    res = st.materialize(list(uihstore.SnapshotLog(log_path)), {"engagement": (CONTEXT + 1, ["item_id"])})
    same = sum(np.array_equal(res["engagement"].sequence(i)["item_id"], seen[i]) for i in range(len(seen)))
    print("after the load: %d of %d sequences rebuilt identical to inference" % (same, len(seen)))
    del res
    st.close()
    if same != len(seen):
        sys.exit("rebuilt sequences differ from what inference saw")

    # 3. Train from the log alone.
    proj = uihstore.Projection({"engagement": (CONTEXT + 1, ["item_id"])}, layout="jagged")
    ds = SnapshotDataset(os.path.join(work, "st"), log_path, proj, batch_size=64)
    model = NextItem()
    opt = torch.optim.Adam(model.parameters(), lr=0.02)
    lossf = nn.CrossEntropyLoss()
    load_s = total_s = 0.0
    epochs = []
    for epoch in range(a.epochs):
        t = time.time()
        it = iter(DataLoader(ds, batch_size=None, num_workers=a.workers))
        losses = []
        while True:
            t1 = time.time()
            try:
                batch = next(it)
            except StopIteration:
                break
            load_s += time.time() - t1
            ctx, offsets, target = examples(batch)
            opt.zero_grad()
            loss = lossf(model(ctx, offsets), target)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        total_s += time.time() - t
        epochs.append(float(np.mean(losses)))
        print("epoch %d: loss %.3f over %d batches" % (epoch + 1, epochs[-1], len(losses)))
    print("data loading: %.0f%% of training time (%.2f of %.2f s)" % (100 * load_s / total_s, load_s, total_s))
    print("done in %.1f s; store %s, log %s" % (time.time() - t0, os.path.join(work, "st"), log_path))
    if not epochs[-1] < epochs[0]:
        sys.exit("the loss did not go down")


if __name__ == "__main__":
    main()
