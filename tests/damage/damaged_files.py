#!/usr/bin/env python3
"""Damaged copies of a real store: never a crash, a hang, or a silent wrong
answer.

Builds a small store as an operator's would look: 2 shards, two loads,
four appends to the mutable tier, a sealed snapshot log of 100 records,
and (with --service) a serving process killed after acknowledging 40 more
appends, which its write-ahead logs alone hold. Then, per
trial, a copy of it with one file damaged once — every kind of file the
store keeps (generation and metadata table files, RocksDB's write-ahead
logs, MANIFEST, CURRENT, OPTIONS and LOG files, the descriptor, the
.published hints, the acknowledged marks, the snapshot log) and every
kind of damage (bytes flipped, the file cut, a 4 KB page zeroed, garbage
appended, the file deleted) — and the commands an operator runs on it:

  uih status --json, uih read --tier all (three users), uih log dump,
  uih log check, uih materialize --on-mismatch flag, uih verify --json

Each must end by itself (a hang is a failure), never by a signal (a crash
is a failure), and when it exits 0 its answer must be the undamaged
store's: the same status (but for file sizes), the same events, the same
records; a rebuild may leave out or flag a record only when it says so on
stderr, naming it. A command that fails must say why on stderr. The
scrub, uih verify, must find damage whenever a command that reads the
store refused it (a clean scrub of a store that does not read would send
an operator the wrong way), and a damage it reports must name a file.
Last, uih repair: it accepts a loss or says why not, and a store it
repaired opens.

  damaged_files.py --uih UIH --schema SCHEMA --work DIR [--service SVC] [--trials N] [--seed S]
  (UIH_DAMAGE_TRIALS=N in the environment overrides --trials)

Prints "damaged_files: ok" and counts per file kind and outcome.

With --service (as the suite runs it) the fixture ends with a serving
process killed after acknowledging appends, which only its live
write-ahead log holds: that log deleted or zeroed whole must not read as
the log of a process that stopped before those appends (the tier's
acknowledged mark, UIH-ACKED, says how much it held).
"""

import argparse
import collections
import csv
import io
import json
import os
import random
import re
import shutil
import socket
import subprocess
import sys
import time

TIMEOUT = 60  # seconds: a command that takes longer on this tiny store hangs
HEADER = "user_id,group,ts,item_id,event_type,watch_ms"
BLOCK_BASED_MAGIC = (0x88E241B785F4CFF7).to_bytes(8, "little")  # RocksDB's block-based tables


