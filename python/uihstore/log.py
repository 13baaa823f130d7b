"""Snapshot logs (uih/snapshot.h): what inference appends records to and
training reads them back from. Reading holds a log in memory whole and
indexes it with one C call (uih_snapshot_log_index), so batches of records
go to the materializer as arrays of pointers, never a call per record."""

import ctypes
import os

import numpy as np

from . import _lib as L


class SnapshotLog:
    """A snapshot log read whole: `users`, `request_ts`, `offsets`, `lengths`
    and `numbers` are numpy arrays, one entry per record in log order;
    `numbers[i]` is entry i's own record number (what `uih log dump` and
    `uih materialize` print); `data` holds the file's bytes.

    By default a log cut or damaged anywhere raises UihError naming the
    bytes and the records lost (`uih log check` lists every damage), so
    entry i is record number i. With past_damage=True the log is read as
    `uih materialize --on-mismatch flag` reads it: every damaged span is
    stepped over and said in `damage` (a list of messages, empty when
    whole), every record that survives keeps its own number (a lost record
    never shifts a later one), and `sealed` says whether the log ended on
    its seal (a rotated log cut short reads as not sealed)."""

    def __init__(self, path, past_damage=False):
        self.path = os.fspath(path)
        self.data = np.fromfile(self.path, dtype=np.uint8)
        self.damage = []
        name = self.path.encode()
        ptr = self.data.ctypes.data if len(self.data) else None
        count = self._index(ptr, name, 0, None, past_damage)
        self.offsets = np.zeros(count, np.uint64)
        self.lengths = np.zeros(count, np.uint64)
        self.numbers = np.arange(count, dtype=np.uint64)
        self.users = np.zeros(count, np.uint64)
        self.request_ts = np.zeros(count, np.int64)
        self.damage = []
        self._index(ptr, name, count, (self.offsets, self.lengths, self.numbers, self.users, self.request_ts),
                    past_damage)
        # Each record's address, for the materializer's array of pointers.
        self.pointers = (self.offsets + np.uint64(self.data.ctypes.data)) if count else self.offsets

    def _index(self, ptr, name, cap, arrays, past_damage):
        """One pass of the C index: the records it holds (into `arrays` up
        to `cap`), the damage it met."""
        n = ctypes.c_size_t()
        err = L.uih_error()
        ptrs = [a.ctypes.data for a in arrays] if arrays else [None] * 5
        if not past_damage:
            L.check(L.uih_snapshot_log_index(ptr, len(self.data), name, ptrs[0], ptrs[1], ptrs[3], ptrs[4], cap,
                                             ctypes.byref(n), ctypes.byref(err)), err)
            self.sealed = None  # not asked
            return n.value
        said = []
        on_damage = L.LOG_DAMAGE_FN(lambda _arg, what: said.append(what.decode(errors="replace")))
        sealed = ctypes.c_int()
        L.check(L.uih_snapshot_log_index_past_damage(ptr, len(self.data), name, *ptrs, cap, ctypes.byref(n),
                                                     ctypes.byref(sealed), on_damage, None, ctypes.byref(err)), err)
        self.damage = said
        self.sealed = bool(sealed.value)
        return n.value

    def __len__(self):
        return len(self.offsets)

    def record(self, i):
        """Record i's bytes (a copy)."""
        o, n = int(self.offsets[i]), int(self.lengths[i])
        return self.data[o:o + n].tobytes()

    def __iter__(self):
        return (self.record(i) for i in range(len(self)))

    def shards(self, nshards):
        """Each record's shard among `nshards` (uih_shard_of of its user)."""
        return shard_of_many(self.users, nshards)


def shard_of_many(users, nshards):
    """uih_shard_of of each user id in `users` (a uint64 array), at once."""
    users = np.ascontiguousarray(users, dtype=np.uint64)
    out = np.zeros(len(users), np.uint32)
    if len(users):
        L.uih_shard_of_many(users.ctypes.data, len(users), nshards, out.ctypes.data)
    return out


