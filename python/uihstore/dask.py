"""Scale-out by shard on a Dask cluster (dask.distributed): one load task
per shard, and the materialization of snapshot logs in partitions of one
shard each. The tasks are plain functions of (store path, shard, ...), so
any engine that runs one task per shard partition runs them the same way
(python/README.md, "Scale-out").

A shard's task opens the store for that shard alone, to load
(`Store.open(path, shard=k, role="load")`): each shard's database is opened
by the one process writing it, and its mutable tier is left to the serving
process that may be running, so the loads of all shards run at once, in as many worker processes (on as
many machines as share the store's directory). Every load task reads every
input and keeps its shard's events, so the shards' generations are what one
load of the whole store makes — same stripes, same records, same through.

    from dask.distributed import Client, LocalCluster
    import uihstore.dask as ud
    with LocalCluster(n_workers=4, threads_per_worker=1) as cluster, Client(cluster) as client:
        summary = ud.load(client, "/data/store", ["/data/day-17.csv.zst"])
        parts = ud.materialize(client, "/data/store", ["/data/snap-17.log"],
                               Projection({"engagement": 256}))
"""

import os

import numpy as np

from .log import SnapshotLog, shard_of_many
from .store import Store

# Summary fields every shard's task counts alike (each reads every input);
# the others are summed over shards, and the seconds are the slowest task's.
_SAME = ("inputs", "input_bytes", "rejected", "delete_users", "delete_items", "delete_pairs", "schema_version",
         "through", "horizon")


def shard_count(path):
    """The store's number of shards (a read-only open of the store)."""
    with Store.open(path, read_only=True, shard=0) as s:
        return s.shards


# ---- the daily load ---------------------------------------------------------------

def load_shard(path, shard, files, through=None, lookback=0, deletes=None, rejects=None, schema=None,
               memory=256 << 20, keep=2, rebuild_dictionaries=False):
    """The load of one shard: what a task runs. Opens the store for `shard`
    alone, loads its events of `files` and returns the summary (a dict,
    as Store.load's, with "shard")."""
    with Store.open(path, shard=shard, keep=keep, role="load") as s:
        summary = s.load(files, through=through, lookback=lookback, deletes=deletes, rejects=rejects,
                         schema=schema, memory=memory, rebuild_dictionaries=rebuild_dictionaries, progress=False)
    summary["shard"] = shard
    return summary


def load(client, path, files, through=None, lookback=0, deletes=None, rejects=None, schema=None,
         memory=256 << 20, keep=2, rebuild_dictionaries=False):
    """Loads `files` into the store at `path` with one task per shard on
    `client`'s cluster, and returns the summary: the load's totals as
    Store.load gives them, and each shard's own ("shards_detail"). Raises the
    first failed shard's UihError (shard loads are independent: the other
    shards may have published; running the same load again loads only the
    shards that lack it). Bad records go to `rejects` as in one load
    (written by shard 0's task; the others skip the same records).
    `rebuild_dictionaries`: as `uih load --rebuild-dictionaries`, each
    shard's full rewrite a task of its own."""
    files = [os.fspath(f) for f in ([files] if isinstance(files, (str, os.PathLike)) else files)]
    n = shard_count(path)
    token = _token()
    futures = []
    for k in range(n):
        rej = None if rejects is None else (os.fspath(rejects) if k == 0 else os.devnull)
        futures.append(client.submit(load_shard, os.fspath(path), k, files, through=through, lookback=lookback,
                                     deletes=deletes, rejects=rej, schema=schema, memory=memory, keep=keep,
                                     rebuild_dictionaries=rebuild_dictionaries,
                                     pure=False, key="uih-load-%s-shard-%04d" % (token, k)))
    per = client.gather(futures)
    return combine(per)


def combine(per_shard):
    """One load's summary from its shards' (load_shard's results)."""
    per = sorted(per_shard, key=lambda s: s["shard"])
    total = {}
    for key in per[0]:
        if key == "shard":
            continue
        vals = [s[key] for s in per]
        if key in _SAME:
            total[key] = vals[0]
        elif key.startswith("seconds"):
            total[key] = max(vals)
        elif key == "events_skipped":
            total[key] = 0  # a whole load skips nothing
        else:
            total[key] = sum(vals)
    total["shards_detail"] = per
    return total


# ---- materializing logs -------------------------------------------------------------

def records_of_shard(log, shard, nshards):
    """The indexes, in log order, of the records of `log` (a SnapshotLog)
    whose user is in `shard`."""
    return np.nonzero(shard_of_many(log.users, nshards) == shard)[0]


def to_arrays(result, log, idx):
    """The default per-batch function: the batch as plain numpy arrays
    (copies, so they outlive the C result and travel between processes):
    "log", "record" (the record's index in its log), "user_id",
    "request_ts", "flags", and per group {"lengths", trait: values}
    (the sequences' values concatenated in record order)."""
    out = {"log": log.path, "record": np.asarray(idx, np.int64), "user_id": log.users[idx].copy(),
           "request_ts": log.request_ts[idx].copy(), "flags": np.array(result.flags), "groups": {}}
    for name, g in result.groups.items():
        starts = g.offsets.astype(np.int64)
        lengths = g.lengths.astype(np.int64)
        firsts = np.cumsum(lengths) - lengths  # each record's first row in the output
        rows = np.repeat(starts - firsts, lengths) + np.arange(int(lengths.sum()))
        grp = {"lengths": lengths}
        for t, v in g.values.items():
            grp[t] = v[rows]  # a gather: a copy, and in record order whatever the layout
        out["groups"][name] = grp
    return out


def materialize_shard(path, shard, logs, projection, fn=to_arrays, batch=4096, threads=1):
    """The materialization of one shard's partition: what a task runs.
    Opens the store read-only for `shard` alone, rebuilds the records of
    `logs` in that shard, `batch` at a time in log order, and returns
    [fn(result, log, record indexes) for each batch]. `fn` gets a
    Materialized whose arrays are valid while it runs: keep copies."""
    out = []
    with Store.open(path, read_only=True, shard=shard) as s:
        m = s.materializer(projection, threads=threads, depth=2)
        try:
            pending = []  # (log, indexes) of the batches submitted, oldest first
            for log_path in logs:
                log = SnapshotLog(log_path)
                idx = records_of_shard(log, shard, s.shards)
                for at in range(0, len(idx), batch):
                    part = idx[at:at + batch]
                    m.submit((log.pointers[part], log.lengths[part]))
                    pending.append((log, part))
                    if len(pending) > 2:  # two batches in flight while fn runs
                        lg, p = pending.pop(0)
                        out.append(fn(m.next(), lg, p))
            while pending:
                lg, p = pending.pop(0)
                out.append(fn(m.next(), lg, p))
        finally:
            m.close()
    return out


def materialize(client, path, logs, projection, fn=to_arrays, batch=4096, threads=1):
    """Rebuilds every record of `logs` against the store at `path` with
    one task per shard on `client`'s cluster. Returns, per shard in shard
    order, the list of fn(...) over its batches (materialize_shard). With
    the default fn, every record appears once, in its shard's partition,
    in log order there."""
    logs = [os.fspath(p) for p in ([logs] if isinstance(logs, (str, os.PathLike)) else logs)]
    n = shard_count(path)
    token = _token()
    futures = [client.submit(materialize_shard, os.fspath(path), k, logs, projection, fn=fn, batch=batch,
                             threads=threads, pure=False, key="uih-materialize-%s-shard-%04d" % (token, k))
               for k in range(n)]
    return client.gather(futures)


def _token():
    return os.urandom(6).hex()
