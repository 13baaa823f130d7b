"""The ctypes mirrors of the C structs have the C compiler's layout: same
size, same field offsets (tests/python/abi_layout.c prints them)."""

import json
import os
import subprocess

import pytest

from uihstore import _lib as L


def test_every_mirrored_struct_has_the_c_layout():
    exe = os.environ.get("UIH_ABI_LAYOUT")
    if not exe:
        pytest.fail("UIH_ABI_LAYOUT names the abi_layout program (CTest sets it)")
    c = json.loads(subprocess.run([exe], capture_output=True, text=True, check=True).stdout)
    mirrored = {s.__name__: s for s in L.STRUCTS}
    assert set(mirrored) == set(c), "structs printed by abi_layout.c and mirrored in _lib.py"
    for name, s in mirrored.items():
        import ctypes
        assert ctypes.sizeof(s) == c[name]["size"], name
        fields = [f[0] for f in s._fields_]
        assert fields == list(c[name]["fields"]), "%s: fields in the header's order" % name
        for f in fields:
            assert getattr(s, f).offset == c[name]["fields"][f], "%s.%s" % (name, f)


def test_the_libraries_are_this_builds():
    lib = os.environ.get("UIHSTORE_LIBDIR")
    if lib:
        assert L.ROCKSDB_PATH.startswith(lib) and L.ENGINE_PATH.startswith(lib)
