"""The C API through ctypes: the libraries found and loaded, the structs the
headers declare mirrored field for field, every function given its
prototype, and errors turned into UihError.

Nothing here reimplements the engine: every call goes to libuihstore (the
engine: schemas, batches, records, logs) or libuih_rocksdb (stores, loads,
snapshots, materialization). The layouts below must match the headers;
tests/python/abi_layout.c prints the C compiler's sizes and offsets and a
test compares them with these.
"""

import ctypes
import ctypes.util
import os
from ctypes import (CFUNCTYPE, POINTER, Structure, c_char, c_char_p, c_double, c_int, c_int32, c_int64,
                    c_size_t, c_uint, c_uint8, c_uint16, c_uint32, c_uint64, c_void_p)

# ---- errors -------------------------------------------------------------------

OK = 0
ERR_INVALID_ARGUMENT = 1
ERR_NO_MEMORY = 2
ERR_IO = 3
ERR_CORRUPTION = 4
ERR_SCHEMA = 5
ERR_PARSE = 6
ERR_NOT_FOUND = 7
ERR_NOT_SUPPORTED = 8
ERR_TYPE_MISMATCH = 9
ERR_OUT_OF_RANGE = 10
ERR_INCOMPATIBLE = 11
ERR_INTERNAL = 12

CODE_NAMES = {
    ERR_INVALID_ARGUMENT: "invalid argument", ERR_NO_MEMORY: "no memory", ERR_IO: "io",
    ERR_CORRUPTION: "corruption", ERR_SCHEMA: "schema", ERR_PARSE: "parse", ERR_NOT_FOUND: "not found",
    ERR_NOT_SUPPORTED: "not supported", ERR_TYPE_MISMATCH: "type mismatch", ERR_OUT_OF_RANGE: "out of range",
    ERR_INCOMPATIBLE: "incompatible", ERR_INTERNAL: "internal",
}


class UihError(Exception):
    """An engine error: `code` is the C API's (uih/error.h), `message` its
    message, as the C library wrote it."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code
        self.message = message

    @property
    def code_name(self):
        return CODE_NAMES.get(self.code, "unknown error")

    def __reduce__(self):  # raised in a worker process, re-raised in the caller's
        return (UihError, (self.code, self.message))


class uih_error(Structure):
    _fields_ = [("code", c_int), ("msg", c_char * 512)]


def check(rc, err):
    """Raises UihError for a nonzero return code, with err's message."""
    if rc != OK:
        msg = err.msg.decode("utf-8", "replace") or CODE_NAMES.get(rc, "error %d" % rc)
        raise UihError(rc, msg)


# ---- the libraries ------------------------------------------------------------------

_HERE = os.path.dirname(os.path.abspath(__file__))


def _candidates():
    """Directories that may hold libuih_rocksdb.so.0 and libuihstore.so.0,
    in the order they are tried: $UIHSTORE_LIBDIR, then a build tree this
    package sits in (python/ of a checkout: build/release), then the
    system's library path."""
    dirs = []
    env = os.environ.get("UIHSTORE_LIBDIR")
    if env:
        dirs.append(env)
    root = os.path.dirname(os.path.dirname(_HERE))
    for build in ("release", "sanitize"):
        dirs.append(os.path.join(root, "build", build))
    return dirs


def _find(name, subdir):
    for d in _candidates():
        for sub in (subdir, ""):
            path = os.path.join(d, sub, "lib%s.so.0" % name)
            if os.path.exists(path):
                return path
    found = ctypes.util.find_library(name)
    return found or "lib%s.so.0" % name


