"""PyTorch: an IterableDataset over snapshot logs that yields rebuilt
batches as dicts of tensors made with torch.from_numpy (no copy of the
materializer's output), split across DataLoader workers by the store's
shard function so that each worker reads its own shards.

    ds = SnapshotDataset("st", ["day1.log"], Projection({"engagement": (256, ["item_id"])}, layout="jagged"))
    for batch in DataLoader(ds, batch_size=None, num_workers=2):
        g = batch["engagement"]
        KeyedJaggedTensor(keys=["item_id"], values=g["values"]["item_id"], lengths=g["lengths"])

Each batch is {"records": n, "worker": the DataLoader worker that made
it, "user_id", "request_ts", "flags" (tensors of n), and per projected
group: {"keys": trait names, "values": {trait: tensor of the batch's rows},
"lengths": int32 tensor (events per record), "offsets": int64 tensor (each
record's first row), and with present=True "present": {trait: uint8
tensor, 1 where the event has a value}}}. With layout "jagged" a record's
rows follow the previous record's (values + lengths as torchrec's
KeyedJaggedTensor takes them);
with "shared" a user's records are windows (offsets, lengths) into rows
written once. torch has no unsigned 64- or 32-bit tensors: id values come
as int64 and uint32/category values as int32 tensors of the same bits
(.view(np.uint64) on .numpy() gives them back).
"""

import numpy as np
import torch
from torch.utils.data import IterableDataset, get_worker_info

from .log import SnapshotLog, shard_of_many
from .materialized import Projection
from .store import Store

# numpy types torch cannot hold, as the signed type of the same width.
_SIGNED = {np.dtype(np.uint64): np.int64, np.dtype(np.uint32): np.int32}


def tensor(a):
    """A tensor over the numpy array `a`'s memory (no copy)."""
    return torch.from_numpy(a.view(_SIGNED.get(a.dtype, a.dtype)))


def worker_of(users, nshards, nworkers):
    """Which of `nworkers` workers reads each user's records: with no more
    workers than shards, whole shards each (shard % nworkers); with more,
    every worker reads one shard (worker w reads shard w % nshards) and the
    workers of a shard split its users by the same hash."""
    users = np.asarray(users, dtype=np.uint64)
    if nworkers <= 1:
        return np.zeros(len(users), np.int64)
    if nworkers <= nshards:
        return shard_of_many(users, nshards).astype(np.int64) % nworkers
    v = shard_of_many(users, nshards * nworkers).astype(np.int64)  # hash % (S * K): its % S is the shard
    shard, j = v % nshards, v // nshards
    serving = (nworkers - shard + nshards - 1) // nshards  # workers w < K with w % S == shard
    return shard + nshards * (j % serving)


class Batch(dict):
    """A batch: the dict described above. In the process that made it its
    tensors are the materializer's buffers; sent from a DataLoader worker
    to the main process it travels as one shared-memory buffer (one copy,
    one file descriptor) instead of a shared-memory segment per tensor,
    and arrives as views of that buffer."""

    def __reduce__(self):
        leaves, skeleton = [], _strip(self, (), [])
        for path in skeleton.pop("__tensors__"):
            leaves.append((path, _get(self, path)))
        layout, total = [], 0
        for path, t in leaves:
            layout.append((path, t.dtype, tuple(t.shape), total))
            total += (t.numel() * t.element_size() + 7) & ~7
        buf = _shared_bytes(total)
        for (_, dt, _, off), (_, t) in zip(layout, leaves):
            n = t.numel() * t.element_size()
            buf[off:off + n].view(dt).copy_(t.reshape(-1))
        return (_unpack, (buf, layout, skeleton))


def _strip(d, path, tensors):
    """`d` with its tensors left out (their paths listed in
    "__tensors__" of the top level)."""
    out = {}
    for k, v in d.items():
        if isinstance(v, torch.Tensor):
            tensors.append(path + (k,))
        elif isinstance(v, dict):
            out[k] = _strip(v, path + (k,), tensors)
        else:
            out[k] = v
    if not path:
        out["__tensors__"] = tensors
    return out


def _get(d, path):
    for k in path:
        d = d[k]
    return d


