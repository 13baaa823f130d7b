"""The demo's pipeline (examples/demo.py) at a small size: every rebuilt
sequence identical to inference's but the erased user's, which come back
flagged and empty; the late event in the history yet out of every sequence served
before it; the schema change in effect; fat rows larger than the store and
its logs."""

import importlib.util
import os

import pytest

import uihstore
from conftest import SOURCE


@pytest.fixture(scope="module")
def demo():
    spec = importlib.util.spec_from_file_location("demo", os.path.join(SOURCE, "examples", "demo.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def summary(demo, tmp_root):
    return demo.run(os.path.join(tmp_root, "demo"), users=200, days=3, history=3, say=lambda *_: None)


def test_every_sequence_identical_but_the_erased_users(demo, summary):
    assert summary["unexpected"] == 0
    assert summary["served_future_events"] == 0
    assert demo.failures(summary) == []
    for name, t in summary["tenants"].items():
        assert t["records"] > 0, name
        assert t["identical"] == t["records"] - t["erased_records"], name
        assert t["present"]["event_ts"] > 0, name  # sequences with events, not empty ones compared


def test_erased_user_reported_as_mismatches(summary):
    erased = summary["erased"]
    assert erased["records"] > 0 and erased["events_after"] == 0
    assert summary["tenants"]["ranking"]["erased_records"] == erased["records"]
    for name, t in summary["tenants"].items():
        # Every one flagged erased and empty, even where the record carries all the tenant reads.
        assert t["erased_records"] > 0 and t["erased_flagged"] == t["erased_records"], name


def test_late_event_kept_out_of_earlier_sequences(summary):
    late = summary["late"]
    assert late["served_after"] > 0 and late["windows_covering"] > 0
    assert late["served_with_it"] == 0 and late["rebuilt_with_it"] == 0
    assert late["generation"] == summary["generations"]  # stored by the last load
    assert late["served_after_load"]


def test_schema_change_in_effect(summary):
    assert summary["schema"]["version"] == 2
    with uihstore.Store.open(summary["store"], read_only=True) as st:
        traits = st.schema()["groups"]["engagement"]["traits"]
    assert "score" not in traits and "liked" in traits
    present = summary["tenants"]["new model"]["present"]
    assert present["liked"] > 0 and present["item_category"] > 0


def test_fat_rows_cost_more(demo, summary):
    assert summary["fat_bytes"] > summary["store_bytes"] + summary["log_bytes"]
    for t in summary["tenants"].values():
        assert t["fat_bytes"] > t["bytes_read"] + t["record_bytes"]
    assert "identical" in demo.screen(summary)


def test_it_runs_as_deployed(demo, summary):
    # The serving process followed every night's `uih load --shard` processes (three days and the schema
    # change, two shards each), its cache served the mutable parts, and the last screen says so.
    assert summary["deployed"]["load_processes"] == 2 * (summary["days"] + 1)
    # Nights without deletions or a schema change write a layer above the night before's files.
    assert 0 < summary["deployed"]["layered_loads"] < summary["deployed"]["load_processes"]
    cache = summary["deployed"]["cache"]
    assert cache["hits"] > cache["misses"] > 0
    assert "deployed as    one serving process" in demo.screen(summary)


def test_the_raw_log_loads_as_published_and_reads_back_by_name(summary):
    raw = summary["raw"]
    assert raw["theirs"] == raw["read_back"] > 250, "the reviewer's reviews (exact repeats once), the import among them"
    assert raw["items_match"] and raw["ids_match"]
    assert raw["user_id"] == uihstore.hash_id(raw["user"])
