"""uihstore.dask on a local cluster of worker processes: one load task per
shard gives, generation for generation and history for history, what one
load in one process gives; logs materialized shard by shard give every
record once, with the sequences one process rebuilds; a failed shard's
error reaches the caller with the engine's message and code."""

import os

import numpy as np
import pytest

import uihstore
import uihstore.dask as ud
from conftest import SCHEMA, uih

distributed = pytest.importorskip("distributed")

SHARDS = 3


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=SHARDS, threads_per_worker=1, processes=True,
                                       dashboard_address=None)
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


@pytest.fixture(scope="module")
def days(tmp_root):
    """Two days of histories for 300 users, and deletions for day 2."""
    d1, d2 = os.path.join(tmp_root, "dk1.csv"), os.path.join(tmp_root, "dk2.csv")
    uih("gen", "--schema", SCHEMA, "--group", "engagement", "--users", 300, "--days", 2, "--seed", 11, "--out", d1)
    with open(d1) as f:
        last = max(int(l.split(",")[2]) for l in list(f)[1:])
    uih("gen", "--schema", SCHEMA, "--group", "engagement", "--users", 300, "--days", 1, "--seed", 12,
        "--start-ts", last + 1, "--out", d2)
    dels = os.path.join(tmp_root, "dk-deletes.csv")
    with open(dels, "w") as f:
        f.write("user_id\n3\n17\n250\n")
    return d1, d2, dels, last


def histories(path, users):
    with uihstore.Store.open(path, read_only=True) as s:
        out = {}
        for u in users:
            ev = s.read(u, "engagement", tier="immutable")
            out[u] = {t: np.array(v) for t, v in ev.columns.items()}
        return out, s.status()


COMPARED = ("events_in", "events", "stripes", "histories", "bytes", "duplicates", "deleted", "expired",
            "events_new", "through", "horizon", "inputs", "input_bytes", "schema_version", "shards",
            "delete_users")


def test_a_load_per_shard_task_is_one_load(client, days, tmp_root):
    d1, d2, dels, last = days
    one, per = os.path.join(tmp_root, "dk-one"), os.path.join(tmp_root, "dk-per")
    for p in (one, per):
        uih("init", "--store", p, "--schema", SCHEMA, "--shards", SHARDS)
    with uihstore.Store.open(one) as s:
        want = [s.load([d1], progress=False),
                s.load([d2], deletes=dels, lookback=2 * 86400000, progress=False),
                s.load([], rebuild_dictionaries=True, progress=False)]
    got = [ud.load(client, per, [d1]), ud.load(client, per, [d2], deletes=dels, lookback=2 * 86400000),
           ud.load(client, per, [], rebuild_dictionaries=True)]
    for w, g in zip(want, got):
        for k in COMPARED:
            assert g[k] == w[k], k
        assert [s["shard"] for s in g["shards_detail"]] == list(range(SHARDS))
        assert all(s["shards"] == 1 for s in g["shards_detail"]), "each task loaded its shard"
    assert got[1]["deleted"] > 0
    assert got[2]["stripes_copied"] == 0 and got[2]["stripes_written"] == got[2]["stripes"] > 0, "a rebuild"
    a, sa = histories(one, range(300))
    b, sb = histories(per, range(300))
    for x, y in zip(sa["shards"], sb["shards"]):
        assert x["current"] == y["current"]
        assert x["generations"] == y["generations"], "the same records: digest, through, counts, bytes"
    for u in range(300):
        assert a[u].keys() == b[u].keys()
        for t in a[u]:
            np.testing.assert_array_equal(a[u][t], b[u][t], err_msg="user %d trait %s" % (u, t))
    # Run again: every shard already has this load.
    again = ud.load(client, per, [], rebuild_dictionaries=True)
    assert again["shards"] == 0 and again["shards_skipped"] == SHARDS
    # A load that is not the last one is no rerun: it makes a generation again.
    redo = ud.load(client, per, [d2], deletes=dels, lookback=2 * 86400000)
    assert redo["shards"] == SHARDS and redo["events_new"] == 0


def test_a_failed_shard_raises_the_engines_error(client, tmp_root):
    p = os.path.join(tmp_root, "dk-fail")
    uih("init", "--store", p, "--schema", SCHEMA, "--shards", SHARDS)
    missing = os.path.join(tmp_root, "no-such-day.csv")
    with pytest.raises(uihstore.UihError) as e:
        ud.load(client, p, [missing])
    assert e.value.code == uihstore.ERR_NOT_FOUND
    assert e.value.message == "input %s: No such file or directory" % missing


def sequences(res, log, idx):
    """Per record index: (flags, {trait: values}) of a Materialized."""
    g = res["engagement"]
    return {int(i): (int(res.flags[k]), {t: v.copy() for t, v in g.sequence(k).items()}) for k, i in enumerate(idx)}


@pytest.mark.parametrize("layout", ["shared", "jagged"])
def test_logs_materialized_by_shard_are_one_materialization(client, world, layout):
    proj = uihstore.Projection({"engagement": (40, ["event_ts", "item_id", "event_type"])}, layout=layout)
    log = uihstore.SnapshotLog(world["log"])
    with uihstore.Store.open(world["store"], read_only=True) as s:
        nshards = s.shards
        want = sequences(s.materialize(list(log), proj), log, range(len(log)))
    parts = ud.materialize(client, world["store"], [world["log"], world["log"]], proj, batch=16)
    assert len(parts) == nshards
    seen = {}
    for shard, batches in enumerate(parts):
        assert batches, "every shard has records in this log"
        for b in batches:
            assert b["log"] == world["log"]
            assert (uihstore.shard_of_many(b["user_id"], nshards) == shard).all(), "a partition is one shard"
            np.testing.assert_array_equal(b["user_id"], log.users[b["record"]])
            grp = b["groups"]["engagement"]
            ends = np.cumsum(grp["lengths"])
            for k, i in enumerate(b["record"]):
                seen[int(i)] = seen.get(int(i), 0) + 1
                flags, seq = want[int(i)]
                assert int(b["flags"][k]) == flags
                lo, hi = ends[k] - grp["lengths"][k], ends[k]
                for t in seq:
                    np.testing.assert_array_equal(grp[t][lo:hi], seq[t], err_msg="record %d trait %s" % (i, t))
    assert seen == {i: 2 for i in range(len(log))}, "every record once per copy of the log"


def test_a_shard_opened_alone_refuses_other_shards_users(world):
    with uihstore.Store.open(world["store"], read_only=True, shard=1) as s:
        assert s.shards == 2 and s.only_shard == 1
        assert [x["shard"] for x in s.status()["shards"]] == [1]
        other = next(u for u in range(100) if s.shard_of(u) == 0)
        mine = next(u for u in range(1, 100) if s.shard_of(u) == 1)  # the generator has no user 0
        with pytest.raises(uihstore.UihError) as e:
            s.read(other, "engagement")
        assert e.value.code == uihstore.ERR_INVALID_ARGUMENT
        assert "user %d is in shard 0, which is not open (opened for shard 1 alone)" % other in e.value.message
        assert len(s.read(mine, "engagement")) > 0
        with pytest.raises(uihstore.UihError) as e:
            s.append(other, {"event_ts": [1], "item_id": [2]}, group="engagement")
        assert e.value.message.endswith("shard 0 is not open (opened for shard 1 alone)"), e.value.message