def _shared_bytes(n):
    """A uint8 tensor of n bytes in shared memory (made there: nothing to
    copy when it is sent)."""
    try:
        return torch.empty(0, dtype=torch.uint8).set_(torch.UntypedStorage._new_shared(max(n, 1)))
    except (AttributeError, RuntimeError):  # an older or newer torch
        return torch.empty(max(n, 1), dtype=torch.uint8).share_memory_()


def _unpack(buf, layout, skeleton):
    out = Batch(skeleton)
    for path, dt, shape, off in layout:
        n = int(np.prod(shape, dtype=np.int64)) * torch.empty(0, dtype=dt).element_size()
        d = out
        for k in path[:-1]:
            d = d[k]
        d[path[-1]] = buf[off:off + n].view(dt).reshape(shape)
    return out


def batch_dict(res, users, request_ts, present=False):
    """A Materialized as the dataset's dict of tensors (with the presence
    tensors if `present`)."""
    out = Batch(records=len(res), user_id=tensor(users), request_ts=tensor(request_ts), flags=tensor(res.flags))
    for name, g in res.groups.items():
        out[name] = d = {"keys": list(g.values), "values": {t: tensor(v) for t, v in g.values.items()},
                         "lengths": tensor(g.lengths), "offsets": tensor(g.offsets)}
        if present:
            d["present"] = {t: tensor(p) for t, p in g.present.items()}
    return out


def to_kjt(batch, group, traits=None):
    """keys, values and lengths for torchrec's KeyedJaggedTensor over some
    traits of a group of a jagged batch (values of several keys are
    concatenated: a copy; one key is the batch's own tensor)."""
    g = batch[group]
    keys = list(traits or g["keys"])
    if len(keys) == 1:
        return {"keys": keys, "values": g["values"][keys[0]], "lengths": g["lengths"]}
    return {"keys": keys, "values": torch.cat([g["values"][k] for k in keys]),
            "lengths": torch.cat([g["lengths"]] * len(keys))}


class SnapshotDataset(IterableDataset):
    """The records of snapshot `logs` rebuilt from the store at `store`
    (opened read-only in each worker) for `projection`, `batch_size` records
    per batch, in log order within each worker. With a DataLoader use
    batch_size=None (batches come whole). `threads` workers of the C
    materializer rebuild up to `depth` batches ahead of the one being
    consumed. `present`: add each trait's presence tensor (absent values
    are 0 in the values tensors)."""

    def __init__(self, store, logs, projection, batch_size=256, threads=1, depth=2, present=False):
        super().__init__()
        self.store = str(store)
        self.logs = [str(l) for l in ([logs] if isinstance(logs, (str, bytes)) or hasattr(logs, "__fspath__")
                                      else logs)]
        self.projection = projection if isinstance(projection, Projection) else Projection(projection)
        self.batch_size = batch_size
        self.threads = threads
        self.depth = max(depth, 1)
        self.present = present

    def _mine(self, st):
        """(pointers, lengths, users, request_ts, logs) of this worker's records."""
        info = get_worker_info()
        k, w = (info.num_workers, info.id) if info else (1, 0)
        self._worker = w
        parts, logs = [], []
        for path in self.logs:
            log = SnapshotLog(path)
            logs.append(log)
            pick = np.nonzero(worker_of(log.users, st.shards, k) == w)[0]
            parts.append((log.pointers[pick], log.lengths[pick], log.users[pick], log.request_ts[pick]))
        cat = [np.concatenate([p[i] for p in parts]) if parts else np.zeros(0, np.uint64) for i in range(4)]
        return cat[0], cat[1], cat[2], cat[3].astype(np.int64), logs

    def __iter__(self):
        with Store.open(self.store, read_only=True) as st:
            ptrs, lens, users, ts, logs = self._mine(st)
            n = len(ptrs)
            starts = list(range(0, n, self.batch_size))
            with st.materializer(self.projection, threads=self.threads, depth=self.depth) as m:
                sent = 0
                for k, s in enumerate(starts):
                    while sent < len(starts) and sent <= k + self.depth:  # keep the workers ahead
                        a = starts[sent]
                        m.submit((ptrs[a:a + self.batch_size], lens[a:a + self.batch_size]))
                        sent += 1
                    res = m.next()
                    out = batch_dict(res, users[s:s + self.batch_size], ts[s:s + self.batch_size], self.present)
                    out["worker"] = self._worker
                    yield out
            del logs