def _load():
    engine_path = _find("uihstore", "engine")
    rocks_path = _find("uih_rocksdb", "")
    try:
        # The engine first and global, so the plugin library resolves its
        # engine symbols to this copy (its RUNPATH may name another).
        engine = ctypes.CDLL(engine_path, mode=ctypes.RTLD_GLOBAL)
        rocks = ctypes.CDLL(rocks_path)
    except OSError as e:
        raise ImportError(
            "uihstore: cannot load the C libraries (%s); build them (scripts/build) or install them, or set "
            "UIHSTORE_LIBDIR to the directory holding libuih_rocksdb.so.0 and libuihstore.so.0" % e) from None
    return engine, rocks, engine_path, rocks_path


engine, rocks, ENGINE_PATH, ROCKSDB_PATH = _load()
libc = ctypes.CDLL(None, use_errno=True)

# ---- schema, batches ----------------------------------------------------------------

TYPE_TIMESTAMP, TYPE_ID, TYPE_INT64, TYPE_UINT32, TYPE_FLOAT32, TYPE_CATEGORY, TYPE_FLAG = range(1, 8)
INPUT_NATIVE, INPUT_STRING = 0, 1  # uih_input: how inputs spell ids (string ids are hashed)
TRAIT_ARRIVAL = 65535
STRIPE_EVENTS_MAX = 65536
SNAPSHOT_GROUPS_MAX = 32
PROJECTION_TRAITS_MAX = 64


class uih_trait(Structure):
    _fields_ = [("name", c_char_p), ("id", c_uint16), ("type", c_int), ("encodings", c_uint32),
                ("compression", c_int), ("added_in", c_uint32), ("dropped_in", c_uint32),
                ("ncategories", c_uint32), ("categories", POINTER(c_char_p)), ("input", c_int), ("unit", c_int)]


class uih_group(Structure):
    _fields_ = [("name", c_char_p), ("id", c_uint16), ("stripe_events", c_uint32), ("ntraits", c_uint32),
                ("traits", POINTER(uih_trait)), ("ts", POINTER(uih_trait)), ("schema_version", c_uint32)]


class uih_column(Structure):
    _fields_ = [("trait", POINTER(uih_trait)), ("values", c_void_p), ("present", POINTER(c_uint64))]


class uih_batch(Structure):
    _fields_ = [("group", POINTER(uih_group)), ("count", c_uint32), ("capacity", c_uint32),
                ("ncolumns", c_uint32), ("columns", POINTER(uih_column))]


# ---- store, loads, generations --------------------------------------------------------


class uih_store_opts(Structure):
    _fields_ = [("read_only", c_int), ("keep", c_uint32), ("block_cache_bytes", c_size_t),
                ("file_bytes", c_uint64), ("one_shard", c_int), ("shard", c_uint32), ("role", c_uint),
                ("follow_ms", c_uint32), ("cache_bytes", c_size_t)]


class uih_cache_stats(Structure):
    _fields_ = [(n, c_uint64) for n in ("hits", "misses", "entries", "bytes", "capacity")]


class uih_store_init_opts(Structure):
    _fields_ = [("shards", c_uint32), ("chunk_span", c_int64)]


class uih_generation(Structure):
    _fields_ = [(n, c_uint32) for n in ("generation", "parent", "schema_version", "shard")] + \
               [("through", c_int64), ("horizon", c_int64)] + \
               [(n, c_uint64) for n in ("events", "stripes", "histories", "bytes", "events_in", "events_new",
                                        "duplicates", "expired", "deleted", "inputs_digest")]


class uih_load_progress(Structure):
    _fields_ = [("phase", c_char_p), ("shard", c_int32), ("events", c_uint64), ("bytes", c_uint64),
                ("seconds", c_double), ("done", c_uint64), ("total", c_uint64), ("eta", c_double)]


PROGRESS_FN = CFUNCTYPE(None, POINTER(uih_load_progress), c_void_p)


class uih_input_layout(Structure):
    _fields_ = [("format", c_char_p), ("delimiter", c_char_p), ("group", c_char_p), ("map", c_char_p),
                ("columns", c_char_p)]


