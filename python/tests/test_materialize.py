"""Reconstruction from Python: what `uih materialize` prints, in both
layouts and every projection, from the C result's own buffers."""

import gc
import os

import numpy as np
import pytest

import uihstore
from uihstore import _lib as L
from conftest import as_events, parse_csv, uih

TRAITS = ["event_ts", "item_id", "event_type", "watch_ms", "liked", "commented", "shared", "item_category"]


def by_record(rows):
    out = {}
    for r in rows:
        out.setdefault(int(r["record"]), []).append(r)
    return out


@pytest.fixture(scope="module")
def rebuilt(world):
    """The CLI's rebuild of every logged record, whole (48 events)."""
    uih("load", "--store", world["store"], world["d2"])  # the day the snapshots' mutable parts were in
    return by_record(parse_csv(uih("materialize", "--store", world["store"], "--log", world["log"],
                                   "--group", "engagement:48").stdout))


@pytest.mark.parametrize("layout", ["shared", "jagged"])
def test_every_record_is_what_uih_materialize_prints(world, rebuilt, layout):
    log = uihstore.SnapshotLog(world["log"])
    with uihstore.Store.open(world["store"], read_only=True) as st:
        res = st.materialize(list(log), uihstore.Projection({"engagement": 48}, layout=layout))
        assert len(res) == len(log) and not res.flags.any()
        g = res["engagement"]
        assert list(g.values) == TRAITS
        for i in range(len(log)):
            want = as_events(rebuilt.get(i, []), TRAITS)
            seq = g.sequence(i)
            o, n = int(g.offsets[i]), int(g.lengths[i])
            for t in TRAITS:
                vals, present = want[t]
                np.testing.assert_array_equal(seq[t], np.array(vals, dtype=seq[t].dtype), err_msg="%d %s" % (i, t))
                np.testing.assert_array_equal(g.present[t][o:o + n].astype(bool), present)
        if layout == "jagged":
            np.testing.assert_array_equal(g.offsets[1:], np.cumsum(g.lengths.astype(np.uint64))[:-1])
            assert g.rows == g.lengths.sum()
        else:
            assert g.rows < g.lengths.sum(), "a user's records share rows"
        assert res.stats["records"] == len(log) and res.stats["mismatches"] == 0


def test_projections_are_slices_of_the_whole(world, rebuilt):
    log = uihstore.SnapshotLog(world["log"])
    recs = list(log)
    with uihstore.Store.open(world["store"], read_only=True) as st:
        whole = st.materialize(recs, {"engagement": 48})["engagement"]
        for length, traits in ((16, ["item_id", "event_ts"]), (1, ["watch_ms"]), (48, ["uih_arrival", "item_id"])):
            part = st.materialize(recs, uihstore.Projection.parse(["engagement:%d" % length], ",".join(traits),
                                                                  layout="jagged"))["engagement"]
            assert list(part.values) == traits
            for i in range(len(recs)):
                n = int(whole.lengths[i])
                assert int(part.lengths[i]) == min(n, length)
                for t in traits:
                    if t == "uih_arrival":
                        continue
                    np.testing.assert_array_equal(part.sequence(i)[t], whole.sequence(i)[t][n - min(n, length):])


def test_batches_in_any_order_and_the_materializer_agree(world):
    log = uihstore.SnapshotLog(world["log"])
    recs = list(log)
    rng = np.random.default_rng(3)
    with uihstore.Store.open(world["store"], read_only=True) as st:
        proj = uihstore.Projection({"engagement": (32, ["event_ts", "item_id"])})
        whole = st.materialize(recs, proj)["engagement"]
        order = rng.permutation(len(recs))
        with st.materializer(proj, threads=2) as m:
            chunks = np.array_split(order, 7)
            for c in chunks:
                m.submit([recs[i] for i in c])
            # From the log's own arrays too: pointers into its bytes.
            m.submit((log.pointers[order[:9]], log.lengths[order[:9]]))
            results = [m.next() for _ in range(len(chunks) + 1)]
            with pytest.raises(uihstore.UihError) as e:
                m.next()
            assert e.value.code == 7
        for c, res in zip(chunks + [order[:9]], results):
            g = res["engagement"]
            for k, i in enumerate(c):
                for t in ("event_ts", "item_id"):
                    np.testing.assert_array_equal(g.sequence(k)[t], whole.sequence(int(i))[t])


