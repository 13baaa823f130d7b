"""The PyTorch dataset: every record exactly once with 0, 1 and 4
DataLoader workers, each worker on its own shard, tensors over the
materializer's buffers, and the sequences direct materialization gives."""

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

import uihstore
from uihstore.torch import SnapshotDataset, tensor, to_kjt, worker_of


@pytest.fixture(scope="module")
def loaded(world):
    from conftest import uih
    uih("load", "--store", world["store"], world["d2"], check=False)  # idempotent: loaded once
    return world


def direct(world, proj):
    log = uihstore.SnapshotLog(world["log"])
    with uihstore.Store.open(world["store"], read_only=True) as st:
        res = st.materialize(list(log), proj)
        g = res["engagement"]
        return {(int(log.users[i]), int(log.request_ts[i]), i): {t: g.sequence(i)[t].copy() for t in g.values}
                for i in range(len(log))}


@pytest.mark.parametrize("workers", [0, 1, 4])
def test_every_record_once_and_each_worker_on_its_shard(loaded, workers):
    world = loaded
    proj = uihstore.Projection({"engagement": (32, ["event_ts", "item_id"])}, layout="jagged")
    want = direct(world, proj)
    # The log twice over, as two files: each record is then expected twice.
    ds = SnapshotDataset(world["store"], [world["log"], world["log"]], proj, batch_size=16, depth=2)
    got = []
    for b in DataLoader(ds, batch_size=None, num_workers=workers):
        g = b["engagement"]
        lengths = g["lengths"].numpy()
        offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        np.testing.assert_array_equal(g["offsets"].numpy(), offsets)
        users = b["user_id"].numpy().view(np.uint64)
        if workers:  # from a worker process: one shared buffer per batch, not a segment per tensor
            leaves = [b["user_id"], b["request_ts"], b["flags"], g["lengths"], g["offsets"]] + list(g["values"].values())
            assert len({x.storage().untyped().data_ptr() for x in leaves}) == 1 and b["user_id"].is_shared()
        if workers >= 2:
            shards = uihstore.shard_of_many(users, 2)
            assert (shards == b["worker"] % 2).all(), "a worker reads one shard"
        for k in range(b["records"]):
            o, n = offsets[k], lengths[k]
            got.append((int(users[k]), int(b["request_ts"][k]),
                        g["values"]["event_ts"][o:o + n].numpy().copy(),
                        g["values"]["item_id"][o:o + n].numpy().view(np.uint64).copy()))
    assert len(got) == 2 * len(want)
    # Each logged record's sequence exactly twice (once per copy of the log).
    remaining = {}
    for (u, t, i), seq in want.items():
        remaining.setdefault((u, t), []).extend([seq, seq])
    for u, t, ts, items in got:
        cands = remaining[(u, t)]
        for j, seq in enumerate(cands):
            if np.array_equal(seq["event_ts"], ts) and np.array_equal(seq["item_id"], items):
                del cands[j]
                break
        else:
            raise AssertionError("user %d at %d: a sequence not logged, or given too often" % (u, t))
    assert all(not c for c in remaining.values())


def test_worker_split_is_a_partition_by_shard():
    users = np.arange(10000, dtype=np.uint64) * 7919
    for shards in (1, 2, 3, 8):
        for workers in (1, 2, 3, 4, 8, 12):
            w = worker_of(users, shards, workers)
            assert w.min() >= 0 and w.max() < workers
            s = uihstore.shard_of_many(users, shards)
            if workers <= shards:
                assert (w == s % workers).all()
            else:
                assert (w % shards == s).all(), "a worker's records are of one shard"
                assert len(set(w.tolist())) == workers, "every worker gets records"


def test_tensors_are_the_results_memory(loaded):
    world = loaded
    proj = uihstore.Projection({"engagement": 48}, layout="jagged")
    ds = SnapshotDataset(world["store"], world["log"], proj, batch_size=50)
    b = next(iter(ds))
    v = b["engagement"]["values"]["item_id"]
    assert v.dtype == torch.int64 and b["engagement"]["values"]["watch_ms"].dtype == torch.int32
    base = tensor(np.zeros(3, np.uint64))
    assert base.dtype == torch.int64
    arr = v.numpy()
    assert arr.base is not None  # a view of the result's buffer, not a copy
    kjt = to_kjt(b, "engagement", ["item_id"])
    assert kjt["values"].data_ptr() == v.data_ptr()
    assert int(kjt["lengths"].sum()) == v.shape[0]
    two = to_kjt(b, "engagement", ["item_id", "event_ts"])
    assert two["values"].shape[0] == 2 * v.shape[0] and two["lengths"].shape[0] == 2 * b["records"]


