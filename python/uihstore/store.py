"""A store (uih/store.h) from Python: create, open, status, load, append,
read, snapshot, materialize. Every call is the C library's."""

import ctypes
import os
import threading
import weakref

from . import _lib as L
from . import _events
from .log import hash_id
from .materialized import Materializer, Projection, materialize

TIERS = {"immutable": 1, "mutable": 2, "all": 3}


def _err():
    return L.uih_error()


class Store:
    """An open store. Safe to share between threads (the C store is); each
    thread gets its own snapshotter. Close it (or use `with`) to release
    the RocksDB databases and, for a read-only store, the generations it
    holds."""

    def __init__(self, handle, path, read_only, shard=None):
        self._h = handle
        self.path = path
        self.read_only = read_only
        self.only_shard = shard  # None: every shard is open
        self.role = "all"  # or "load", "serve" (open's role)
        self._local = threading.local()
        self._snapshotters = []
        self._lock = threading.Lock()
        self._children = weakref.WeakSet()  # materializers, closed before the store

    # ---- opening ----------------------------------------------------------------

    @classmethod
    def create(cls, path, schema, shards=1, chunk_span=3600000):
        """Creates a store at `path` (absent or an empty directory) with the
        schema `schema` (JSON text, or a path to a schema file) and returns
        it opened."""
        origin = "<schema>"
        if not schema.lstrip().startswith("{"):
            origin = os.fspath(schema)
            with open(origin, "rb") as f:
                schema = f.read().decode()
        data = schema.encode()
        opts = L.uih_store_init_opts(shards, chunk_span)
        err = _err()
        L.check(L.uih_store_create(os.fspath(path).encode(), data, len(data), origin.encode(), ctypes.byref(opts),
                                   ctypes.byref(err)), err)
        return cls.open(path)

    ROLES = {"all": 0, "load": 1, "serve": 2}

    @classmethod
    def open(cls, path, read_only=False, keep=2, block_cache_bytes=32 << 20, file_bytes=256 << 20, shard=None,
             role="all", follow_ms=250, cache_bytes=64 << 20):
        """Opens the store at `path`. A read-only store writes nothing and
        holds the generations it opened with until it is closed. `shard`:
        open that shard alone (its database only), so that other processes
        can write the other shards meanwhile — one load per shard; calls
        about other shards' users raise UihError. `role`: "all" (loads,
        appends and snapshots in this process), "load" (loads only: a
        serving process may own the mutable tiers meanwhile) or "serve"
        (appends and snapshots, following other processes' loads every
        `follow_ms`; 0: only when refresh() is called). `cache_bytes`:
        the write-through cache of the mutable tiers of a store that owns
        them (all, serve)."""
        if role not in cls.ROLES:
            raise ValueError("role must be one of %s, not %r" % (", ".join(sorted(cls.ROLES)), role))
        opts = L.uih_store_opts(int(read_only), keep, block_cache_bytes, file_bytes, int(shard is not None),
                                shard or 0, cls.ROLES[role], follow_ms, cache_bytes)
        h = ctypes.c_void_p()
        err = _err()
        L.check(L.uih_store_open(os.fspath(path).encode(), ctypes.byref(opts), ctypes.byref(h), ctypes.byref(err)),
                err)
        st = cls(h.value, os.fspath(path), bool(read_only), shard)
        st.role = "all" if read_only else role
        return st

    def refresh(self):
        """A serving store: serves each shard's newest published generation
        now (as its follower does every follow_ms)."""
        err = _err()
        L.check(L.uih_store_refresh(self._handle(), ctypes.byref(err)), err)

    def cache_stats(self):
        """The write-through cache of a store that owns its mutable tiers: hits, misses, entries, bytes,
        capacity (zeros for other stores)."""
        cs, err = L.uih_cache_stats(), _err()
        L.check(L.uih_store_cache_stats(self._handle(), ctypes.byref(cs), ctypes.byref(err)), err)
        return {f: getattr(cs, f) for f, _ in L.uih_cache_stats._fields_}

    def following(self, shard):
        """The generation a serving store serves for `shard`; raises the
        error of the follower's last attempt to follow a publish, if it
        failed."""
        g, err = ctypes.c_uint32(), _err()
        L.check(L.uih_store_following(self._handle(), shard, ctypes.byref(g), ctypes.byref(err)), err)
        return g.value

    def recovered(self, shard):
        """What opening `shard` recovered from, in words: the torn tails of
        write-ahead logs it dropped (a process stopped mid-record); "" when
        nothing."""
        return L.uih_store_recovered(self._handle(), shard).decode()

    def close(self):
        if self._h is None:
            return
        for m in list(self._children):
            m.close()
        with self._lock:
            for sn in self._snapshotters:
                L.uih_snapshotter_free(sn)
            self._snapshotters = []
        h, self._h = self._h, None
        L.uih_store_close(h)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if getattr(self, "_h", None) is not None:
            self.close()

    def _handle(self):
        if self._h is None:
            raise ValueError("the store is closed")
        return self._h

    def _schema(self):
        return L.uih_store_schema(self._handle())

    # ---- what it holds ------------------------------------------------------------

    @property
    def shards(self):
        return L.uih_store_shards(self._handle())

    @property
    def id(self):
        return L.uih_store_id(self._handle())

    @property
    def user_ids(self):
        """How the store's users are named: "integer", or "string" (a user
        given as a str is its hash_id)."""
        return "string" if L.uih_schema_user_ids(self._schema()) == L.INPUT_STRING else "integer"

    def _user(self, user):
        """A user id as the engine takes it: a str is hashed when the
        schema's user ids are strings, and refused when they are not."""
        if isinstance(user, (str, bytes)):
            if self.user_ids != "string":
                raise TypeError("user %r: this store's user ids are integers" % (user,))
            return hash_id(user.decode() if isinstance(user, bytes) else user)
        return user

    def shard_of(self, user):
        """The shard holding `user` (uih_shard_of)."""
        return L.uih_shard_of(self._user(user), self.shards)

    def schema(self):
        """The store's newest schema: name, version, and per group its id,
        stripe_events and active traits with their types."""
        s = self._schema()
        groups = {}
        for i in range(L.uih_schema_group_count(s)):
            g = L.uih_schema_group_at(s, i).contents
            traits = {}
            for k in range(g.ntraits):
                t = g.traits[k]
                if t.dropped_in == 0:
                    traits[t.name.decode()] = L.uih_type_name(t.type).decode()
            groups[g.name.decode()] = {"id": g.id, "stripe_events": g.stripe_events, "traits": traits}
        return {"name": L.uih_schema_name(s).decode(), "version": L.uih_schema_version(s), "groups": groups}

    def status(self):
        """Per shard: its generations (oldest first, each a dict of its
        record's fields), the current one, the mutable tier's watermark and
        chunk span, and the bytes of both tiers (a store opened for one
        shard: that shard's)."""
        h = self._handle()
        shards = []
        for i in range(self.shards):
            if not L.uih_store_has_shard(h, i):
                continue
            n, cur = ctypes.c_size_t(), ctypes.c_uint32()
            err = _err()
            L.check(L.uih_store_generations(h, i, None, 0, ctypes.byref(n), ctypes.byref(cur), ctypes.byref(err)),
                    err)
            gens = (L.uih_generation * max(n.value, 1))()
            L.check(L.uih_store_generations(h, i, gens, n.value, ctypes.byref(n), ctypes.byref(cur),
                                            ctypes.byref(err)), err)
            imm, mut = ctypes.c_uint64(), ctypes.c_uint64()
            L.check(L.uih_store_sizes(h, i, ctypes.byref(imm), ctypes.byref(mut), ctypes.byref(err)), err)
            wm, has, span = ctypes.c_int64(), ctypes.c_int(), None
            if self.role != "load":  # a loading store leaves the mutable tiers to a server
                m = ctypes.c_void_p()
                L.check(L.uih_store_mutable(h, i, ctypes.byref(m), ctypes.byref(err)), err)
                L.check(L.uih_mutable_watermark(m, ctypes.byref(wm), ctypes.byref(has), ctypes.byref(err)), err)
                span = L.uih_mutable_chunk_span(m)
            shards.append({
                "shard": i,
                "current": cur.value,
                "generations": [{f: getattr(g, f) for f, _ in L.uih_generation._fields_} for g in gens[:n.value]],
                "watermark": wm.value if has.value else None,
                "chunk_span": span,
                "immutable_bytes": imm.value,
                "mutable_bytes": mut.value,
            })
        return {"store": self.path, "id": "%016x" % self.id, "shards": shards, "schema": self.schema()}

    # ---- the daily load ---------------------------------------------------------

    def load(self, files, through=None, lookback=0, shard=None, threads=1, memory=256 << 20, deletes=None,
             rejects=None, schema=None, progress=True, rebuild_dictionaries=False, layout=None, rewrite=False):
        """Loads CSV files (plain, .gz, .zst; directories) as `uih load`
        does and returns its summary as a dict. `rebuild_dictionaries`: as
        `uih load --rebuild-dictionaries` (`files` may then be empty).
        `rewrite`: as `uih load --rewrite`, every shard written whole
        rather than as a layer of the stripes the load changed.
        `layout`: files as published, a dict of uih_input_layout's options
        (uih/csv.h), as `uih load`'s flags: format ("csv", "jsonl"),
        delimiter, group, map ("user_id=userId,ts=timestamp"), columns.
        `progress`: True for a tqdm bar per phase on stderr, a callable
        taking a dict for your own, False for none."""
        if isinstance(files, (str, os.PathLike)):
            files = [files]
        paths = [os.fspath(f).encode() for f in files]
        arr = (ctypes.c_char_p * max(len(paths), 1))(*paths)
        opts = L.uih_load_opts()
        opts.through = -(1 << 63) if through is None else through
        opts.lookback = lookback
        opts.shard = -1 if shard is None else shard
        opts.threads = threads
        opts.memory = memory
        opts.rebuild_dicts = 1 if rebuild_dictionaries else 0
        opts.rewrite = 1 if rewrite else 0
        keep = []
        if deletes is not None:
            opts.deletes = os.fspath(deletes).encode()
        if rejects is not None:
            opts.rejects = os.fspath(rejects).encode()
        if layout:
            unknown = set(layout) - {"format", "delimiter", "group", "map", "columns"}
            if unknown:
                raise ValueError("layout: unknown option(s) %s" % ", ".join(sorted(unknown)))
            lay = L.uih_input_layout(**{k: v.encode() for k, v in layout.items() if v is not None})
            keep.append(lay)
            opts.layout = ctypes.pointer(lay)
        if schema is not None:
            origin = os.fspath(schema)
            with open(origin, "rb") as f:
                text = f.read()
            keep.append(text)
            opts.schema_json = text
            opts.schema_len = len(text)
            opts.schema_origin = origin.encode()
        report, bars = _progress(progress)
        failure = []

        def on_progress(p, _arg):
            try:
                q = p.contents
                report({"phase": q.phase.decode(), "shard": q.shard, "events": q.events, "bytes": q.bytes,
                        "seconds": q.seconds, "done": q.done, "total": q.total, "eta": q.eta})
            except BaseException as e:  # never let an exception cross into C
                failure.append(e)

        cb = L.PROGRESS_FN(on_progress) if report else L.PROGRESS_FN()
        opts.progress = cb
        stats = L.uih_load_stats()
        err = _err()
        try:
            rc = L.uih_load(self._handle(), arr, len(paths), ctypes.byref(opts), ctypes.byref(stats),
                            ctypes.byref(err))
        finally:
            for b in bars.values():
                b.close()
        L.check(rc, err)
        if failure:
            raise failure[0]
        return {f: getattr(stats, f) for f, _ in L.uih_load_stats._fields_}

    # ---- the mutable tier -----------------------------------------------------------

    def _group(self, group):
        s = self._schema()
        if group is None:
            if L.uih_schema_group_count(s) != 1:
                raise ValueError("the schema has several groups: name one")
            return L.uih_schema_group_at(s, 0)
        g = L.uih_schema_group_by_name(s, group.encode()) if isinstance(group, str) else \
            L.uih_schema_group_by_id(s, group)
        if not g:
            raise L.UihError(L.ERR_NOT_FOUND, "the store's schema has no group %r" % (group,))
        return g

    def append(self, user, events, group=None, sync=False):
        """Appends events of one group (a dict of trait name to a numpy array
        or a list, None for absent values; or an Events) to `user`'s
        mutable tier, atomically. Appending the same events again changes
        nothing."""
        g = self._group(group)
        user = self._user(user)
        batches = _events.BatchBuilder(g).build(events)
        try:
            shard = self.shard_of(user)
            m, err = ctypes.c_void_p(), _err()  # a shard this store did not open: the engine's error names it
            L.check(L.uih_store_mutable(self._handle(), shard, ctypes.byref(m), ctypes.byref(err)), err)
            users = (ctypes.c_uint64 * max(len(batches), 1))(*([user] * len(batches)))
            arr = (ctypes.POINTER(L.uih_batch) * max(len(batches), 1))(*batches)
            err = _err()
            L.check(L.uih_mutable_append_many(m, users, arr, len(batches), 1 if sync else 0, ctypes.byref(err)),
                    err)
        finally:
            _events.free(batches)

    def read(self, user, group=None, start=-(1 << 63), end=(1 << 63) - 1, tier="all", generation=0, traits=None):
        """`user`'s events in `group` with start <= ts <= end from `tier`
        ("immutable", "mutable" or "all"), in time order, as Events
        (copied). `traits`: names to read (default every active one;
        "uih_arrival" gives the arrival generation of immutable events)."""
        g = self._group(group)
        bp = ctypes.POINTER(L.uih_batch)()
        err = _err()
        if traits is not None:
            ids = []
            for name in traits:
                if name == "uih_arrival":
                    ids.append(L.TRAIT_ARRIVAL)
                    continue
                t = L.uih_group_trait_by_name(g, name.encode())
                if not t:
                    raise L.UihError(L.ERR_NOT_FOUND, "group %s has no active trait %r" %
                                     (g.contents.name.decode(), name))
                ids.append(t.contents.id)
            arr = (ctypes.c_uint16 * len(ids))(*ids)
            L.check(L.uih_batch_create(g, 64, arr, len(ids), ctypes.byref(bp), ctypes.byref(err)), err)
        try:
            L.check(L.uih_store_read(self._handle(), self._user(user), g.contents.id, start, end, TIERS[tier], generation,
                                     ctypes.byref(bp), ctypes.byref(err)), err)
            ev = _events.from_batch(bp)
            if traits is not None:  # the caller's order, not the batch's (trait id order)
                ev.columns = {k: ev.columns[k] for k in traits}
                ev.present = {k: ev.present[k] for k in traits}
            return ev
        finally:
            L.uih_batch_free(bp)

    # ---- inference and training ------------------------------------------------------

    def _snapshotter(self):
        sn = getattr(self._local, "sn", None)
        if sn is None:
            h = ctypes.c_void_p()
            err = _err()
            L.check(L.uih_snapshotter_create(self._handle(), ctypes.byref(h), ctypes.byref(err)), err)
            sn = self._local.sn = h.value
            with self._lock:
                self._snapshotters.append(sn)
        return sn

    def snapshot(self, user, ts, spec):
        """The sequences a model gets for `user` at request time `ts`: `spec`
        maps group names to their lengths ({"engagement": 256}, or
        "NAME[:N]" strings). Returns (sequences, record): per group an
        Events (every active trait), and the record's bytes to log."""
        if isinstance(spec, str):
            spec = [spec]
        if not isinstance(spec, dict):
            spec = {n: int(l) if l else 1024 for n, _, l in (s.partition(":") for s in spec)}
        c = L.uih_snapshot_spec()
        c.ngroups = len(spec)
        if c.ngroups == 0 or c.ngroups > L.SNAPSHOT_GROUPS_MAX:
            raise ValueError("a spec has 1..%d groups" % L.SNAPSHOT_GROUPS_MAX)
        names = list(spec)
        for i, name in enumerate(names):
            c.groups[i].group = self._group(name).contents.id
            c.groups[i].max_length = spec[name]
        seqs = ctypes.POINTER(ctypes.POINTER(L.uih_batch))()
        rec = L.U8P()
        n = ctypes.c_size_t()
        err = _err()
        L.check(L.uih_snapshot(self._snapshotter(), self._user(user), ts, ctypes.byref(c), ctypes.byref(seqs),
                               ctypes.byref(rec), ctypes.byref(n), ctypes.byref(err)), err)
        out = {name: _events.from_batch(seqs[i]) for i, name in enumerate(names)}
        return out, ctypes.string_at(rec, n.value)

    def materialize(self, records, projection):
        """Rebuilds `records` (a list of record bytes) for `projection` (a
        Projection, or what Projection() takes) into one Materialized."""
        if not isinstance(projection, Projection):
            projection = Projection(projection)
        return materialize(self, records, projection)

    def materializer(self, projection, threads=1, depth=0, each_record=False, no_batch_reads=False):
        """A Materializer of this store's records for `projection`."""
        if not isinstance(projection, Projection):
            projection = Projection(projection)
        m = Materializer(self, projection, threads, depth, each_record, no_batch_reads)
        self._children.add(m)
        return m


def _progress(progress):
    """(report, bars): a function taking a progress dict, and the tqdm bars
    it draws (closed after the load)."""
    if not progress:
        return None, {}
    if callable(progress):
        return progress, {}
    from tqdm import tqdm

    bars = {}
    units = {"read": ("B", True), "merge": ("events", False), "publish": ("shards", False)}

    def report(p):
        phase = p["phase"]
        bar = bars.get(phase)
        if bar is None:
            unit, scale = units.get(phase, ("", False))
            bar = bars[phase] = tqdm(total=p["total"] or None, desc=phase, unit=unit, unit_scale=scale,
                                     leave=True)
        if p["total"] and bar.total != p["total"]:
            bar.total = p["total"]
        bar.update(p["done"] - bar.n)

    return report, bars