class uih_load_opts(Structure):
    _fields_ = [("through", c_int64), ("lookback", c_int64), ("shard", c_int32), ("threads", c_uint32),
                ("memory", c_size_t), ("progress", PROGRESS_FN), ("progress_arg", c_void_p),
                ("deletes", c_char_p), ("rejects", c_char_p), ("schema_json", c_char_p),
                ("schema_len", c_size_t), ("schema_origin", c_char_p), ("rebuild_dicts", c_int),
                ("layout", POINTER(uih_input_layout)), ("rewrite", c_int)]


LOAD_STATS_U64 = ("inputs", "input_bytes", "events_in", "events_skipped", "duplicates", "expired", "events_new",
                  "events", "stripes", "histories", "bytes", "stripes_copied", "stripes_written", "runs",
                  "rejected", "deleted", "delete_users", "delete_items", "delete_pairs", "stripes_upgraded")


class uih_load_stats(Structure):
    _fields_ = [(n, c_uint64) for n in LOAD_STATS_U64] + \
               [("schema_version", c_uint32), ("shards", c_uint32), ("shards_skipped", c_uint32),
                ("through", c_int64), ("horizon", c_int64), ("seconds_read", c_double),
                ("seconds_sort", c_double), ("seconds_merge", c_double),
                ("dicts_built", c_uint64), ("dict_entries", c_uint64), ("dict_bytes", c_uint64),
                ("dicts_declined", c_uint64), ("shards_layered", c_uint32), ("layers_max", c_uint32)]


# ---- snapshots and records ----------------------------------------------------------


class uih_snapshot_spec_group(Structure):
    _fields_ = [("group", c_uint16), ("max_length", c_uint32)]


class uih_snapshot_spec(Structure):
    _fields_ = [("ngroups", c_uint32), ("groups", uih_snapshot_spec_group * SNAPSHOT_GROUPS_MAX)]


class uih_snapshot_group(Structure):
    _fields_ = [("group", c_uint16), ("length", c_uint32), ("generation", c_uint32), ("start_ts", c_int64),
                ("end_ts", c_int64), ("check", c_uint32 * 4), ("mutable_events", c_void_p),
                ("mutable_len", c_size_t)]


class uih_snapshot_record(Structure):
    _fields_ = [("store", c_uint32), ("user_id", c_uint64), ("request_ts", c_int64), ("schema_version", c_uint32),
                ("ngroups", c_uint32), ("groups", uih_snapshot_group * SNAPSHOT_GROUPS_MAX), ("version", c_uint32),
                ("generation", c_uint32)]


# ---- materialization ------------------------------------------------------------------

MISMATCH_FAIL, MISMATCH_SKIP, MISMATCH_FLAG = 0, 1, 2
LAYOUT_SHARED, LAYOUT_JAGGED = 0, 1
RECORD_MISMATCH, RECORD_NO_GROUP, RECORD_UNREADABLE, RECORD_OTHER_STORE, RECORD_ERASED = 1, 2, 4, 8, 16


class uih_projection_group(Structure):
    _fields_ = [("group", c_uint16), ("max_length", c_uint32), ("ntraits", c_uint32),
                ("traits", c_uint16 * PROJECTION_TRAITS_MAX)]


class uih_projection(Structure):
    _fields_ = [("ngroups", c_uint32), ("groups", uih_projection_group * SNAPSHOT_GROUPS_MAX),
                ("on_mismatch", c_int), ("layout", c_int)]


class uih_mat_column(Structure):
    _fields_ = [("trait", c_uint16), ("type", c_int), ("values", c_void_p), ("present", c_void_p)]


class uih_mat_group(Structure):
    _fields_ = [("group", c_uint16), ("rows", c_uint64), ("ncolumns", c_uint32),
                ("columns", POINTER(uih_mat_column)), ("offsets", c_void_p), ("lengths", c_void_p)]


MATERIALIZE_STATS = ("records", "users", "mismatches", "unreadable", "events", "rows", "stripes_read",
                     "bytes_read", "reads", "reads_batched")