def test_arrays_are_the_results_buffers(world):
    log = uihstore.SnapshotLog(world["log"])
    with uihstore.Store.open(world["store"], read_only=True) as st:
        res = st.materialize(list(log), {"engagement": 48})
        handle = res._handle
        mg = L.uih_materialized_group(handle, 0).contents
        item = next(c for c in mg.columns[:mg.ncolumns] if c.trait == 2)
        arr = res["engagement"].values["item_id"]
        assert arr.__array_interface__["data"][0] == item.values
        assert arr.base.owner is res._owner
        assert res["engagement"].offsets.__array_interface__["data"][0] == mg.offsets
        assert res.flags.__array_interface__["data"][0] == L.uih_materialized_flags(handle)
        # The arrays outlive every other reference to the result.
        keep = arr.copy()
        del res, mg, item
        gc.collect()
        np.testing.assert_array_equal(arr, keep)
        import torch
        t = torch.from_numpy(arr.view(np.int64))
        assert t.data_ptr() == arr.__array_interface__["data"][0]


def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif("libasan" in os.environ.get("LD_PRELOAD", ""),
                    reason="ASan's quarantine keeps freed memory resident; the uninstrumented run measures RSS")
def test_no_memory_growth_over_many_batches(world):
    log = uihstore.SnapshotLog(world["log"])
    with uihstore.Store.open(world["store"], read_only=True) as st:
        proj = uihstore.Projection({"engagement": 48})
        for _ in range(50):  # warm up: allocator pools, RocksDB caches
            st.materialize((log.pointers, log.lengths), proj)
        gc.collect()
        before = rss()
        total = 0
        for _ in range(400):
            res = st.materialize((log.pointers, log.lengths), proj)
            total += int(res["engagement"].values["item_id"].sum() % 7)
            del res
        gc.collect()
        grown = rss() - before
        # 400 batches of ~120 records x 48 events x 9 traits: ~150 MB made
        # and freed; a leak of one batch each would show as tens of MB.
        assert grown < 8 << 20, "RSS grew %d bytes over 400 batches" % grown


def test_mismatches_follow_the_policy(world, tmp_path):
    import shutil
    st_dir = str(tmp_path / "st")
    shutil.copytree(world["store"], st_dir)
    log = uihstore.SnapshotLog(world["log"])
    # A user whose records name immutable events: erased, they cannot verify.
    erased = next(int(log.users[i]) for i in range(len(log))
                  if uihstore.decode_record(log.record(i))["groups"][0]["length"] > 0)
    dels = tmp_path / "del.csv"
    dels.write_text("user_id\n%d\n" % erased)
    hit = [i for i in range(len(log))
           if log.users[i] == erased and uihstore.decode_record(log.record(i))["groups"][0]["length"] > 0]
    assert len(hit) > 0
    with uihstore.Store.open(st_dir, keep=1) as st:
        st.load([], deletes=str(dels), progress=False)
        recs = list(log)
        with pytest.raises(uihstore.UihError) as e:
            st.materialize(recs, uihstore.Projection({"engagement": 48}, on_mismatch="fail"))
        assert e.value.code == 4 and "record %d" % hit[0] in e.value.message
        for policy in ("skip", "flag"):
            res = st.materialize(recs, uihstore.Projection({"engagement": 48}, on_mismatch=policy))
            assert res.mismatched.tolist() == hit
            assert (res.flags[hit] & uihstore.RECORD_MISMATCH).all()
            assert all("erased" in res.why(i) for i in hit), res.why(hit[0])
            assert all(res.why(i) == "" for i in range(len(recs)) if i not in hit)
            assert res.stats["mismatches"] == len(hit)
            if policy == "skip":
                assert (res["engagement"].lengths[hit] == 0).all()