def hash_ids(strings):
    """The 64-bit id a store keeps for each string id (uih_hash_id: XXH3-64
    of its UTF-8 bytes, stable forever; the loader, `uih hash` and this
    agree), as a uint64 array: `strings` is any sequence of str (a list, a
    numpy array of str or object), or of bytes, taken as they are."""
    encoded = [s if isinstance(s, (bytes, bytearray)) else str(s).encode("utf-8") for s in strings]
    offsets = np.zeros(len(encoded) + 1, np.uint64)
    if encoded:
        np.cumsum([len(e) for e in encoded], out=offsets[1:])
    data = np.frombuffer(b"".join(encoded), dtype=np.uint8) if offsets[-1] else np.zeros(1, np.uint8)
    out = np.zeros(len(encoded), np.uint64)
    if len(encoded):
        L.uih_hash_ids(data.ctypes.data, offsets.ctypes.data, len(encoded), out.ctypes.data)
    return out


def hash_id(string):
    """hash_ids of one string: its id, an int."""
    return int(hash_ids([string])[0])


def decode_record(record):
    """A record's fields as a dict (version, store, user_id, request_ts,
    schema_version, generation, groups: per group id, length, generation,
    start_ts, end_ts, mutable_bytes) and `text`, its text form (as `uih log
    dump` prints it). UihError for a record that does not decode."""
    buf = bytes(record)
    r = L.uih_snapshot_record()
    err = L.uih_error()
    L.check(L.uih_snapshot_record_decode(buf, len(buf), ctypes.byref(r), ctypes.byref(err)), err)
    need = L.uih_snapshot_record_format(ctypes.byref(r), None, 0)
    text = ctypes.create_string_buffer(need + 1)
    L.uih_snapshot_record_format(ctypes.byref(r), text, need + 1)
    groups = []
    for i in range(r.ngroups):
        g = r.groups[i]
        groups.append({"group": g.group, "length": g.length, "generation": g.generation, "start_ts": g.start_ts,
                       "end_ts": g.end_ts, "mutable_bytes": g.mutable_len})
    return {"version": r.version, "store": r.store, "user_id": r.user_id, "request_ts": r.request_ts,
            "schema_version": r.schema_version, "generation": r.generation, "groups": groups,
            "text": text.value.decode()}


class LogWriter:
    """Appends records to a snapshot log file (created when absent; a torn
    last record a killed writer left is cut first, as `uih snapshot --log`
    does). Use as a context manager, or close()."""

    def __init__(self, path):
        self.path = os.fspath(path)
        self._f = L.fopen(self.path.encode(), b"a+b")
        if not self._f:
            raise L.UihError(L.ERR_IO, "%s: %s" % (self.path, os.strerror(ctypes.get_errno() or 5)))
        records, dropped = ctypes.c_uint64(), ctypes.c_uint64()
        err = L.uih_error()
        rc = L.uih_snapshot_log_repair(self._f, self.path.encode(), ctypes.byref(records), ctypes.byref(dropped),
                                       ctypes.byref(err))
        if rc != L.OK:
            L.fclose(self._f)
            self._f = None
            L.check(rc, err)
        self.records = records.value
        self.dropped = dropped.value

    def append(self, record):
        if self._f is None:
            raise ValueError("the log writer is closed")
        buf = bytes(record)
        err = L.uih_error()
        L.check(L.uih_snapshot_log_write(self._f, self.records, buf, len(buf), ctypes.byref(err)), err)
        self.records += 1

    def flush(self):
        if self._f is not None and L.fflush(self._f) != 0:
            raise L.UihError(L.ERR_IO, "%s: flushing failed" % self.path)

    def close(self):
        if self._f is not None:
            f, self._f = self._f, None
            if L.fclose(f) != 0:
                raise L.UihError(L.ERR_IO, "%s: closing failed" % self.path)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if getattr(self, "_f", None) is not None:
            L.fclose(self._f)