class uih_materialize_stats(Structure):
    _fields_ = [(n, c_uint64) for n in MATERIALIZE_STATS]


class uih_materializer_opts(Structure):
    _fields_ = [("threads", c_uint32), ("depth", c_uint32), ("each_record", c_int), ("no_batch_reads", c_int)]


# Every struct above, for the layout test.
STRUCTS = [uih_error, uih_trait, uih_group, uih_column, uih_batch, uih_store_opts, uih_cache_stats, uih_store_init_opts,
           uih_generation, uih_load_progress, uih_input_layout, uih_load_opts, uih_load_stats, uih_snapshot_spec_group,
           uih_snapshot_spec, uih_snapshot_group, uih_snapshot_record, uih_projection_group, uih_projection,
           uih_mat_column, uih_mat_group, uih_materialize_stats, uih_materializer_opts]

# ---- prototypes -------------------------------------------------------------------------

P = c_void_p
E = POINTER(uih_error)
U8P = POINTER(c_uint8)


def _proto(lib, name, restype, *argtypes):
    f = getattr(lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)
    globals()[name] = f


# engine
_proto(engine, "uih_strerror", c_char_p, c_int)
_proto(engine, "uih_type_width", c_size_t, c_int)
_proto(engine, "uih_type_name", c_char_p, c_int)
_proto(engine, "uih_shard_of", c_uint32, c_uint64, c_uint32)
_proto(engine, "uih_shard_of_many", None, P, c_size_t, c_uint32, P)
_proto(engine, "uih_hash_ids", None, P, P, c_size_t, P)
_proto(engine, "uih_schema_name", c_char_p, P)
_proto(engine, "uih_schema_version", c_uint32, P)
_proto(engine, "uih_schema_user_ids", c_int, P)
_proto(engine, "uih_schema_group_count", c_uint32, P)
_proto(engine, "uih_schema_group_at", POINTER(uih_group), P, c_uint32)
_proto(engine, "uih_schema_group_by_id", POINTER(uih_group), P, c_uint16)
_proto(engine, "uih_schema_group_by_name", POINTER(uih_group), P, c_char_p)
_proto(engine, "uih_group_trait_by_name", POINTER(uih_trait), POINTER(uih_group), c_char_p)
_proto(engine, "uih_group_trait_by_id", POINTER(uih_trait), POINTER(uih_group), c_uint16)
_proto(engine, "uih_batch_create", c_int, POINTER(uih_group), c_uint32, POINTER(c_uint16), c_uint32,
       POINTER(POINTER(uih_batch)), E)
_proto(engine, "uih_batch_free", None, POINTER(uih_batch))
_proto(engine, "uih_batch_clear", None, POINTER(uih_batch))
_proto(engine, "uih_snapshot_record_decode", c_int, P, c_size_t, POINTER(uih_snapshot_record), E)
_proto(engine, "uih_snapshot_record_format", c_size_t, POINTER(uih_snapshot_record), c_char_p, c_size_t)
_proto(engine, "uih_snapshot_log_index", c_int, P, c_size_t, c_char_p, P, P, P, P, c_size_t,
       POINTER(c_size_t), E)
LOG_DAMAGE_FN = CFUNCTYPE(None, c_void_p, c_char_p)
_proto(engine, "uih_snapshot_log_index_past_damage", c_int, P, c_size_t, c_char_p, P, P, P, P, P, c_size_t,
       POINTER(c_size_t), POINTER(c_int), LOG_DAMAGE_FN, c_void_p, E)
_proto(engine, "uih_snapshot_log_append", c_int, P, P, c_size_t, E)
_proto(engine, "uih_snapshot_log_write", c_int, P, c_uint64, P, c_size_t, E)
_proto(engine, "uih_snapshot_log_repair", c_int, P, c_char_p, POINTER(c_uint64), POINTER(c_uint64), E)