def run(args, timeout=TIMEOUT):
    try:
        p = subprocess.run(args, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def must(args):
    r = run(args)
    if r is None or r[0] != 0:
        sys.exit("damaged_files: building the fixture: %s: %s" % (" ".join(args), r and r[2]))
    return r[1]


def killed_server(service, st, work, t0):
    """A serving process that acknowledged appends and was then killed
    (SIGKILL): its mutable tiers' write-ahead logs hold them, unflushed."""
    sock = os.path.join(work, "s.sock")
    p = subprocess.Popen([service, "--store", st, "--socket", sock, "--log", os.path.join(work, "served.log"),
                          "--threads", "1", "--follow-ms", "0"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    for _ in range(500):
        if os.path.exists(sock):
            break
        if p.poll() is not None:
            sys.exit("damaged_files: the service did not start: %s" % p.stderr.read().decode())
        time.sleep(0.01)
    c = socket.socket(socket.AF_UNIX)
    c.settimeout(60)
    c.connect(sock)
    f = c.makefile("rw")
    f.write("HEADER " + HEADER + "\n")
    for k in range(40):  # acknowledged one by one
        f.write("APPEND %d,engagement,%d,%d,click,%d\n" % (1 + k % 24, t0 + k * 1000, 900_000 + k, k))
    f.flush()
    answers = [f.readline().strip() for _ in range(41)]
    if any(a != "OK" for a in answers):
        sys.exit("damaged_files: the service refused an append: %s" % answers)
    p.kill()
    p.wait()
    c.close()


def build(uih, schema, work, service=None):
    """The fixture: its store, its log, and what is true of them."""
    st, log = os.path.join(work, "st"), os.path.join(work, "snap.log")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    must([uih, "init", "--store", st, "--schema", schema, "--shards", "2"])
    day = 86_400_000
    start = 1_700_000_000_000

    def csv_of(rows):
        path = os.path.join(work, "in%d.csv" % len(os.listdir(work)))
        with open(path, "w") as f:
            f.write(HEADER + "\n" + "".join("%d,engagement,%d,%d,%s,%d\n" % r for r in rows))
        return path

    rng = random.Random(11)
    users = list(range(1, 25))

    def events(t0, t1, n):
        return sorted(((rng.choice(users), rng.randrange(t0, t1), rng.randrange(1, 10**6),
                        rng.choice(["click", "like", "share"]), rng.randrange(0, 5000)) for _ in range(n)),
                      key=lambda r: (r[0], r[1]))

    must([uih, "load", "--store", st, "--through", str(start + day), csv_of(events(start, start + day, 900))])
    must([uih, "load", "--store", st, "--through", str(start + 2 * day),
          csv_of(events(start + day, start + 2 * day, 700))])
    for k in range(4):  # four appends to the mutable tier, above the watermark
        t0 = start + 2 * day + k * 3_600_000
        must([uih, "append", "--store", st, csv_of(events(t0, t0 + 3_600_000, 60))])
    req = os.path.join(work, "req.csv")
    with open(req, "w") as f:
        f.write("user_id,request_ts\n" + "".join("%d,%d\n" % (users[i % len(users)], start + 2 * day + 4 * 3_600_000 +
                                                                 i) for i in range(100)))
    must([uih, "snapshot", "--store", st, "--requests", req, "--group", "engagement:32", "--log", log, "--quiet"])
    must([uih, "log", "seal", log])  # rotated: a log cut short is then detected
    if service:
        killed_server(service, st, work, start + 2 * day + 5 * 3_600_000)
    return st, log


def commands(uih, st, log):
    """name -> argv, run on each copy."""
    cmds = {"status": [uih, "status", "--store", st, "--json"],
            "log dump": [uih, "log", "dump", log],
            "log check": [uih, "log", "check", log],
            "materialize": [uih, "materialize", "--store", st, "--log", log, "--group", "engagement:32",
                            "--on-mismatch", "flag"],
            "verify": [uih, "verify", "--store", st, "--json"]}
    for u in (3, 4, 7):
        cmds["read %d" % u] = [uih, "read", "--store", st, "--user", str(u), "--group", "engagement", "--tier", "all"]
    return cmds


def status_facts(out):
    """What status says of the store but for sizes, which damage may change,
    and what the open recovered from (a torn log tail it dropped, said)."""
    def strip(v):
        if isinstance(v, dict):
            return {k: strip(x) for k, x in v.items()
                    if not k.endswith("_bytes") and k not in ("store", "recovered")}  # a torn tail dropped: said
        if isinstance(v, list):
            return [strip(x) for x in v]
        return v
    return strip(json.loads(out))


def rows_by_record(out):
    rows = list(csv.reader(io.StringIO(out)))
    by = collections.defaultdict(list)
    for row in rows[1:]:
        by[row[0]].append(row)
    return rows[0] if rows else [], by


def check(name, got, truth, st_copy):
    """None when the answer is right or honestly refused; else what is wrong."""
    if got is None:
        return "hung (no end in %d s)" % TIMEOUT
    rc, out, err = got
    if rc < 0 or rc > 128:
        return "killed by signal %d: %s" % (-rc if rc < 0 else rc - 128, err[-400:])
    for twice in ("Corruption: Corruption:", "IO error: IO error:"):
        if twice in err:
            return "a message that repeats itself: %s" % err[-300:]
    if name == "verify":
        return check_verify(rc, out, err)
    if rc != 0:
        return None if err.strip() else "failed (exit %d) without a word on stderr" % rc
    t_rc, t_out, t_err = truth
    if name == "status":
        return None if status_facts(out) == status_facts(t_out) else "exit 0 with another status:\n%s" % out[:600]
    if name == "materialize":
        header, by = rows_by_record(out)
        t_header, t_by = rows_by_record(t_out)
        said, from_on = said_records(err)
        if header != t_header and (by or header):
            return "exit 0 with another header: %s" % header
        for r, rows in t_by.items():
            if by.get(r) != rows and int(r) not in said and int(r) < from_on:
                return "exit 0, record %s %s without a word on stderr" % (r, "changed" if r in by else "missing")
        for r in by:
            if r not in t_by:
                return "exit 0 with a record %s the log does not hold" % r
        return None
    if name == "log check":
        if out.split(": ", 1)[1:] == t_out.split(": ", 1)[1:]:
            return None
        return None if "not sealed" in out and "not sealed" not in t_out else "exit 0, another check: %s" % out
    if name == "log dump" and out != t_out and t_out.startswith(out) and "not sealed" in err:
        return None  # a sealed log cut at a record's end: said
    return None if out == t_out else "exit 0 with another answer:\n%s\n--- expected ---\n%s" % (out[:400], t_out[:400])


def check_verify(rc, out, err):
    """The scrub: 0 with a clean report, or 1 with each damage named."""
    if rc not in (0, 1):
        return "verify exited %d: %s" % (rc, err[-300:])
    if rc == 1 and not out.strip():  # no store to scrub (the descriptor deleted): said
        return None if "not a uihstore store" in err else "verify failed without a report: %s" % err[-300:]
    report = json.loads(out)
    damaged = [i for i in report["items"] if i["damage"] and i["counts"]]
    if (rc == 0) != report["ok"] or report["ok"] != (not damaged) or report["damaged"] != len(damaged):
        return "verify: exit %d, ok %s, %d damaged items: they disagree" % (rc, report["ok"], len(damaged))
    for i in damaged:
        if not i["path"] or not i["kind"]:
            return "verify: a damage without a file: %s" % i
    return None


# The commands that read the store (not the snapshot log alone): when one
# of them refuses a copy, the scrub must not call it clean.
STORE_COMMANDS = ("status", "read 3", "read 4", "read 7", "materialize")


def said_records(err):
    """Record numbers stderr names as flagged or lost, and the number from
    which on it says every record is lost (a damaged or cut tail)."""
    said, from_on = set(), float("inf")
    for line in err.splitlines():
        for a, b in re.findall(r"records (\d+)\.\.(\d+) are", line):
            said.update(range(int(a), int(b) + 1))
        m = re.search(r"records from (\d+) on are lost", line)
        if m:
            from_on = min(from_on, int(m.group(1)))
        m = re.search(r"record (\d+) at byte \d+: the log ends", line)
        if m:
            from_on = min(from_on, int(m.group(1)))
        m = re.search(r"not sealed: its last record is number (\d+)", line)
        if m:
            from_on = min(from_on, int(m.group(1)) + 1)
        if "not sealed and holds no record" in line:
            from_on = 0
        said.update(int(x) for x in re.findall(r"\brecord (\d+)\b", line))
    return said, from_on


def kind_of(path):
    base = os.path.basename(path)
    if base.endswith(".sst"):
        with open(path, "rb") as f:
            f.seek(-8, os.SEEK_END)
            magic = f.read(8)
        return "rocksdb table" if magic == BLOCK_BASED_MAGIC else "generation table"
    if base.endswith(".log") and "mutable" in path:
        return "mutable WAL"
    if base.endswith(".log") and "shard" in path:
        return "shard WAL"
    for prefix in ("MANIFEST", "CURRENT", "OPTIONS", "LOG", "IDENTITY", "LOCK"):
        if base.startswith(prefix):
            return prefix
    if base == "UIHSTORE":
        return "descriptor"
    if base == "UIH-ACKED":
        return "acked mark"
    if base.endswith(".published"):
        return "published hint"
    if base == "snap.log":
        return "snapshot log"
    return "other"


def damage(path, how, rng):
    size = os.path.getsize(path)
    if how == "delete":
        os.remove(path)
        return "deleted"
    with open(path, "r+b") as f:
        if how == "flip":
            if size == 0:
                f.write(b"\x01")
                return "flip of an empty file: one byte"
            hits = sorted(rng.randrange(size) for _ in range(rng.randint(1, 8)))
            for at in hits:
                f.seek(at)
                b = f.read(1)
                f.seek(at)
                f.write(bytes([b[0] ^ rng.randint(1, 255)]))
            return "bytes flipped at %s" % hits
        if how == "truncate":
            at = rng.randrange(size) if size else 0
            f.truncate(at)
            return "cut to %d of %d bytes" % (at, size)
        if how == "zero page":
            at = (rng.randrange(size) // 4096) * 4096 if size else 0
            f.seek(at)
            f.write(b"\0" * min(4096, max(size - at, 1)))
            return "4 KB zeroed at %d" % at
        if how == "garbage":
            f.seek(0, os.SEEK_END)
            g = bytes(rng.randrange(256) for _ in range(rng.randint(1, 200)))
            f.write(g)
            return "%d bytes of garbage appended" % len(g)
    raise ValueError(how)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--uih", required=True)
    ap.add_argument("--schema", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--trials", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--service", help="examples/inference_service: a killed server leaves unflushed appends")
    a = ap.parse_args()
    if os.environ.get("UIH_DAMAGE_TRIALS"):  # the long run
        a.trials = int(os.environ["UIH_DAMAGE_TRIALS"])
    st, log = build(a.uih, a.schema, a.work, a.service)
    truth = {name: run(argv) for name, argv in commands(a.uih, st, log).items()}
    for name, t in truth.items():
        if t is None or t[0] != 0:
            sys.exit("damaged_files: the undamaged store: %s failed: %s" % (name, t and t[2]))
    files = collections.defaultdict(list)
    for root, _, names in os.walk(st):
        for n in names:
            p = os.path.join(root, n)
            files[kind_of(p)].append(os.path.relpath(p, a.work))
    files["snapshot log"].append("snap.log")
    kinds = sorted(k for k in files if k not in ("LOCK", "other"))
    rng = random.Random(a.seed)
    copy = os.path.join(a.work, "copy")
    tally = collections.Counter()
    failures = []
    for trial in range(a.trials):
        kind = kinds[trial % len(kinds)]
        rel = rng.choice(files[kind])
        how = rng.choice(["flip", "flip", "truncate", "zero page", "garbage", "delete"])
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(st, os.path.join(copy, "st"))
        shutil.copy(log, os.path.join(copy, "snap.log"))
        what = damage(os.path.join(copy, rel), how, rng)
        results = {}
        for name, argv in commands(a.uih, os.path.join(copy, "st"), os.path.join(copy, "snap.log")).items():
            got = results[name] = run(argv)
            wrong = check(name, got, truth[name], copy)
            tally[(kind, "wrong" if wrong else "refused" if got is None or got[0] != 0 else "right")] += 1
            if wrong:
                failures.append("trial %d: %s %s: %s: %s" % (trial, rel, what, name, wrong))
        # Then the operator's way on: uih repair accepts what it can (and
        # says what it cannot); once it has, the store opens.
        repaired = run([a.uih, "repair", "--store", os.path.join(copy, "st")])
        wrong = None
        if repaired is None or repaired[0] not in (0, 1):
            wrong = "repair: %s" % ("hung" if repaired is None else "exit %d: %s" % (repaired[0], repaired[2][-300:]))
        elif repaired[0] == 1 and not repaired[2].strip():
            wrong = "repair failed without a word"
        elif repaired[0] == 0:
            after = run([a.uih, "status", "--store", os.path.join(copy, "st"), "--json"])
            if after is None or after[0] != 0:
                wrong = "repair said done, but status fails: %s" % (after and after[2][-300:])
        tally[(kind, "repaired" if repaired and repaired[0] == 0 and ": done" in repaired[1] else "")] += 1
        if wrong:
            failures.append("trial %d: %s %s: %s" % (trial, rel, what, wrong))
        refused = [n for n in STORE_COMMANDS if results[n] and results[n][0] != 0
                   and not (n == "materialize" and kind == "snapshot log")]
        if refused and results["verify"] and results["verify"][0] == 0:
            failures.append("trial %d: %s %s: verify calls the store clean, but %s refused it: %s" %
                            (trial, rel, what, refused[0], results[refused[0]][2][-300:]))
    for kind in kinds:
        print("%-17s right %4d  refused %4d  wrong %d  (repaired %d)" % (
            kind, tally[(kind, "right")], tally[(kind, "refused")], tally[(kind, "wrong")], tally[(kind, "repaired")]))
    if failures:
        print("\n".join(failures[:40]))
        print("damaged_files: %d wrong answers, crashes or hangs in %d trials" % (len(failures), a.trials))
        return 1
    print("damaged_files: ok (%d trials)" % a.trials)
    return 0


if __name__ == "__main__":
    sys.exit(main())
