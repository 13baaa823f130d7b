"""Training-time reconstruction (uih/materialize.h) for Python: projections,
results whose arrays are the C library's own buffers (no copy; the result
is freed when the last array of it is gone), and the materializer's worker
threads."""

import ctypes

import numpy as np

from . import _lib as L
from ._events import DTYPES

LAYOUTS = {"shared": L.LAYOUT_SHARED, "jagged": L.LAYOUT_JAGGED}
POLICIES = {"fail": L.MISMATCH_FAIL, "skip": L.MISMATCH_SKIP, "flag": L.MISMATCH_FLAG}


class Projection:
    """What a training job wants of each record: per group, its newest
    `max_length` events with some traits (all active ones when none are
    named), the mismatch policy ("fail", "skip" or "flag") and the output
    layout ("shared": a user's records are windows into rows written once;
    "jagged": each record's rows on their own, values + lengths).

        Projection({"engagement": 256})
        Projection({"engagement": (128, ["event_ts", "item_id"])}, on_mismatch="flag", layout="jagged")
        Projection.parse(["engagement:128"], traits="ts,item_id")   # as the CLI's flags
    """

    def __init__(self, groups, on_mismatch="fail", layout="shared"):
        if on_mismatch not in POLICIES:
            raise ValueError("on_mismatch %r: expected one of %s" % (on_mismatch, ", ".join(POLICIES)))
        if layout not in LAYOUTS:
            raise ValueError("layout %r: expected one of %s" % (layout, ", ".join(LAYOUTS)))
        self.groups = {}
        for name, want in dict(groups).items():
            if isinstance(want, int):
                self.groups[name] = (want, None)
            elif isinstance(want, dict):
                self.groups[name] = (int(want["max_length"]), want.get("traits"))
            else:
                length, traits = want
                self.groups[name] = (int(length), list(traits) if traits is not None else None)
        if not self.groups:
            raise ValueError("a projection needs at least one group")
        self.on_mismatch = on_mismatch
        self.layout = layout

    @classmethod
    def parse(cls, groups, traits=None, on_mismatch="fail", layout="shared", default_length=1024):
        """From the CLI's forms: groups as "NAME[:N]" strings, traits as
        "a,b" (for every group)."""
        out = {}
        for g in groups:
            name, _, n = g.partition(":")
            out[name] = (int(n) if n else default_length, traits.split(",") if traits else None)
        return cls(out, on_mismatch, layout)

    def to_c(self, schema):
        """The uih_projection for `schema` (a pointer to the store's)."""
        p = L.uih_projection()
        p.ngroups = len(self.groups)
        if p.ngroups > L.SNAPSHOT_GROUPS_MAX:
            raise ValueError("%d groups, at most %d" % (p.ngroups, L.SNAPSHOT_GROUPS_MAX))
        for i, (name, (length, traits)) in enumerate(self.groups.items()):
            g = L.uih_schema_group_by_name(schema, name.encode())
            if not g:
                raise L.UihError(L.ERR_NOT_FOUND, "projection: the store's schema has no group %r" % name)
            pg = p.groups[i]
            pg.group = g.contents.id
            pg.max_length = length
            names = traits or []
            if len(names) > L.PROJECTION_TRAITS_MAX:
                raise ValueError("group %s: %d traits, at most %d" % (name, len(names), L.PROJECTION_TRAITS_MAX))
            pg.ntraits = len(names)
            for k, tn in enumerate(names):
                if tn == "uih_arrival":
                    pg.traits[k] = L.TRAIT_ARRIVAL
                    continue
                t = L.uih_group_trait_by_name(g, tn.encode())
                if not t:
                    raise L.UihError(L.ERR_NOT_FOUND, "projection: group %s has no active trait %r" % (name, tn))
                pg.traits[k] = t.contents.id
        p.on_mismatch = POLICIES[self.on_mismatch]
        p.layout = LAYOUTS[self.layout]
        return p


