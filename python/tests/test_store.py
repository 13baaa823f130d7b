"""Store calls against the C CLI's outputs on the same store."""

import json

import numpy as np
import pytest

import uihstore
from conftest import SCHEMA, as_events, parse_csv, uih

TRAITS = ["event_ts", "item_id", "event_type", "watch_ms", "liked", "commented", "shared", "item_category"]


def check_same(events, rows):
    """An Events equals the CLI's CSV rows of one sequence."""
    want = as_events(rows, TRAITS)
    assert list(events.columns) == TRAITS
    assert len(events) == len(rows)
    for t in TRAITS:
        vals, present = want[t]
        np.testing.assert_array_equal(events.present[t], present, err_msg=t)
        np.testing.assert_array_equal(events.columns[t], np.array(vals, dtype=events.columns[t].dtype), err_msg=t)


def test_status_is_what_uih_status_says(world):
    cli = json.loads(uih("status", "--store", world["store"], "--json").stdout)
    with uihstore.Store.open(world["store"], read_only=True) as st:
        s = st.status()
        assert st.shards == 2 == len(s["shards"])
        assert s["id"] == cli.get("id", s["id"])
        for mine, theirs in zip(s["shards"], cli["shards"]):
            assert mine["current"] == theirs["current"]
            assert mine["chunk_span"] == theirs["chunk_span"] == 3600000
            assert mine["watermark"] == world["through"]
            assert [g["generation"] for g in mine["generations"]] == [g["generation"] for g in theirs["generations"]]
            assert mine["generations"][-1]["through"] == world["through"]
            assert mine["immutable_bytes"] > 0 and mine["mutable_bytes"] >= 0
            assert st.recovered(mine["shard"]) == theirs["recovered"] == ""  # closed cleanly: nothing torn
        assert s["schema"]["version"] == 2
        assert "item_id" in s["schema"]["groups"]["engagement"]["traits"]


@pytest.mark.parametrize("tier", ["all", "immutable", "mutable"])
def test_read_is_what_uih_read_prints(world, tier):
    with uihstore.Store.open(world["store"], read_only=True) as st:
        for user in (0, 3, 17, 59, 1000):
            rows = parse_csv(uih("read", "--store", world["store"], "--user", user, "--group", "engagement",
                                 "--tier", tier).stdout)
            ev = st.read(user, "engagement", tier=tier)
            check_same(ev, rows)
            assert all(int(r["user_id"]) == user for r in rows)
        # A window and a projection: the slice of the whole.
        whole = st.read(3, "engagement", tier=tier)
        if len(whole) > 4:
            lo, hi = int(whole["event_ts"][1]), int(whole["event_ts"][-2])
            part = st.read(3, "engagement", start=lo, end=hi, tier=tier, traits=["item_id", "event_ts"])
            assert list(part.columns) == ["item_id", "event_ts"]
            keep = (whole["event_ts"] >= lo) & (whole["event_ts"] <= hi)
            np.testing.assert_array_equal(part["item_id"], whole["item_id"][keep])


def test_snapshots_are_the_cli_snapshots_record_for_record(world):
    seen = parse_csv(world["seen"])
    log = uihstore.SnapshotLog(world["log"])
    assert len(log) == len(world["requests"])
    with uihstore.Store.open(world["store"], read_only=True) as st:
        for i, (user, ts) in enumerate(world["requests"]):
            seqs, record = st.snapshot(user, ts, {"engagement": 48})
            assert record == log.record(i), "record %d" % i
            check_same(seqs["engagement"], [r for r in seen if r["record"] == str(i)])
            d = uihstore.decode_record(record)
            assert (d["user_id"], d["request_ts"]) == (user, ts) == (int(log.users[i]), int(log.request_ts[i]))
            assert d["store"] == st.id & 0xFFFFFFFF
        # The text form is uih log dump's.
        dump = uih("log", "dump", world["log"]).stdout.splitlines()
        assert len(dump) == len(log)
        assert uihstore.decode_record(log.record(5))["text"] in dump[5]


