"""What uihstore is for, end to end, in under a minute on two cores.

A store starts with two weeks of generated interaction histories of a few
thousand users (`uih gen`). Then days are served live: each hour the hour's
events reach the mutable tier, and inference requests (a few per active
user, seconds after one of their events) snapshot both tiers, each record
appended to the day's snapshot log; at midnight the daily load moves the
day into a new generation. As deployed: this process serves (the store
opened with role "serve", which owns the mutable tiers), each night's load
runs as `uih load --shard I` processes, one per shard, whose publishes the
serving store follows without reopening, and each training tenant runs as
a read-only process of its own. On the way the schema moves from v1 to v2
(before day 2), an event of yesterday arrives late (at noon of the last
day) and a user is erased (by the last day's load).

Then training: three tenants reading different groups, lengths and traits
rebuild every logged record of their days from the store (each checksum
verified), and every rebuilt sequence is compared with what inference
returned. The last screen says what was stored, what the same examples
cost as fat rows, and how many sequences came back identical.

    scripts/demo [--users 3000] [--days 3] [--history 14] [--seed 1] [--dir build/demo]
    PYTHONPATH=python UIHSTORE_LIBDIR=build/release /usr/bin/python3 examples/demo.py [...]

run() does the work and returns a summary (python/tests/test_demo.py runs
it small); main() prints the screen, and exits 1 when anything is not as it
must be: a rebuilt sequence that differs from inference's (the erased
user's aside), an event served before its time, a late event that leaks.
"""

import argparse
import collections
import ctypes
import hashlib
import itertools
import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "python"))

import uihstore  # noqa: E402

UIH = os.environ.get("UIH_CLI") or os.path.join(ROOT, "build", "release", "cli", "uih")
SCHEMA_V1 = os.path.join(HERE, "feed.v1.schema.json")
SCHEMA_V2 = os.path.join(HERE, "feed.schema.json")
HOUR, DAY = 3_600_000, 86_400_000
FIRST_DAY = 1_699_920_000_000  # 2023-11-14 00:00 UTC, the first day served live
LATE_HOUR = 12  # when, on the last day, an event of the day before arrives

# The training jobs sharing the logs: what each reads of a record (per group
# its newest events and traits), and the first day whose log it trains on.
TENANTS = {
    "ranking": ({"engagement": (1024, ["event_ts", "item_id", "event_type", "watch_ms"])}, 1),
    "search": ({"search": (64, ["event_ts", "query_id", "results"]),
                "engagement": (32, ["event_ts", "item_id"])}, 1),
    "new model": ({"engagement": (256, ["event_ts", "item_id", "event_type", "liked", "commented", "shared",
                                        "item_category"])}, 2),  # traits v2 added: it starts on day 2
}
# Inference serves every tenant with one snapshot: per group the longest any reads.
INFERENCE = {}
for _groups, _ in TENANTS.values():
    for _g, (_n, _) in _groups.items():
        INFERENCE[_g] = max(INFERENCE.get(_g, 0), _n)

DTYPES = {"timestamp": np.int64, "id": np.uint64, "int64": np.int64, "uint32": np.uint32, "float32": np.float32,
          "category": np.uint32, "flag": np.uint8}


