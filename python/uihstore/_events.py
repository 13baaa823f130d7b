"""Events between numpy and the engine's batches (uih/batch.h): a batch's
columns copied out as arrays, and arrays or lists copied into a batch for
an append. Zero-copy is for the materializer's output (materialized.py);
a batch here is reused by the next call, so its events are copied."""

import ctypes

import numpy as np

from . import _lib as L

# The numpy type of each trait type, as a batch holds its values.
DTYPES = {
    L.TYPE_TIMESTAMP: np.dtype(np.int64),
    L.TYPE_ID: np.dtype(np.uint64),
    L.TYPE_INT64: np.dtype(np.int64),
    L.TYPE_UINT32: np.dtype(np.uint32),
    L.TYPE_FLOAT32: np.dtype(np.float32),
    L.TYPE_CATEGORY: np.dtype(np.uint32),
    L.TYPE_FLAG: np.dtype(np.uint8),
}


def trait_name(trait_ptr):
    t = trait_ptr.contents
    return t.name.decode() if t.id != L.TRAIT_ARRIVAL else "uih_arrival"


class Events:
    """One group's events in time order: `columns` maps each trait's name to
    its values (absent values are 0), `present` to a bool array that is
    False where an event has no value for the trait."""

    __slots__ = ("group", "columns", "present")

    def __init__(self, group, columns, present):
        self.group = group
        self.columns = columns
        self.present = present

    def __len__(self):
        return len(next(iter(self.columns.values()))) if self.columns else 0

    def __getitem__(self, trait):
        return self.columns[trait]

    def __repr__(self):
        return "Events(%s, %d events, traits %s)" % (self.group, len(self), list(self.columns))

    def __eq__(self, other):
        if not isinstance(other, Events) or self.group != other.group or list(self.columns) != list(other.columns):
            return False
        return all(np.array_equal(self.columns[k], other.columns[k]) and
                   np.array_equal(self.present[k], other.present[k]) for k in self.columns)


def from_batch(bp):
    """The events of the batch at pointer `bp`, copied."""
    b = bp.contents
    n = b.count
    group = b.group.contents.name.decode()
    columns, present = {}, {}
    for c in range(b.ncolumns):
        col = b.columns[c]
        t = col.trait.contents
        name = trait_name(col.trait)
        dt = DTYPES[t.type]
        if n:
            vals = np.ctypeslib.as_array(ctypes.cast(col.values, ctypes.POINTER(ctypes.c_uint8)),
                                         shape=(n * dt.itemsize,)).view(dt).copy()
            words = np.ctypeslib.as_array(col.present, shape=((n + 63) // 64,))
            bits = np.unpackbits(words.view(np.uint8), bitorder="little")[:n].astype(bool)
        else:
            vals = np.zeros(0, dt)
            bits = np.zeros(0, bool)
        columns[name] = vals
        present[name] = bits
    return Events(group, columns, present)


def _column_input(values, n, dt, name):
    """values (an array, or a list with None for absent values) as an
    array of `dt` and a presence mask."""
    if isinstance(values, np.ma.MaskedArray):
        mask = ~np.ma.getmaskarray(values)
        arr = np.asarray(values.filled(0), dtype=dt)
    elif isinstance(values, np.ndarray):
        mask = np.ones(len(values), bool)
        arr = values.astype(dt, copy=False)
    else:
        values = list(values)
        mask = np.array([v is not None for v in values], bool)
        arr = np.array([0 if v is None else v for v in values], dtype=dt)
    if len(arr) != n or arr.ndim != 1:
        raise ValueError("trait %r: %d values, expected %d (one per event)" % (name, len(arr), n))
    return np.ascontiguousarray(arr), mask


def _hashed(values):
    """String ids (a list or array of str, None or masked for absent) as
    their uih_hash_id; ids given as integers pass as they are."""
    from .log import hash_ids
    if isinstance(values, np.ma.MaskedArray):
        absent = np.ma.getmaskarray(values)
        values = list(values.data)
    elif isinstance(values, np.ndarray) and values.dtype.kind not in "UOS":
        return values
    else:
        values = list(values)
        absent = np.array([v is None for v in values], bool)
    strs = [v for v, a in zip(values, absent) if not a]
    if not any(isinstance(v, (str, bytes)) for v in strs):
        return np.ma.MaskedArray(np.array([0 if a else v for v, a in zip(values, absent)], np.uint64), mask=absent)
    if not all(isinstance(v, (str, bytes)) for v in strs):
        raise ValueError("string ids mixed with other values")
    ids = np.zeros(len(values), np.uint64)
    ids[~absent] = hash_ids([v.decode() if isinstance(v, bytes) else v for v in strs])
    return np.ma.MaskedArray(ids, mask=absent)


class BatchBuilder:
    """Builds engine batches of one group from numpy arrays or lists, for
    appends: every active trait of the group is a column; traits the input
    does not name stay absent."""

    def __init__(self, group_ptr):
        self.group = group_ptr
        g = group_ptr.contents
        self.traits = {}
        for i in range(g.ntraits):
            t = g.traits[i]
            if t.dropped_in == 0:
                self.traits[t.name.decode()] = t
        self.ts_name = g.ts.contents.name.decode()

    def build(self, events):
        """A list of batches (each at most UIH_STRIPE_EVENTS_MAX events)
        holding `events`: a dict of trait name to values, the timestamp's
        required. The caller frees them (free())."""
        if hasattr(events, "columns") and hasattr(events, "present"):  # an Events
            events = {k: np.ma.MaskedArray(v, mask=~events.present[k]) for k, v in events.columns.items()}
        unknown = [k for k in events if k not in self.traits]
        if unknown:
            raise ValueError("group %s has no active trait %s (it has %s)" %
                             (self.group.contents.name.decode(), ", ".join(map(repr, unknown)),
                              ", ".join(self.traits)))
        if self.ts_name not in events:
            raise ValueError("events need the timestamp trait %r" % self.ts_name)
        n = len(events[self.ts_name])
        cols = {}
        for name, values in events.items():
            t = self.traits[name]
            if t.type == L.TYPE_ID and t.input == L.INPUT_STRING:
                values = _hashed(values)
            arr, mask = _column_input(values, n, DTYPES[t.type], name)
            if name == self.ts_name and not mask.all():
                raise ValueError("every event needs its timestamp %r" % name)
            cols[t.id] = (arr, mask)
        batches = []
        try:
            for start in range(0, max(n, 1), L.STRIPE_EVENTS_MAX):
                count = min(L.STRIPE_EVENTS_MAX, n - start)
                if count <= 0:
                    break
                bp = ctypes.POINTER(L.uih_batch)()
                err = L.uih_error()
                L.check(L.uih_batch_create(self.group, count, None, 0, ctypes.byref(bp), ctypes.byref(err)), err)
                batches.append(bp)
                b = bp.contents
                for c in range(b.ncolumns):
                    col = b.columns[c]
                    got = cols.get(col.trait.contents.id)
                    if got is None:
                        continue
                    arr, mask = got
                    part = arr[start:start + count]
                    ctypes.memmove(col.values, part.ctypes.data, part.nbytes)
                    words = np.packbits(mask[start:start + count], bitorder="little")
                    ctypes.memmove(col.present, words.ctypes.data, words.nbytes)
                b.count = count
        except BaseException:
            free(batches)
            raise
        return batches


def free(batches):
    for bp in batches:
        L.uih_batch_free(bp)