def test_a_damaged_log_reads_past_the_damage_and_keeps_every_number(world, tmp_path):
    whole = uihstore.SnapshotLog(world["log"])
    assert list(whole.numbers) == list(range(len(whole)))
    data = bytearray(open(world["log"], "rb").read())
    data[int(whole.offsets[5]) + 3] ^= 0x40  # inside record 5's bytes: its check fails
    damaged = tmp_path / "damaged.log"
    damaged.write_bytes(bytes(data))
    with pytest.raises(uihstore.UihError, match="record 5"):
        uihstore.SnapshotLog(str(damaged))
    log = uihstore.SnapshotLog(str(damaged), past_damage=True)
    assert list(log.numbers) == [i for i in range(len(whole)) if i != 5], "record 5 alone is lost, no number moves"
    assert len(log.damage) == 1 and "record 5" in log.damage[0], log.damage
    for i, n in enumerate(log.numbers):
        assert log.record(i) == whole.record(int(n))
        assert log.users[i] == whole.users[int(n)]
    assert log.sealed == ("sealed" in uih("log", "check", world["log"]).stdout and
                          "not sealed" not in uih("log", "check", world["log"]).stdout)


def test_append_then_read_and_retry_changes_nothing(store_copy, world):
    with uihstore.Store.open(store_copy) as st:
        ts = world["last"] + np.arange(1, 6, dtype=np.int64) * 1000
        events = {"event_ts": ts, "item_id": np.array([5, 6, 7, 8, 9], np.uint64),
                  "event_type": [1, None, 2, None, 0], "watch_ms": [10, 20, 30, 40, 50]}
        st.append(7, events, group="engagement")
        st.append(7, events, group="engagement")  # a retry
        got = st.read(7, "engagement", start=int(ts[0]), tier="mutable")
        np.testing.assert_array_equal(got["event_ts"], ts)
        np.testing.assert_array_equal(got["item_id"], [5, 6, 7, 8, 9])
        np.testing.assert_array_equal(got.present["event_type"], [True, False, True, False, True])
        np.testing.assert_array_equal(got["event_type"], [1, 0, 2, 0, 0])
        assert not got.present["liked"].any(), "traits not given are absent"
        # An Events appends as it reads.
        st.append(8, got, group="engagement")
        again = st.read(8, "engagement", start=int(ts[0]), tier="mutable")
        assert again == got
    rows = parse_csv(uih("read", "--store", store_copy, "--user", 7, "--group", "engagement", "--tier", "mutable",
                         "--from", int(ts[0])).stdout)
    check_same(got, rows)


def test_append_refuses_what_the_schema_does_not_have(store_copy, world):
    with uihstore.Store.open(store_copy) as st:
        with pytest.raises(ValueError, match="no active trait 'nope'"):
            st.append(1, {"event_ts": [1], "nope": [2]}, group="engagement")
        with pytest.raises(ValueError, match="timestamp trait 'event_ts'"):
            st.append(1, {"item_id": [2]}, group="engagement")
        with pytest.raises(ValueError, match="2 values, expected 1"):
            st.append(1, {"event_ts": [1], "item_id": [2, 3]}, group="engagement")
        with pytest.raises(uihstore.UihError, match="no group 'nope'"):
            st.append(1, {"event_ts": [1]}, group="nope")


def test_load_reports_what_uih_load_reports(world, tmp_path):
    import shutil
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    shutil.copytree(world["store"], a)
    shutil.copytree(world["store"], b)
    cli = json.loads(uih("load", "--store", a, "--json", world["d2"]).stdout)
    seen = []
    with uihstore.Store.open(b) as st:
        mine = st.load([world["d2"]], progress=seen.append)
        status = st.status()
    for k in ("events_in", "events_new", "duplicates", "events", "stripes", "histories", "bytes", "shards",
              "through", "inputs", "input_bytes"):
        if k in cli:
            assert mine[k] == cli[k], k
    assert mine["events_new"] > 0
    assert {p["phase"] for p in seen} >= {"read", "merge", "publish"}
    assert all(s["current"] == 2 for s in status["shards"])
    with uihstore.Store.open(a, read_only=True) as sa, uihstore.Store.open(b, read_only=True) as sb:
        for user in (0, 11, 42):
            assert sa.read(user, "engagement", tier="immutable") == sb.read(user, "engagement", tier="immutable")


