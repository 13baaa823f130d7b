"""examples/inference_service.c as deployed: the service serves a store
24/7 — concurrent clients appending and snapshotting over its socket —
while separate `uih load` processes publish each shard every night (one
erasing a user, one changing the schema). It follows every publish without
a restart, no request fails, and every record it logged rebuilds with
`uih materialize` to exactly what it answered (records of the erased user
from before the erasure flagged). Killed with SIGKILL it restarts on the
same log, cut back to its last whole record.
"""

import csv
import io
import os
import random
import signal
import socket
import subprocess
import threading
import time

import pytest

UIH = os.environ.get("UIH_CLI")
SERVICE = os.environ.get("UIH_INFERENCE_SERVICE")
SRC = os.environ.get("UIH_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
V1 = os.path.join(SRC, "examples", "feed.v1.schema.json")
V2 = os.path.join(SRC, "examples", "feed.schema.json")
HEADER = "user_id,group,ts,item_id,event_type,watch_ms"
DAY = 86_400_000
START = 1_700_000_000_000
USERS = 40

pytestmark = pytest.mark.skipif(not (UIH and SERVICE), reason="needs UIH_CLI and UIH_INFERENCE_SERVICE")


def uih(*args):
    p = subprocess.run([UIH] + [str(a) for a in args], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return p


class Client:
    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.settimeout(60)  # a stuck service fails the test instead of hanging it
        self.s.connect(path)
        self.f = self.s.makefile("rw")

    def request(self, line):
        self.f.write(line + "\n")
        self.f.flush()
        head = self.f.readline().rstrip("\n")
        body = []
        if head.startswith("OK record="):
            n = int(head.split("lines=")[1])
            body = [self.f.readline().rstrip("\n") for _ in range(n)]
        return head, body

    def close(self):
        self.f.write("QUIT\n")
        self.f.flush()
        self.s.close()


def start(store, sock, log, threads=4):
    if os.path.exists(sock):  # a killed service's
        os.unlink(sock)
    p = subprocess.Popen([SERVICE, "--store", store, "--socket", sock, "--log", log, "--threads", str(threads),
                          "--follow-ms", "50"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for _ in range(200):
        if os.path.exists(sock):
            return p
        assert p.poll() is None, p.stderr.read()
        time.sleep(0.02)
    raise AssertionError("the service did not start")


def stats(client):
    head, _ = client.request("STATS")
    assert head.startswith("OK "), head
    return dict(kv.split("=", 1) for kv in head[3:].split())


def item_ids(body):
    """(ts, item_id) of every event in a SNAPSHOT answer's engagement part."""
    out, cols = [], None
    for line in body:
        row = next(csv.reader([line]))
        if row[0] == "user_id":  # a group's header
            cols = row
        elif row[1] == "engagement":
            out.append((int(row[cols.index("ts")]), int(row[cols.index("item_id")])))
    return out


def test_serving_while_loads_publish(tmp_path):
    store, sock, log = str(tmp_path / "st"), str(tmp_path / "s.sock"), str(tmp_path / "snap.log")
    uih("init", "--store", store, "--schema", V1, "--shards", 2)
    day0 = tmp_path / "day0.csv"
    day0.write_text(HEADER + "\n" + "".join(f"{u},engagement,{START + u * 1000 + k},{u * 100 + k},click,5\n"
                                            for u in range(1, USERS + 1) for k in range(5)))
    uih("load", "--store", store, "--through", START + DAY, day0)
    service = start(store, sock, log)
    lock = threading.Lock()
    events = []  # (user, ts, item) appended
    answers = {}  # record -> (user, [(ts, item)])
    clock = [START + DAY]
    failures = []

    def client_loop(seed, stop):
        try:
            serve_requests(seed, stop)
        except Exception as e:  # noqa: BLE001 - reported by the main thread's check of failures
            failures.append("client %d: %r" % (seed, e))

    def serve_requests(seed, stop):
        rng = random.Random(seed)
        c = Client(sock)
        c.request("HEADER " + HEADER)
        while not stop.is_set():
            u = rng.randint(1, USERS)
            if rng.random() < 0.6:
                with lock:
                    clock[0] += 1
                    ts = clock[0]
                item = rng.randint(1, 10**9)
                head, _ = c.request(f"APPEND {u},engagement,{ts},{item},like,7")
                if head != "OK":
                    failures.append(head)
                    continue
                with lock:
                    events.append((u, ts, item))
            else:
                head, body = c.request(f"SNAPSHOT {u} {clock[0]} engagement:32")
                if not head.startswith("OK record="):
                    failures.append(head)
                    continue
                with lock:
                    answers[int(head.split()[1].split("=")[1])] = (u, item_ids(body))
        c.close()

    def night(n, extra):
        through = clock[0] - 20  # what came after stays in the mutable tier
        f = tmp_path / f"night{n}.csv"
        with lock:
            rows = [e for e in events if e[1] < through]
        f.write_text(HEADER + "\n" + "".join(f"{u},engagement,{ts},{item},like,7\n" for u, ts, item in rows))
        procs = [subprocess.Popen([UIH, "load", "--store", store, "--shard", str(shard), "--through", str(through)]
                                  + extra + [str(f)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                 for shard in (0, 1)]
        for p in procs:
            assert p.wait() == 0, p.stderr.read()

    control = Client(sock)
    stop = threading.Event()
    threads = [threading.Thread(target=client_loop, args=(i, stop), daemon=True) for i in range(4)]
    for t in threads:
        t.start()
    (tmp_path / "del.csv").write_text("user_id\n7\n")
    try:
        for n, extra in ((1, []), (2, ["--delete", str(tmp_path / "del.csv")]), (3, ["--schema", V2])):
            time.sleep(0.4)
            night(n, extra)
            deadline = time.time() + 10  # the service polls every 50 ms; a busy CI machine is slow
            while stats(control)["generation"] != f"{n + 1},{n + 1}":
                assert time.time() < deadline, "the service did not follow night %d: %s" % (n, stats(control))
                time.sleep(0.02)
        time.sleep(0.3)
    finally:  # a failure above must not leave the clients running forever
        stop.set()
        for t in threads:
            t.join(timeout=60)
        if any(t.is_alive() for t in threads):
            service.kill()
    st = stats(control)
    control.close()
    assert not failures, failures[:5]
    assert int(st["errors"]) == 0 and int(st["snapshots"]) == len(answers) > 100
    assert float(st["cache_hit_rate"]) > 0.5, st
    service.send_signal(signal.SIGTERM)
    out, err = service.communicate(timeout=30)
    assert service.returncode == 0, err
    assert "stopped" in out

    # Every record rebuilds to what the service answered.
    mat = subprocess.run([UIH, "materialize", "--store", store, "--log", log, "--group", "engagement:32",
                          "--on-mismatch", "flag"], capture_output=True, text=True)
    assert mat.returncode == 0, mat.stderr
    rebuilt = {}
    rows = list(csv.reader(io.StringIO(mat.stdout)))
    cols = rows[0]
    for row in rows[1:]:
        rebuilt.setdefault(int(row[cols.index("record")]), []).append(
            (int(row[cols.index("ts")]), int(row[cols.index("item_id")])))
    flagged = {int(line.split()[3].rstrip(":")) for line in mat.stderr.splitlines() if "record" in line and
               "erased" in line}
    assert len(answers) == len(set(answers)), "record numbers are distinct"
    assert set(answers) == set(range(len(answers))), "no record missing from the log"
    for r, (user, seq) in answers.items():
        if r in flagged:
            assert user == 7
            continue
        assert rebuilt.get(r, []) == seq, "record %d of user %d" % (r, user)
    assert flagged, "user 7's records from before the erasure"

    # Killed: the log is cut back to its last whole record at the restart.
    service = start(store, sock, log)
    c = Client(sock)
    c.request("HEADER " + HEADER)
    head, _ = c.request(f"SNAPSHOT 3 {clock[0]} engagement:8")
    assert head.startswith(f"OK record={len(answers)} "), head
    acked = []
    for k in range(5):  # acknowledged appends: they survive the kill
        ts = clock[0] + 100 + k
        head, _ = c.request(f"APPEND 5,engagement,{ts},{777 + k},like,7")
        assert head == "OK", head
        acked.append(ts)
    c.close()
    time.sleep(0.2)
    service.send_signal(signal.SIGKILL)
    service.wait()
    with open(log, "ab") as f:
        f.write(b"\x05\x01\x02")  # a record cut by the kill
    service = start(store, sock, log)
    c = Client(sock)
    head, _ = c.request(f"SNAPSHOT 4 {clock[0]} engagement:8")
    assert head.startswith(f"OK record={len(answers) + 1} "), head
    c.close()
    service.send_signal(signal.SIGTERM)
    out, err = service.communicate(timeout=30)
    assert "cut off" in err, err
    now = uih("read", "--store", store, "--user", 5, "--group", "engagement", "--tier", "all").stdout
    kept = {int(row[2]) for row in csv.reader(io.StringIO(now)) if row[0] == "5"}
    assert set(acked) <= kept, "an acknowledged append was lost to the kill"
    dump = uih("log", "dump", log).stdout
    assert dump.count("\n") >= len(answers) + 2


def test_clients_outnumbering_workers_share_them(tmp_path):
    """Workers serve requests, not connections: with one worker, clients
    that stay connected are all answered, turn by turn, and a request line
    too long for the service is refused without stopping it."""
    store, sock, log = str(tmp_path / "st"), str(tmp_path / "s.sock"), str(tmp_path / "snap.log")
    uih("init", "--store", store, "--schema", V1, "--shards", 2)
    service = start(store, sock, log, threads=1)
    try:
        clients = [Client(sock) for _ in range(6)]
        for c in clients:
            assert c.request("HEADER " + HEADER)[0] == "OK"
        for rnd in range(20):
            for k, c in enumerate(clients):
                head, _ = c.request(f"APPEND {k + 1},engagement,{START + rnd},{rnd},click,5")
                assert head == "OK", (k, rnd, head)
        for k, c in enumerate(clients):
            head, body = c.request(f"SNAPSHOT {k + 1} {START + 100} engagement:8")
            assert head.startswith("OK record="), head
            assert [item for _, item in item_ids(body)] == list(range(12, 20))
        big = Client(sock)
        big.f.write("APPEND " + "9" * (70 * 1024) + "\n")
        big.f.flush()
        assert big.f.readline().startswith("ERR a request longer than 64 KiB")
        assert stats(clients[0])["appends"] == str(6 * 20)
        for c in clients:
            c.close()
    finally:
        service.send_signal(signal.SIGTERM)
        out, err = service.communicate(timeout=30)
    assert service.returncode == 0, err