def test_presence_on_request(loaded, tmp_path):
    import shutil
    world = loaded
    st_dir = str(tmp_path / "st")
    shutil.copytree(world["store"], st_dir)
    logp = str(tmp_path / "p.log")
    # Events with absent values in the mutable tier, snapshotted and logged.
    with uihstore.Store.open(st_dir) as st, uihstore.LogWriter(logp) as w:
        ts = world["last"] + np.arange(1, 7, dtype=np.int64) * 1000
        st.append(9, {"event_ts": ts, "item_id": np.arange(6, dtype=np.uint64) + 40,
                      "event_type": [1, None, 2, None, 0, None]}, group="engagement")
        for u in (9, 12, 13):
            w.append(st.snapshot(u, int(ts[-1]) + 1, {"engagement": 48})[1])
    proj = uihstore.Projection({"engagement": (48, ["item_id", "event_type", "liked"])}, layout="jagged")
    log = uihstore.SnapshotLog(logp)
    with uihstore.Store.open(st_dir, read_only=True) as st:
        res = st.materialize(list(log), proj)
        want = {t: p.copy() for t, p in res["engagement"].present.items()}
    assert not want["event_type"].all() and want["item_id"].all(), "absent values to show"
    plain = next(iter(SnapshotDataset(st_dir, logp, proj, batch_size=len(log))))
    assert "present" not in plain["engagement"]
    b = next(iter(SnapshotDataset(st_dir, logp, proj, batch_size=len(log), present=True)))
    for t, p in want.items():
        np.testing.assert_array_equal(b["engagement"]["present"][t].numpy(), p, err_msg=t)


@pytest.mark.parametrize("workers", [0, 2])
def test_mismatch_policies_through_the_dataset(loaded, tmp_path, workers):
    import shutil
    world = loaded
    st_dir = str(tmp_path / "st")
    shutil.copytree(world["store"], st_dir)
    log = uihstore.SnapshotLog(world["log"])
    # A user erased since: every record of theirs is a mismatch, and comes back empty.
    erased = int(log.users[0])
    hit = {(int(log.users[i]), int(log.request_ts[i])) for i in range(len(log)) if log.users[i] == erased}
    (tmp_path / "del.csv").write_text("user_id\n%d\n" % erased)
    with uihstore.Store.open(st_dir, keep=1) as st:
        st.load([], deletes=str(tmp_path / "del.csv"), progress=False)
    for policy in ("skip", "flag"):
        proj = uihstore.Projection({"engagement": (48, ["item_id"])}, on_mismatch=policy, layout="jagged")
        flagged, n = set(), 0
        for b in DataLoader(SnapshotDataset(st_dir, world["log"], proj, batch_size=16), batch_size=None,
                            num_workers=workers):
            users = b["user_id"].numpy().view(np.uint64)
            lengths = b["engagement"]["lengths"].numpy()
            for k in range(b["records"]):
                n += 1
                if int(b["flags"][k]) & uihstore.RECORD_MISMATCH:
                    flagged.add((int(users[k]), int(b["request_ts"][k])))
                    assert int(b["flags"][k]) & uihstore.RECORD_ERASED and lengths[k] == 0, \
                        "an erased user's record comes back empty under %s" % policy
        assert n == len(log), "a mismatched record is still yielded, flagged"
        assert flagged == hit
    proj = uihstore.Projection({"engagement": 48}, on_mismatch="fail")
    with pytest.raises(Exception) as e:  # a worker's UihError comes back as torch re-raises it
        for _ in DataLoader(SnapshotDataset(st_dir, world["log"], proj, batch_size=16), batch_size=None,
                            num_workers=workers):
            pass
    assert "materialize: record" in str(e.value) and "was erased by generation" in str(e.value), str(e.value)
    if workers == 0:
        assert isinstance(e.value, uihstore.UihError) and e.value.code == uihstore.ERR_CORRUPTION
