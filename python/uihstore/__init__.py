"""uihstore for Python: a thin layer over the C API of libuih_rocksdb and
libuihstore (ctypes; nothing reimplemented). See python/README.md.

    import uihstore
    with uihstore.Store.open("st") as st:
        seqs, record = st.snapshot(42, 1700000000000, {"engagement": 256})
        res = st.materialize([record], {"engagement": (128, ["event_ts", "item_id"])})
        res["engagement"].values["item_id"]      # numpy, the C buffer itself
"""

from ._lib import (ERR_CORRUPTION, ERR_INCOMPATIBLE, ERR_INTERNAL, ERR_INVALID_ARGUMENT, ERR_IO, ERR_NO_MEMORY,
                   ERR_NOT_FOUND, ERR_NOT_SUPPORTED, ERR_OUT_OF_RANGE, ERR_PARSE, ERR_SCHEMA, ERR_TYPE_MISMATCH,
                   UihError)
from ._events import Events
from .log import LogWriter, SnapshotLog, decode_record, hash_id, hash_ids, shard_of_many
from .materialized import MatGroup, Materialized, Materializer, Projection
from .store import Store

RECORD_MISMATCH = 1
RECORD_NO_GROUP = 2
RECORD_UNREADABLE = 4
RECORD_OTHER_STORE = 8
RECORD_ERASED = 16

__version__ = "0.1.0"

__all__ = ["Store", "UihError", "Events", "SnapshotLog", "LogWriter", "decode_record", "hash_id", "hash_ids", "shard_of_many",
           "Projection", "Materialized", "MatGroup", "Materializer", "RECORD_MISMATCH", "RECORD_NO_GROUP",
           "RECORD_UNREADABLE", "RECORD_OTHER_STORE", "RECORD_ERASED", "ERR_INVALID_ARGUMENT", "ERR_NO_MEMORY",
           "ERR_IO", "ERR_CORRUPTION", "ERR_SCHEMA", "ERR_PARSE", "ERR_NOT_FOUND", "ERR_NOT_SUPPORTED",
           "ERR_TYPE_MISMATCH", "ERR_OUT_OF_RANGE", "ERR_INCOMPATIBLE", "ERR_INTERNAL"]