def test_rebuilt_dictionaries_rewrite_every_stripe_and_read_the_same(store_copy, world):
    users = (0, 11, 42, 59)
    with uihstore.Store.open(store_copy) as st:
        before = [st.read(u, "engagement", tier="immutable") for u in users]
        shards = len(st.status()["shards"])
        summary = st.load([], rebuild_dictionaries=True, progress=False)
        assert summary["stripes_copied"] == 0 and summary["events_new"] == 0
        assert summary["stripes_written"] == summary["stripes"] > 0
        assert summary["shards"] == shards
        assert [st.read(u, "engagement", tier="immutable") for u in users] == before
        assert st.load([], rebuild_dictionaries=True, progress=False)["shards_skipped"] == shards, \
            "the same rebuild again is a rerun"


def test_load_with_a_progress_bar_and_bad_input(store_copy, tmp_path, capsys):
    bad = tmp_path / "bad.csv"
    bad.write_text("user_id,group,ts,item_id\n1,engagement,notanumber,5\n")
    with uihstore.Store.open(store_copy) as st:
        with pytest.raises(uihstore.UihError) as e:
            st.load([str(bad)], progress=True)
        assert e.value.code == 6 and e.value.code_name == "parse"
        assert "bad.csv:2: column 'ts': expected a signed 64-bit integer, got 'notanumber'" in e.value.message
        assert all(s["current"] == 1 for s in st.status()["shards"]), "nothing published"


def test_errors_carry_the_engines_code_and_message(tmp_path):
    with pytest.raises(uihstore.UihError) as e:
        uihstore.Store.open(str(tmp_path / "nothing"))
    assert e.value.code == 7 and e.value.code_name == "not found"
    assert "not a uihstore store" in str(e.value)
    cut = tmp_path / "cut.log"
    cut.write_bytes(b"UIHSLOG1\x05abc")
    with pytest.raises(uihstore.UihError, match=r"record 0 at byte 8: the log ends 3 bytes into its 5"):
        uihstore.SnapshotLog(str(cut))
    with pytest.raises(uihstore.UihError, match="checksum"):
        uihstore.decode_record(b"\x02\x00\x00\x00\x00\x01\x02\x03\x04\x05")


def test_string_ids_hash_as_the_cli_and_the_engine_do():
    strings = ["alice", "", "é", "A2SUAM1J3GNN3B", "bob"]
    want = [int(x) for x in uih("hash", *strings).stdout.split()]
    assert list(uihstore.hash_ids(strings)) == want
    assert list(uihstore.hash_ids(np.array(strings))) == want, "a numpy array of str"
    assert list(uihstore.hash_ids([s.encode() for s in strings])) == want, "bytes as they are"
    assert uihstore.hash_id("alice") == want[0] == 5593767425381308080
    assert uihstore.hash_ids([]).dtype == np.uint64 and len(uihstore.hash_ids([])) == 0
    assert list(uihstore.hash_ids([""])) == [0x2D06800538D394C2]


SPELLED = {"name": "reviews", "version": 1, "user_ids": "string", "groups": [{"name": "ratings", "id": 1, "traits": [
    {"name": "ts", "id": 1, "type": "timestamp", "unit": "ms", "input": "rfc3339"},
    {"name": "item_id", "id": 2, "type": "id", "input": "string"},
    {"name": "rating", "id": 3, "type": "uint32"}]}]}