# store
_proto(rocks, "uih_store_create", c_int, c_char_p, c_char_p, c_size_t, c_char_p, POINTER(uih_store_init_opts), E)
_proto(rocks, "uih_store_open", c_int, c_char_p, POINTER(uih_store_opts), POINTER(P), E)
_proto(rocks, "uih_store_close", None, P)
_proto(rocks, "uih_store_schema", P, P)
_proto(rocks, "uih_store_shards", c_uint32, P)
_proto(rocks, "uih_store_has_shard", c_int, P, c_uint32)
_proto(rocks, "uih_store_dir", c_char_p, P)
_proto(rocks, "uih_store_id", c_uint64, P)
_proto(rocks, "uih_store_mutable", c_int, P, c_uint32, POINTER(P), E)
_proto(rocks, "uih_store_generations", c_int, P, c_uint32, POINTER(uih_generation), c_size_t, POINTER(c_size_t),
       POINTER(c_uint32), E)
_proto(rocks, "uih_store_pinned", c_int, P, c_uint32, c_uint32, POINTER(c_int), E)
_proto(rocks, "uih_store_refresh", c_int, P, E)
_proto(rocks, "uih_store_cache_stats", c_int, P, POINTER(uih_cache_stats), E)
_proto(rocks, "uih_store_following", c_int, P, c_uint32, POINTER(c_uint32), E)
_proto(rocks, "uih_store_recovered", c_char_p, P, c_uint32)
_proto(rocks, "uih_store_sizes", c_int, P, c_uint32, POINTER(c_uint64), POINTER(c_uint64), E)
_proto(rocks, "uih_store_read", c_int, P, c_uint64, c_uint16, c_int64, c_int64, c_uint32, c_uint32,
       POINTER(POINTER(uih_batch)), E)
_proto(rocks, "uih_mutable_append", c_int, P, c_uint64, POINTER(uih_batch), c_uint32, E)
_proto(rocks, "uih_mutable_append_many", c_int, P, POINTER(c_uint64), POINTER(POINTER(uih_batch)), c_size_t,
       c_uint32, E)
_proto(rocks, "uih_mutable_watermark", c_int, P, POINTER(c_int64), POINTER(c_int), E)
_proto(rocks, "uih_mutable_chunk_span", c_int64, P)
_proto(rocks, "uih_load", c_int, P, POINTER(c_char_p), c_size_t, POINTER(uih_load_opts), POINTER(uih_load_stats), E)
_proto(rocks, "uih_snapshotter_create", c_int, P, POINTER(P), E)
_proto(rocks, "uih_snapshotter_free", None, P)
_proto(rocks, "uih_snapshot", c_int, P, c_uint64, c_int64, POINTER(uih_snapshot_spec),
       POINTER(POINTER(POINTER(uih_batch))), POINTER(U8P), POINTER(c_size_t), E)
_proto(rocks, "uih_materialize", c_int, P, P, P, c_size_t, POINTER(uih_projection), POINTER(P),
       POINTER(uih_materialize_stats), E)
_proto(rocks, "uih_materializer_create", c_int, P, POINTER(uih_projection), POINTER(uih_materializer_opts),
       POINTER(P), E)
_proto(rocks, "uih_materializer_submit", c_int, P, P, P, c_size_t, E)
_proto(rocks, "uih_materializer_next", c_int, P, POINTER(P), POINTER(uih_materialize_stats), E)
_proto(rocks, "uih_materializer_free", None, P)
_proto(rocks, "uih_materialized_records", c_size_t, P)
_proto(rocks, "uih_materialized_group", POINTER(uih_mat_group), P, c_uint32)
_proto(rocks, "uih_materialized_flags", P, P)
_proto(rocks, "uih_materialized_why", c_char_p, P, c_size_t)
_proto(rocks, "uih_materialized_free", None, P)

# libc, for the FILE * the log functions take
_proto(libc, "fopen", P, c_char_p, c_char_p)
_proto(libc, "fclose", c_int, P)
_proto(libc, "fflush", c_int, P)