class _Owner:
    """Owns a uih_materialized: frees it when the last of the result and
    the arrays viewing it is gone. Neither holds the other's container, so
    no reference cycle delays the free to a garbage collection."""

    __slots__ = ("handle",)

    def __init__(self, handle):
        self.handle = handle

    def __del__(self):
        h, self.handle = self.handle, None
        if h:
            L.uih_materialized_free(h)


class _View:
    """Exposes `count` values at `address` to numpy (its
    __array_interface__) and keeps `owner` — what frees them — alive for as
    long as any array made from it is: numpy keeps this object as the
    array's base."""

    __slots__ = ("owner", "__array_interface__")

    def __init__(self, owner, address, count, dtype):
        self.owner = owner
        self.__array_interface__ = {"data": (address or 0, False), "shape": (count,),
                                    "typestr": np.dtype(dtype).str, "version": 3}


def _array(owner, address, count, dtype):
    if count == 0:
        return np.zeros(0, dtype)
    return np.asarray(_View(owner, address, count, dtype))


class MatGroup:
    """One projected group of a batch: per trait a values array (`values`,
    by trait name) and a presence array (`present`, 1 where the event has
    a value; made on first use) for the whole batch, and per record
    `offsets` (its first row) and `lengths` (its events). All are views of
    the result's buffers."""

    def __init__(self, owner, records, mg, group, names):
        self.group = group
        self.rows = mg.rows
        self._owner = owner
        self.offsets = _array(owner, mg.offsets, records, np.uint64)
        self.lengths = _array(owner, mg.lengths, records, np.uint32)
        self.values, self.types = {}, {}
        self._present_at = {}
        for c in range(mg.ncolumns):
            col = mg.columns[c]
            name = names[col.trait]
            self.values[name] = _array(owner, col.values, mg.rows, DTYPES[col.type])
            self.types[name] = col.type
            self._present_at[name] = col.present
        self._present = None

    @property
    def present(self):
        if self._present is None:
            self._present = {k: _array(self._owner, a, self.rows, np.uint8) for k, a in self._present_at.items()}
        return self._present

    def sequence(self, i):
        """Record i's sequence: a dict of trait name to its values (views)."""
        o, n = int(self.offsets[i]), int(self.lengths[i])
        return {k: v[o:o + n] for k, v in self.values.items()}


class Materialized:
    """The rebuilt sequences of one batch of records, in the batch's order:
    `flags` per record (RECORD_* bits), `groups` by name (MatGroup), and
    `stats` (a dict, as uih_materialize_stats). Its arrays are the C
    result's memory: nothing is copied, and the memory is freed when this
    object and every array taken from it are gone."""

    def __init__(self, handle, stats, store_schema, projection, names=None):
        self._owner = _Owner(handle)  # frees it after the last view
        self._handle = handle
        self.records = L.uih_materialized_records(handle)
        self.flags = _array(self._owner, L.uih_materialized_flags(handle), self.records, np.uint8)
        self._stats = stats
        self.layout = projection.layout
        self.groups = {}
        names = {} if names is None else names  # (group id, trait id) -> trait name, kept by a Materializer
        for i, name in enumerate(projection.groups):
            mg = L.uih_materialized_group(handle, i).contents
            tnames = names.get(mg.group)
            if tnames is None or any(mg.columns[c].trait not in tnames for c in range(mg.ncolumns)):
                tnames = names[mg.group] = _trait_names(store_schema, mg)
            self.groups[name] = MatGroup(self._owner, self.records, mg, name, tnames)

    @property
    def stats(self):
        """What the batch took (uih_materialize_stats) as a dict."""
        return {k: getattr(self._stats, k) for k in L.MATERIALIZE_STATS}

    def __len__(self):
        return self.records

    def __getitem__(self, group):
        return self.groups[group]

    @property
    def mismatched(self):
        """Indexes of the records flagged as not what was logged."""
        bad = L.RECORD_MISMATCH | L.RECORD_UNREADABLE | L.RECORD_OTHER_STORE
        return np.nonzero(self.flags & bad)[0]

    def why(self, i):
        """Why record i is flagged, in words (the group and what failed:
        its stripes damaged, its identities different, its user erased...);
        "" for a record that is not."""
        if not 0 <= i < self.records:
            raise IndexError(i)
        return L.uih_materialized_why(self._handle, i).decode()