def test_a_store_of_string_ids_is_read_by_its_strings(tmp_path):
    schema = tmp_path / "s.json"
    schema.write_text(json.dumps(SPELLED))
    day = tmp_path / "day.csv"
    day.write_text("user_id,group,ts,item_id,rating\n"
                   "A2SUAM1J3GNN3B,ratings,2024-01-05T10:00:00Z,B00005N7P0,5\n"
                   "A2SUAM1J3GNN3B,ratings,2024-01-05T10:00:00.25+01:00,B00005N7P1,4\n"
                   "alice,ratings,2024-02-29T23:59:59.999Z,\"B00,X\",3\n")
    uih("init", "--store", str(tmp_path / "st"), "--schema", str(schema), "--shards", "2")
    uih("load", "--store", str(tmp_path / "st"), str(day))
    with uihstore.Store.open(str(tmp_path / "st")) as st:
        assert st.user_ids == "string"
        ev = st.read("A2SUAM1J3GNN3B", "ratings")
        assert list(ev.columns["ts"]) == [1704445200250, 1704448800000], "RFC 3339, offsets and fractions, in ms"
        assert list(ev.columns["item_id"]) == list(uihstore.hash_ids(["B00005N7P1", "B00005N7P0"]))
        assert st.shard_of("alice") == st.shard_of(uihstore.hash_id("alice"))
        # An append names items by their strings, absent ones by None; a read by the user's.
        st.append("alice", {"ts": [1709251200000, 1709251200001], "item_id": ["B0NEW", None], "rating": [1, 2]},
                  "ratings")
        ev = st.read("alice", "ratings")
        assert list(ev.columns["item_id"][ev.present["item_id"]]) == list(uihstore.hash_ids(["B00,X", "B0NEW"]))
        assert list(ev.present["item_id"]) == [True, True, False]
        assert st.read(uihstore.hash_id("alice"), "ratings") == ev, "the hash is the user"
        seqs, record = st.snapshot("alice", 1709251200001, {"ratings": 8})
        assert len(seqs["ratings"]) == 3
    # The CLI reads the same user by the same string.
    out = uih("read", "--store", str(tmp_path / "st"), "--user", "alice", "--group", "ratings", "--tier", "immutable")
    assert out.stdout.splitlines()[1].split(",")[:3] == [str(uihstore.hash_id("alice")), "ratings", "1709251199999"]
    with pytest.raises(TypeError, match="user ids are integers"):
        with uihstore.Store.create(str(tmp_path / "ints"), SCHEMA) as st:
            st.read("alice", "engagement")


def test_a_raw_log_loads_through_a_layout(tmp_path):
    schema = tmp_path / "s.json"
    schema.write_text(json.dumps(SPELLED))
    dump = tmp_path / "dump.jsonl"
    dump.write_text('{"u": {"id": "alice"}, "i": "B1", "r": 4, "t": "2024-01-05T10:00:00Z"}\n'
                    '{"u": {"id": "alice"}, "i": "B2", "r": 5, "t": "2024-01-05T10:00:01Z"}\n')
    with uihstore.Store.create(str(tmp_path / "st"), str(schema)) as st:
        summary = st.load([dump], progress=False, layout={"group": "ratings",
                                                          "map": "user_id=u.id,item_id=i,rating=r,ts=t"})
        assert summary["events_new"] == 2
        ev = st.read("alice", "ratings")
        assert list(ev.columns["rating"]) == [4, 5]
        assert list(ev.columns["item_id"]) == list(uihstore.hash_ids(["B1", "B2"]))
        with pytest.raises(ValueError, match="unknown option"):
            st.load([dump], layout={"sep": ","})
        raw = tmp_path / "raw.csv"
        raw.write_text("name,when\nalice,2024-01-05T10:00:02Z\n")
        with pytest.raises(uihstore.UihError, match="the map gives 'rating' column 'nope'"):
            st.load([raw], progress=False, layout={"group": "ratings", "map": "user_id=name,ts=when,rating=nope"})


def test_create_with_a_chunk_span(tmp_path):
    with uihstore.Store.create(str(tmp_path / "new"), SCHEMA, shards=3, chunk_span=60000) as st:
        assert st.shards == 3
        assert all(s["chunk_span"] == 60000 and s["current"] == 0 for s in st.status()["shards"])
        assert st.read(1, "engagement").columns["event_ts"].size == 0