def uih(*args):
    p = subprocess.run([UIH] + [str(a) for a in args], capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError("uih %s: %s" % (" ".join(map(str, args)), p.stderr.strip()))
    return p.stdout


def generate(path, schema, group, users, day_start, seed):
    """A day of `group`'s events as loader-input CSV: `uih gen`'s, cut at
    midnight (the busiest users' sessions would run on into the next days)."""
    uih("gen", "--schema", schema, "--group", group, "--users", users, "--days", 1, "--seed", seed,
        "--start-ts", day_start, "--out", path + ".gen")
    with open(path + ".gen") as src, open(path, "w") as out:
        out.write(next(src))
        out.writelines(line for line in src if int(line.split(",", 3)[2]) < day_start + DAY)
    os.remove(path + ".gen")


def read_events(path, schema, group_name):
    """A day's CSV of one group: (user ids, timestamps, {trait: values as the engine types them}), in
    the file's order (by user, then time)."""
    with open(path) as f:
        header = f.readline().strip().split(",")
        empty = not f.readline()
    table = np.empty((0, len(header)), dtype=str) if empty else \
        np.loadtxt(path, delimiter=",", skiprows=1, dtype=str, ndmin=2)
    group = next(g for g in schema["groups"] if g["name"] == group_name)
    traits = {t["name"]: t for t in group["traits"]}
    ts_name = group["traits"][0]["name"]
    cols = {}
    for k, name in enumerate(header[2:], 2):
        t = traits[ts_name if name == "ts" else name]
        if "categories" in t:  # written by name
            names, inverse = np.unique(table[:, k], return_inverse=True)
            cols[t["name"]] = np.array([t["categories"].index(n) for n in names], np.uint32)[inverse]
        else:
            cols[t["name"]] = table[:, k].astype(DTYPES[t["type"]])
    return table[:, 0].astype(np.uint64), cols[ts_name], cols


class Zstd:
    """zstd level 3 on one buffer at a time (libzstd.so.1, RocksDB's): what a fat row costs stored."""

    def __init__(self):
        lib = self.lib = ctypes.CDLL("libzstd.so.1")
        size_t = ctypes.c_size_t
        lib.ZSTD_compressBound.restype, lib.ZSTD_compressBound.argtypes = size_t, [size_t]
        lib.ZSTD_isError.restype, lib.ZSTD_isError.argtypes = ctypes.c_uint, [size_t]
        lib.ZSTD_compress.restype = size_t
        lib.ZSTD_compress.argtypes = [ctypes.c_void_p, size_t, ctypes.c_char_p, size_t, ctypes.c_int]
        self.out = ctypes.create_string_buffer(1 << 16)

    def size(self, data):
        if self.lib.ZSTD_compressBound(len(data)) > len(self.out):
            self.out = ctypes.create_string_buffer(self.lib.ZSTD_compressBound(len(data)))
        n = self.lib.ZSTD_compress(self.out, len(self.out), data, len(data), 3)
        if self.lib.ZSTD_isError(n):
            raise RuntimeError("zstd failed on a row of %d bytes" % len(data))
        return n


def fat_row(seqs):
    """An example as a fat row: per group and trait of what inference returned, presence bytes then values."""
    return b"".join(part for ev in seqs.values() for name in ev.columns
                    for part in (ev.present[name].tobytes(), ev.columns[name].tobytes()))


def digest(parts):
    """A digest of a projected sequence: parts are (group, events, [(values, presence) per trait])."""
    h = hashlib.blake2b(digest_size=16)
    for group, n, columns in parts:
        h.update(b"%s:%d;" % (group.encode(), n))
        for values, present in columns:
            h.update(values.tobytes())
            h.update(present.tobytes())
    return h.digest()


def inference_digest(seqs, groups):
    """What a tenant reading `groups` gets of the sequences inference returned: each group's newest events."""
    parts = []
    for g, (length, traits) in groups.items():
        ev = seqs[g]
        first = max(len(ev) - length, 0)
        parts.append((g, len(ev) - first, [(ev.columns[t][first:], ev.present[t][first:]) for t in traits]))
    return digest(parts)


def rebuilt_digest(res, i, groups):
    """The same of record i of a materialized batch."""
    parts = []
    for g, (_, traits) in groups.items():
        mg = res[g]
        o, n = int(mg.offsets[i]), int(mg.lengths[i])
        parts.append((g, n, [(mg.values[t][o:o + n], mg.present[t][o:o + n]) for t in traits]))
    return digest(parts)


class Day:
    """A day served live: each hour, the hour's events appended, then the hour's requests served."""

    def __init__(self, st, number, files, schema, rng):
        self.st, self.number = st, number
        self.start = FIRST_DAY + (number - 1) * DAY
        self.events = {g: read_events(path, schema, g) for g, path in files.items()}
        self.appended = self.future = 0
        users, ts, _ = self.events["engagement"]
        self.requests = []  # (ts, user): 2 to 6 per active user, seconds after one of their events
        for u, first, n in zip(*np.unique(users, return_index=True, return_counts=True)):
            mine = ts[first:first + n]
            at = rng.choice(mine, size=min(len(mine), int(rng.integers(2, 7))), replace=False)
            at = np.minimum(at + rng.integers(1, 10_000, size=len(at)), self.start + DAY - 1)
            self.requests += [(int(t), int(u)) for t in at]
        self.requests.sort()

    def append_hour(self, hour):
        """Every event of the hour into the mutable tier, one append per user and group."""
        lo, hi = self.start + hour * HOUR, self.start + (hour + 1) * HOUR
        for group, (users, ts, cols) in self.events.items():
            at = np.nonzero((ts >= lo) & (ts < hi))[0]
            for idx in np.split(at, np.flatnonzero(np.diff(users[at])) + 1) if len(at) else []:
                self.st.append(int(users[idx[0]]), {k: v[idx] for k, v in cols.items()}, group=group)
            self.appended += len(at)

    def serve(self, log_path, zstd, late=None):
        """Serves the day, each record appended to the log at `log_path`. Returns per request (user, ts,
        its fat row's bytes, {tenant: digest of what it reads}) of what inference returned; counts in
        `future` the requests served an event newer than themselves (none should be)."""
        tenants = {name: groups for name, (groups, first) in TENANTS.items() if self.number >= first}
        kept = []
        pending = iter(self.requests)
        nxt = next(pending, None)
        with uihstore.LogWriter(log_path) as log:
            for hour in range(24):
                if late and hour == LATE_HOUR:
                    self.st.append(late["user"], late["event"], group="engagement")
                self.append_hour(hour)
                while nxt and nxt[0] < self.start + (hour + 1) * HOUR:
                    ts, user = nxt
                    seqs, record = self.st.snapshot(user, ts, INFERENCE)
                    log.append(record)
                    kept.append((user, ts, zstd.size(fat_row(seqs)),
                                 {name: inference_digest(seqs, groups) for name, groups in tenants.items()}))
                    self.future += any(len(ev) and ev["event_ts"][-1] > ts for ev in seqs.values())
                    if late and user == late["user"]:
                        late["served_with_it"] += int(late["ts"] in seqs["engagement"]["event_ts"])
                    nxt = next(pending, None)
        return kept


def late_event(st, day, path):
    """An event of yesterday, between the last two of a user with a request this morning: it reaches the
    mutable tier at noon (below the watermark: not served) and tonight's load in a file of its own."""
    for user in sorted({u for t, u in day.requests if t < day.start + LATE_HOUR * HOUR}):
        last_two = st.read(user, "engagement", start=day.start - DAY, end=day.start - 1,
                           traits=["event_ts"])["event_ts"][-2:]
        if len(last_two) == 2 and last_two[1] - last_two[0] > 1:
            break
    else:
        raise RuntimeError("no user with a request this morning had two events yesterday: use more --users")
    ts = int(last_two.sum()) // 2
    with open(path, "w") as f:
        f.write("user_id,group,ts,item_id,event_type,watch_ms,liked\n%d,engagement,%d,4242,click,30000,1\n"
                % (user, ts))
    event = {"event_ts": [ts], "item_id": [4242], "event_type": [1], "watch_ms": [30_000], "liked": [1]}
    return {"user": user, "ts": ts, "day": day.number, "file": path, "event": event, "served_with_it": 0}


def current(st):
    return st.status()["shards"][0]["current"]


def nightly_load(st, store_path, files, through=None, schema=None, deletes=None, threads=1):
    """A night's load as deployed: one `uih load --shard I` process per shard, beside this serving process,
    which follows each shard's publish without reopening. Returns the shards' summaries, summed."""
    before = [st.following(i) for i in range(st.shards)]
    procs = []
    for shard in range(st.shards):
        args = [UIH, "load", "--store", store_path, "--shard", shard, "--threads", threads, "--json"]
        args += ["--through", through] if through is not None else []
        args += ["--schema", schema] if schema else []
        args += ["--delete", deletes] if deletes else []
        procs.append(subprocess.Popen([str(a) for a in args + list(files)], stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    st.load_processes = getattr(st, "load_processes", 0) + len(procs)
    summaries = []
    for p in procs:
        out, err = p.communicate()
        if p.returncode != 0:
            raise RuntimeError("uih load: " + err.strip())
        summaries.append(json.loads(out))
    # A night's shard written as a layer above the files of the night before (shared, never rewritten):
    # all but the first load, the schema change and the night with deletions.
    st.layered_loads = getattr(st, "layered_loads", 0) + sum(x["shards_layered"] for x in summaries)
    deadline = time.time() + 10
    while any(st.following(i) <= before[i] for i in range(st.shards)):
        if time.time() > deadline:
            raise RuntimeError("the serving process did not follow the loads' publish")
        time.sleep(0.01)
    return {"events": sum(x["events"] for x in summaries), "schema_version": summaries[0]["schema_version"]}


def train_in_process(store_path, tenants, log_paths, seen, erased, late, threads):
    """Each tenant trains in a process of its own (forked: it inherits what inference returned, to compare
    with), opening the store read-only as a training job does; their results come back by a pipe."""
    ctx = multiprocessing.get_context("fork")
    jobs = {}
    for name, (groups, first) in tenants.items():
        recv, send = ctx.Pipe(duplex=False)

        def job(name=name, groups=groups, first=first, send=send):
            with uihstore.Store.open(store_path, read_only=True) as train_st:
                logs = [uihstore.SnapshotLog(p) for p in log_paths[first - 1:]]
                send.send(train(train_st, name, groups, logs, seen[first - 1:], erased, late, threads))
            send.close()

        proc = ctx.Process(target=job)
        proc.start()
        jobs[name] = (proc, recv)
    results = {}
    for name, (proc, recv) in jobs.items():
        results[name] = recv.recv()
        proc.join()
        if proc.exitcode != 0:
            raise RuntimeError("training process %s exited with %s" % (name, proc.exitcode))
    return results


def rebuilt(m, log, order, batch=1024, ahead=2):
    """The materializer's results for the records of `log` (a SnapshotLog) in `order`, batch by batch."""
    ptrs, lens = log.pointers[order], log.lengths[order]
    starts = range(0, len(order), batch)
    sent = 0
    for k in range(len(starts)):
        while sent < len(starts) and sent <= k + ahead:  # the workers stay a few batches ahead
            m.submit((ptrs[starts[sent]:starts[sent] + batch], lens[starts[sent]:starts[sent] + batch]))
            sent += 1
        yield m.next()


def train(st, name, groups, logs, seen, erased, late, threads):
    """A tenant rebuilds every record of its `logs` for `groups`, each day's records user by user (a
    user's records share reads): once timed, then once compared with what inference returned (`seen`)."""
    proj = uihstore.Projection(groups, on_mismatch="flag")
    orders = [np.argsort(log.users, kind="stable") for log in logs]
    out = dict.fromkeys(("identical", "erased_records", "erased_flagged", "bytes_read", "fat_bytes",
                         "late_rebuilt_with_it"), 0)
    out.update(groups=groups, records=sum(len(log) for log in logs), unexpected=[],
               record_bytes=int(sum(log.lengths.sum() for log in logs)),
               present={t: 0 for _, traits in groups.values() for t in traits})
    t = time.time()
    for log, order in zip(logs, orders):
        with st.materializer(proj, threads=threads) as m:
            for res in rebuilt(m, log, order):
                out["bytes_read"] += res.stats["bytes_read"]
    out["seconds"] = time.time() - t
    for log, order, kept in zip(logs, orders, seen):
        k = 0
        with st.materializer(proj, threads=threads) as m:
            for res in rebuilt(m, log, order):
                for i in range(len(res)):
                    user, ts, fat, digests = kept[order[k]]
                    k += 1
                    out["fat_bytes"] += fat
                    if user != erased:
                        same = not res.flags[i] and rebuilt_digest(res, i, groups) == digests[name]
                        out["identical"] += same
                    else:  # nothing of an erased user comes back, not even the events a record carries
                        out["erased_records"] += 1
                        same = bool(res.flags[i] & uihstore.RECORD_ERASED) and \
                            not any(res[g].lengths[i] for g in groups)
                        out["erased_flagged"] += same
                    if not same:
                        out["unexpected"].append((user, ts, int(res.flags[i])))
                    if user == late["user"] and ts > late["ts"] and "engagement" in groups:
                        mg = res["engagement"]
                        o, n = int(mg.offsets[i]), int(mg.lengths[i])
                        out["late_rebuilt_with_it"] += int(late["ts"] in mg.values["event_ts"][o:o + n])
                for g in groups:
                    for trait, present in res[g].present.items():
                        out["present"][trait] += int(present.sum())
    return out


def scan_logs(logs, late, engagement):
    """Bytes of the events the logs' records carry; and the late event's user's records served after its
    time: how many, and how many of them read the store over its time (group id `engagement`)."""
    carried = late["served_after"] = late["windows_covering"] = 0
    for log in logs:
        for i in range(len(log)):
            record = uihstore.decode_record(log.record(i))
            carried += sum(g["mutable_bytes"] for g in record["groups"])
            if record["user_id"] == late["user"] and record["request_ts"] > late["ts"]:
                g = next(g for g in record["groups"] if g["group"] == engagement)
                late["served_after"] += 1
                late["windows_covering"] += int(g["length"] > 0 and g["start_ts"] <= late["ts"] <= g["end_ts"])
    return carried


def run(work, users=3000, days=3, history=14, seed=1, threads=2, say=print):
    """The whole demo in `work` (its store/, logs/ and input/ made afresh); returns a summary dict."""
    if days < 2 or users < 10 or history < 1:
        raise ValueError("the demo needs 2 days or more (the schema changes before day 2), 10 users or more "
                         "and a day of history or more")
    t_start = t = time.time()
    for sub in ("store", "logs", "input"):
        shutil.rmtree(os.path.join(work, sub), ignore_errors=True)
    os.makedirs(os.path.join(work, "logs"))
    os.makedirs(os.path.join(work, "input"))
    inp = lambda name: os.path.join(work, "input", name)  # noqa: E731
    store_path = os.path.join(work, "store")
    schemas = {}
    for path in (SCHEMA_V1, SCHEMA_V2):
        with open(path) as f:
            schemas[path] = json.load(f)
    rng = np.random.default_rng(seed)
    seeds = itertools.count(seed * 100_000)  # one for each generated file
    searchers = users // 3  # a third of the users also search

    files = []
    for d in range(history):
        for group, n in (("engagement", users), ("search", searchers)):
            files.append(inp("history-%d.%s.csv" % (d + 1, group)))
            generate(files[-1], SCHEMA_V1, group, n, FIRST_DAY - (history - d) * DAY, next(seeds))
    st = uihstore.Store.create(store_path, SCHEMA_V1, shards=2)
    loaded = st.load(files, through=FIRST_DAY, threads=threads, progress=False)
    say("history: %d days of %s users, %s events, loaded as generation %d (%.1f s)"
        % (history, f"{users:,}", f"{loaded['events']:,}", current(st), time.time() - t))
    st.close()
    # From here on, as deployed: this process serves (it owns the mutable tiers, appends and snapshots),
    # each night's load runs as `uih load` processes, one per shard, and training as read-only processes.
    st = uihstore.Store.open(store_path, role="serve", follow_ms=20)

    zstd = Zstd()
    logs, seen, future = [], [], 0  # per day: its log, and what inference returned (Day.serve)
    for number in range(1, days + 1):
        t = time.time()
        if number == 2:
            change = nightly_load(st, store_path, [], schema=SCHEMA_V2)
            schema = {"version": change["schema_version"], "events": change["events"]}
            say("schema v1 -> v2: %s stored events re-encoded without 'score', as generation %d (%.1f s)"
                % (f"{change['events']:,}", current(st), time.time() - t))
            t = time.time()
        path = SCHEMA_V1 if number == 1 else SCHEMA_V2
        start = FIRST_DAY + (number - 1) * DAY
        files = {g: inp("day-%d.%s.csv" % (number, g)) for g in ("engagement", "search")}
        generate(files["engagement"], path, "engagement", users, start, next(seeds))
        generate(files["search"], path, "search", searchers, start, next(seeds))
        day = Day(st, number, files, schemas[path], rng)
        late = late_event(st, day, inp("day-%d.late.csv" % number)) if number == days else None
        logs.append(os.path.join(work, "logs", "day-%d.log" % number))
        seen.append(day.serve(logs[-1], zstd, late))
        future += day.future
        load, deletes = list(files.values()), None
        if late:  # the last night's load also stores the late event and erases the user with the most records
            load.append(late["file"])
            counts = collections.Counter(r[0] for kept in seen for r in kept if r[0] != late["user"])
            erased = max(counts, key=lambda u: (counts[u], -u))
            deletes = inp("day-%d.delete.csv" % number)
            with open(deletes, "w") as f:
                f.write("user_id\n%d\n" % erased)
        nightly_load(st, store_path, load, through=start + DAY, deletes=deletes)
        say("day %d: %s events appended hour by hour, %s requests served and logged, loaded as generation %d "
            "(%.1f s)" % (number, f"{day.appended:,}", f"{len(seen[-1]):,}", current(st), time.time() - t))

    # Since the last load the late event is in its user's history, and inference serves it.
    now = st.read(late["user"], "engagement", traits=["event_ts", "uih_arrival"])
    at = np.nonzero(now["event_ts"] == late["ts"])[0]
    late["generation"] = int(now["uih_arrival"][at[0]]) if len(at) else None
    seqs, _ = st.snapshot(late["user"], FIRST_DAY + days * DAY, INFERENCE)
    late["served_after_load"] = bool(late["ts"] in seqs["engagement"]["event_ts"])
    del late["event"]
    status = st.status()
    erased_events = sum(len(st.read(erased, g)) for g in INFERENCE)
    deployed = {"load_processes": st.load_processes, "layered_loads": st.layered_loads, "cache": st.cache_stats()}
    st.close()

    # Training: each tenant in a process of its own, the store opened read-only, as a training job opens it.
    t = time.time()
    with uihstore.Store.open(store_path, read_only=True) as train_st:
        snapshot_logs = [uihstore.SnapshotLog(p) for p in logs]
        carried = scan_logs(snapshot_logs, late, train_st.schema()["groups"]["engagement"]["id"])
    results = train_in_process(store_path, TENANTS, logs, seen, erased, late, threads)
    late["rebuilt_with_it"] = sum(r["late_rebuilt_with_it"] for r in results.values())
    say("training: %d tenants, each in a read-only process of its own, rebuilt and compared every record of "
        "their days (%.1f s)" % (len(TENANTS), time.time() - t))
    raw = raw_log(work, seed)
    say("raw log: %d reviews of a JSON Lines dump (string ids, RFC 3339 times, a 300-review import at one second) "
        "loaded in one command" % raw["reviews"])
    return {
        "raw": raw,
        "users": users, "days": days, "history": history, "seed": seed, "threads": threads,
        "store": store_path, "logs": logs, "inputs": os.path.join(work, "input"), "uih": UIH,
        "generations": status["shards"][0]["current"],
        "events": sum(s["generations"][-1]["events"] for s in status["shards"]),
        "store_bytes": sum(s["immutable_bytes"] + s["mutable_bytes"] for s in status["shards"]),
        "records": sum(len(k) for k in seen), "log_bytes": sum(os.path.getsize(p) for p in logs),
        "log_carried_bytes": carried, "fat_bytes": sum(r[2] for k in seen for r in k),
        "schema": schema, "late": late, "served_future_events": future,
        "erased": {"user": erased, "records": sum(r[0] == erased for k in seen for r in k),
                   "events_after": erased_events},
        "tenants": results, "deployed": deployed,
        "unexpected": sum(len(r["unexpected"]) for r in results.values()),
        "seconds": time.time() - t_start,
    }


REVIEWS = os.path.join(HERE, "reviews.schema.json")
REVIEW_MAP = "user_id=reviewer.id,item_id=asin,rating=overall,verified=verified,ts=time"


def raw_log(work, seed):
    """A review dump as public data sets publish them (JSON Lines, string
    ids, RFC 3339 times with offsets, a batch import of 300 reviews at one
    second), loaded in one command as it is; what one reviewer reads back."""
    rng = np.random.default_rng(seed)
    path, store = os.path.join(work, "input", "reviews.jsonl"), os.path.join(work, "reviews")
    shutil.rmtree(store, ignore_errors=True)
    reviewers = ["A%013X" % int(x) for x in rng.integers(1 << 40, 1 << 52, 200)]
    mine = []
    with open(path, "w") as f:
        for i in range(3000):
            who = reviewers[i % 200] if i < 2700 else reviewers[0]  # the import: 300 of reviewer 0's at once
            when = ("2024-01-05T10:00:00+01:00" if i >= 2700 else
                    "2023-%02d-%02dT%02d:%02d:%02d.%03d-05:00" % (1 + i % 12, 1 + i % 28, i % 24, i % 60, (7 * i) % 60,
                                                                 i % 1000))
            row = {"reviewer": {"id": who, "name": "n%d" % i}, "asin": "B%09d" % rng.integers(0, 5000),
                   "overall": int(rng.integers(1, 6)), "verified": bool(i % 3), "time": when, "text": "..."}
            if who == reviewers[0]:
                mine.append(row)
            f.write(json.dumps(row) + "\n")
    uih("init", "--store", store, "--schema", REVIEWS)
    uih("load", "--store", store, "--group", "ratings", "--map", REVIEW_MAP, path)
    got = uih("read", "--store", store, "--user", reviewers[0], "--group", "ratings").splitlines()[1:]
    items = sorted(int(line.split(",")[3]) for line in got)
    mine = list({(r["time"], r["asin"], r["overall"], r["verified"]): r for r in mine}.values())  # exact repeats once
    return {"path": path, "store": store, "reviews": 3000, "user": reviewers[0], "theirs": len(mine),
            "read_back": len(got), "items_match": items == sorted(uihstore.hash_ids([r["asin"] for r in mine]).tolist()),
            "user_id": uihstore.hash_id(reviewers[0]), "ids_match": all(int(line.split(",")[0]) == uihstore.hash_id(
                reviewers[0]) for line in got)}


def describe(groups):
    return " + ".join("%s %d x %s" % (g, n, ", ".join(traits)) for g, (n, traits) in groups.items())


def screen(s):
    """The last screen: what was stored, what the same examples cost as fat rows, what training got back."""
    num, mb = "{:,}".format, lambda b: "%.1f MB" % (b / 1e6)
    here = lambda p: p if os.path.relpath(p).startswith("..") else os.path.relpath(p)  # noqa: E731
    late, erased, records = s["late"], s["erased"], s["records"]
    cache = s["deployed"]["cache"]
    out = ["",
           "deployed as    one serving process (this one: appends, snapshots, its write-through cache served %.0f%%"
           % (100 * cache["hits"] / max(1, cache["hits"] + cache["misses"])),
           "               of the mutable parts), %d `uih load --shard` processes that published each night while it"
           % s["deployed"]["load_processes"],
           "               served (followed without a reopen; %d of them wrote only the stripes they changed, a"
           % s["deployed"]["layered_loads"],
           "               layer above the night before's files), and %d training processes, read-only"
           % len(s["tenants"]),
           "the store      %s events of %s users (%d days of history + %d served) in %d generations: %s"
           % (num(s["events"]), num(s["users"]), s["history"], s["days"], s["generations"], mb(s["store_bytes"])),
           "the logs       %s inference requests, a snapshot record each: %s, %d bytes a record (%d of versions"
           % (num(records), mb(s["log_bytes"]), s["log_bytes"] / records,
              (s["log_bytes"] - s["log_carried_bytes"]) / records),
           "               and checksums, %d of the events since the last load, which a record carries)"
           % (s["log_carried_bytes"] / records),
           "as fat rows    the same %s examples, each with the sequences inference returned (zstd-3, row by row):"
           % num(records),
           "               %s, %.1fx the store and the logs together"
           % (mb(s["fat_bytes"]), s["fat_bytes"] / (s["store_bytes"] + s["log_bytes"])),
           "schema change  v1 -> v2 before day 2: 'score' dropped from %s stored events; liked, commented,"
           % num(s["schema"]["events"]),
           "               shared and item_category added (the new model reads them from day 2)",
           "late event     user %d's event of day %d arrived at noon of day %d, stored that night (generation %s):"
           % (late["user"], late["day"] - 1, late["day"], late["generation"]),
           "               the %d sequences served after its time lack it, as do their rebuilds (it arrived later)"
           % late["served_after"],
           "erased user    user %d (%d records) erased by day %d's load: every record of theirs comes back"
           % (erased["user"], erased["records"], s["days"]),
           "               empty and flagged as erased, even where it carries all a tenant reads",
           "raw log        %s reviews of a JSON Lines dump as published (string ids, RFC 3339 times, a 300-review"
           % num(s["raw"]["reviews"]),
           "               import at one second) loaded in one command; reviewer %s reads back their %d by"
           % (s["raw"]["user"], s["raw"]["read_back"]),
           "               name: uih load --store %s --group ratings --map '%s' %s"
           % (here(s["raw"]["store"]), REVIEW_MAP, here(s["raw"]["path"])),
           "",
           "Training (%d threads): each tenant rebuilt every record of its days, a day's records user by user,"
           % s["threads"],
           "verified each checksum and compared each sequence with what inference returned; then the bytes read",
           "per example (against the fat row's) and the records rebuilt a second:"]
    for name, t in s["tenants"].items():
        n = t["records"]
        out += ["  %-10s %s" % (name, describe(t["groups"])),
                "             %s of %s identical; erased user's %d: %d flagged; %.1f KB (fat row %.1f KB); "
                "%s a second" % (num(t["identical"]), num(n - t["erased_records"]), t["erased_records"],
                                 t["erased_flagged"], (t["bytes_read"] + t["record_bytes"]) / n / 1e3,
                                 t["fat_bytes"] / n / 1e3, num(int(n / t["seconds"])))]
    store, log = here(s["store"]), here(s["logs"][-1])
    return "\n".join(out + [
        "",
        "the store %s, the logs %s, the inputs %s"
        % (store, os.path.join(os.path.dirname(log), "day-*.log"), here(s["inputs"])),
        "uih is %s; try" % here(s["uih"]),
        "  uih status --store %s" % store,
        "  uih log dump %s | head -3" % log,
        "  uih materialize --store %s --log %s \\" % (store, log),
        "      --group engagement:8 --traits item_id --on-mismatch flag | head",
        "  uih read --store %s --user %d --group engagement --arrival --from %d --to %d   # the late event"
        % (store, late["user"], late["ts"], late["ts"]),
        "the same comparison at scale, against fat rows in RocksDB: build/release/bench/fatrow_bench (bench/README.md)"])


def failures(s):
    """What went wrong, if anything, in sentences."""
    out = ["tenant %s: %d records not as inference served them, e.g. (user, ts, flags) %s"
           % (name, len(t["unexpected"]), t["unexpected"][:3])
           for name, t in s["tenants"].items() if t["unexpected"]]
    if not all(t["erased_records"] for t in s["tenants"].values()):
        out.append("a tenant had no record of the erased user to rebuild")
    if s["served_future_events"]:
        out.append("%d requests were served events newer than themselves" % s["served_future_events"])
    if s["erased"]["events_after"]:
        out.append("the erased user still has %d events" % s["erased"]["events_after"])
    raw = s["raw"]
    if raw["read_back"] != raw["theirs"] or not raw["items_match"] or not raw["ids_match"]:
        out.append("the raw log's reviewer %s read back %d of their %d reviews (items %s, ids %s)"
                   % (raw["user"], raw["read_back"], raw["theirs"], raw["items_match"], raw["ids_match"]))
    late = s["late"]
    if late["generation"] != s["generations"] or not late["served_after_load"]:
        out.append("the late event is not in its user's history since the last load")
    if late["served_with_it"] or late["rebuilt_with_it"] or not late["windows_covering"]:
        out.append("the late event: %(served_with_it)d served, %(rebuilt_with_it)d rebuilt with it, "
                   "%(windows_covering)d windows over its time" % late)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--users", type=int, default=3000, help="users generated (a third of them also search)")
    ap.add_argument("--days", type=int, default=3, help="days served live (2 or more)")
    ap.add_argument("--history", type=int, default=14, help="days of history stored before them")
    ap.add_argument("--seed", type=int, default=1, help="of the generated days and the requests")
    ap.add_argument("--threads", type=int, default=2, help="of the loads and the materializers")
    ap.add_argument("--dir", default=os.path.join(ROOT, "build", "demo"),
                    help="for the store, the logs and the inputs (default: build/demo)")
    a = ap.parse_args()
    print("uihstore demo: %s users, %d days of history, then %d days served live, in %s"
          % (f"{a.users:,}", a.history, a.days, a.dir))
    s = run(a.dir, a.users, a.days, a.history, a.seed, a.threads)
    print(screen(s))
    bad = failures(s)
    compared = sum(t["records"] - t["erased_records"] for t in s["tenants"].values())
    identical = sum(t["identical"] for t in s["tenants"].values())
    if bad:
        print("\nFAILED: " + "\n        ".join(bad))
        sys.exit(1)
    print("\nOK: %s of %s sequences identical to inference, besides the erased user's (%.0f s)"
          % (f"{identical:,}", f"{compared:,}", s["seconds"]))


if __name__ == "__main__":
    main()