def _trait_names(schema, mg):
    """Trait id -> name of a result group's columns."""
    g = L.uih_schema_group_by_id(schema, mg.group)
    out = {}
    for c in range(mg.ncolumns):
        tid = mg.columns[c].trait
        out[tid] = "uih_arrival" if tid == L.TRAIT_ARRIVAL else L.uih_group_trait_by_id(g, tid).contents.name.decode()
    return out


def pointer_arrays(records):
    """(pointers, lengths, n, keep) for uih_materialize from a list of
    bytes, or from a (pointers, lengths) pair of uint64 arrays (a
    SnapshotLog's slices); `keep` holds what the pointers point into."""
    if isinstance(records, tuple):
        ptrs, lens = records
        ptrs = np.ascontiguousarray(ptrs, dtype=np.uint64)
        lens = np.ascontiguousarray(lens, dtype=np.uint64)
        return ptrs, lens, len(lens), (ptrs, lens)
    bufs = [bytes(r) for r in records]
    n = len(bufs)
    ptrs = (ctypes.c_char_p * max(n, 1))(*bufs)
    lens = (ctypes.c_size_t * max(n, 1))(*[len(b) for b in bufs])
    return ptrs, lens, n, (bufs, ptrs, lens)


def _addr(a):
    return a.ctypes.data if isinstance(a, np.ndarray) else ctypes.addressof(a)


def materialize(store, records, projection):
    """uih_materialize of `records` (a list of bytes, or (pointers,
    lengths) arrays) for `projection` on `store` (a Store)."""
    ptrs, lens, n, keep = pointer_arrays(records)
    p = projection.to_c(store._schema())
    out = ctypes.c_void_p()
    stats = L.uih_materialize_stats()
    err = L.uih_error()
    L.check(L.uih_materialize(store._h, _addr(ptrs), _addr(lens), n, ctypes.byref(p), ctypes.byref(out),
                              ctypes.byref(stats), ctypes.byref(err)), err)
    del keep
    return Materialized(out.value, stats, store._schema(), projection)


class Materializer:
    """A materializer (uih_materializer): `threads` workers rebuild whole
    batches while the caller uses earlier ones; submit() queues a batch
    (its records are copied), next() returns the oldest one's Materialized,
    in submission order. One caller thread at a time."""

    def __init__(self, store, projection, threads=1, depth=0, each_record=False, no_batch_reads=False):
        self._store = store  # the store outlives the materializer
        self.projection = projection
        o = L.uih_materializer_opts(threads, depth, int(each_record), int(no_batch_reads))
        p = projection.to_c(store._schema())
        h = ctypes.c_void_p()
        err = L.uih_error()
        L.check(L.uih_materializer_create(store._h, ctypes.byref(p), ctypes.byref(o), ctypes.byref(h),
                                          ctypes.byref(err)), err)
        self._h = h.value
        self.pending = 0
        self._names = {}  # trait names of the results' columns, looked up once

    def submit(self, records):
        ptrs, lens, n, keep = pointer_arrays(records)
        err = L.uih_error()
        L.check(L.uih_materializer_submit(self._h, _addr(ptrs), _addr(lens), n, ctypes.byref(err)), err)
        self.pending += 1

    def next(self):
        out = ctypes.c_void_p()
        stats = L.uih_materialize_stats()
        err = L.uih_error()
        rc = L.uih_materializer_next(self._h, ctypes.byref(out), ctypes.byref(stats), ctypes.byref(err))
        if rc != L.ERR_NOT_FOUND:
            self.pending -= 1
        L.check(rc, err)
        return Materialized(out.value, stats, self._store._schema(), self.projection, self._names)

    def close(self):
        h, self._h = getattr(self, "_h", None), None
        if h:
            L.uih_materializer_free(h)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()
