"""`pip install ./python` as a user with the libraries runs it: into a
fresh virtual environment (Debian's numpy and torch seen through
--system-site-packages), then imported from elsewhere."""

import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def test_pip_install_then_import(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    py = str(venv / "bin" / "python")
    # From a copy: a build writes build/ and *.egg-info next to the sources.
    src = tmp_path / "src"
    shutil.copytree(os.path.dirname(HERE), str(src), ignore=shutil.ignore_patterns("tests", "__pycache__"))
    p = subprocess.run([py, "-m", "pip", "install", "--quiet", "--no-build-isolation", "--no-deps", "--no-index",
                        str(src)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    code = "import uihstore, sys; print(uihstore.__file__); print(uihstore.shard_of_many([42], 16)[0])"
    p = subprocess.run([py, "-c", code], capture_output=True, text=True, cwd=str(tmp_path), env=env)
    assert p.returncode == 0, p.stderr
    where, shard = p.stdout.split()
    assert where.startswith(str(venv)), "imported the installed copy, not the source tree"
    assert shard == "8"  # uih_shard_of(42, 16), pinned in tests/engine/key_test.cc
