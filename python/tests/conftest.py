"""Fixtures: a small store built with the C CLI (two days of generated
histories over two shards, day 2 in the mutable tier, a snapshot log written
by `uih snapshot`), and helpers that run the CLI and read its CSV."""

import csv
import io
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

SOURCE = os.environ.get("UIH_SOURCE_DIR", os.path.dirname(os.path.dirname(HERE)))
SCHEMA = os.path.join(SOURCE, "examples", "feed.schema.json")


def cli_path():
    path = os.environ.get("UIH_CLI") or os.path.join(SOURCE, "build", "release", "cli", "uih")
    assert os.path.exists(path), "the uih CLI is not built: %s" % path
    return path


def uih(*args, check=True):
    """Runs the CLI; returns stdout (text). Fails the test on an error."""
    p = subprocess.run([cli_path()] + [str(a) for a in args], capture_output=True, text=True)
    if check and p.returncode != 0:
        raise AssertionError("uih %s: exit %d: %s" % (" ".join(map(str, args)), p.returncode, p.stderr))
    return p


def categories():
    """Per trait name of the engagement group, its category vocabulary."""
    with open(SCHEMA) as f:
        schema = json.load(f)
    g = next(g for g in schema["groups"] if g["name"] == "engagement")
    return {t["name"]: t["categories"] for t in g["traits"] if "categories" in t}


def parse_csv(text):
    """The CLI's sequence CSV as a list of dict rows, comment lines dropped."""
    lines = [l for l in text.splitlines() if l and not l.startswith("#")]
    return list(csv.DictReader(io.StringIO("\n".join(lines))))


def as_events(rows, traits, ts_name="event_ts"):
    """Rows of one (record, group) as {trait: (values, present)}, with the
    CLI's text turned back into the engine's values (category names into
    codes, floats into float32, empty fields absent)."""
    vocab = categories()
    out = {}
    for t in traits:
        col = "ts" if t == ts_name else t
        vals, present = [], []
        for r in rows:
            v = r[col]
            present.append(v != "")
            if v == "":
                vals.append(0)
            elif t in vocab and not v.isdigit():
                vals.append(vocab[t].index(v))
            else:
                vals.append(float(v) if "." in v or "e" in v else int(v))
        out[t] = (vals, np.array(present, bool))
    return out


@pytest.fixture(scope="session")
def tmp_root():
    root = os.environ.get("UIH_TEST_TMPDIR") or "/tmp/uihstore-pytest"
    root = os.path.join(root, "pytest-%d" % os.getpid())
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def world(tmp_root):
    """A store built by the CLI, as a dict of paths and facts."""
    w = {"dir": tmp_root}
    d1, d2 = os.path.join(tmp_root, "d1.csv"), os.path.join(tmp_root, "d2.csv")
    uih("gen", "--schema", SCHEMA, "--group", "engagement", "--users", 60, "--days", 2, "--seed", 5, "--out", d1)
    with open(d1) as f:
        last = max(int(l.split(",")[2]) for l in list(f)[1:])
    through = last + 1
    uih("gen", "--schema", SCHEMA, "--group", "engagement", "--users", 60, "--days", 1, "--seed", 6,
        "--start-ts", through, "--out", d2)
    st = os.path.join(tmp_root, "st")
    uih("init", "--store", st, "--schema", SCHEMA, "--shards", 2)
    uih("load", "--store", st, "--through", through, d1)
    uih("append", "--store", st, d2)
    with open(d2) as f:
        last2 = max(int(l.split(",")[2]) for l in list(f)[1:])
    req = os.path.join(tmp_root, "req.csv")
    requests = [(i * 7 % 60, through + (last2 - through) * (i % 20) // 19) for i in range(120)]
    with open(req, "w") as f:
        f.write("user_id,request_ts\n")
        for u, t in requests:
            f.write("%d,%d\n" % (u, t))
    log = os.path.join(tmp_root, "snap.log")
    seen = uih("snapshot", "--store", st, "--group", "engagement:48", "--log", log, "--requests", req).stdout
    w.update(d1=d1, d2=d2, store=st, through=through, last=last2, requests=requests, log=log, seen=seen)
    return w


@pytest.fixture
def store_copy(world, tmp_path):
    """A copy of the world's store that a test may change."""
    dst = os.path.join(str(tmp_path), "st")
    shutil.copytree(world["store"], dst)
    return dst
