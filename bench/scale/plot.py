#!/usr/bin/env python3
"""Curves of bench/scale runs: each figure against the store's size.

    python3 bench/scale/plot.py RESULTS.jsonl [OUTDIR]

Needs matplotlib (Debian's python3-matplotlib, installed by scripts/setup).
RESULTS.jsonl holds one line per `scale_bench --json` run (any sizes, in
any order; of several runs of one size the last is drawn). Writes
OUTDIR/scale_load.png, scale_snapshot.png and scale_train.png (OUTDIR:
bench/results).
"""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def runs(path):
    by_size = {}
    with open(path) as f:
        for line in f:
            if line.strip():
                r = json.loads(line)
                by_size[r["events"]] = r
    return [by_size[k] for k in sorted(by_size)]


def stored(r):
    return r["load_day2.events_stored"] / 1e6


def finish(fig, axes, out, name):
    for a in axes:
        a.legend(fontsize=8)
        a.grid(alpha=0.3)
        a.set_ylim(bottom=0)
    fig.tight_layout()
    fig.savefig(os.path.join(out, name), dpi=110)


def load_chart(rs, out):
    x = [stored(r) for r in rs]
    fig, ax = plt.subplots(1, 3, figsize=(15, 4.2))
    ax[0].plot(x, [r["load_history.events_in"] / r["load_history.cpu_s"] / 1e6 for r in rs], "o-",
               label="history load")
    for day in ("load_day1", "load_day2"):
        ax[0].plot(x, [r[day + ".events_in"] / r[day + ".cpu_s"] / 1e6 for r in rs], "o-", label=day[5:] + " load")
    ax[0].set(title="Loads: events per CPU-second", xlabel="events stored (M)", ylabel="M events / CPU-s")
    for day in ("load_day1", "load_day2"):
        ax[1].plot(x, [r[day + ".cpu_s"] / r[day + ".generation_bytes"] * 1e9 for r in rs], "o-",
                   label=day[5:] + " (ns CPU per byte stored)")
    ax[1].plot(x, [r["load_history.written_bytes"] / r["load_history.generation_bytes"] for r in rs], "s--",
               label="history: bytes written / stored")
    ax[1].plot(x, [r["load_history.peak_disk_mb"] * 1e6 / r["load_history.generation_bytes"] for r in rs], "s--",
               label="history: temporary disk / generation")
    ax[1].set(title="What a load costs per byte stored", xlabel="events stored (M)")
    ax[2].plot(x, [r["load_history.peak_rss_mb"] for r in rs], "o-", label="history load peak RSS (MB)")
    ax[2].plot(x, [r["load_day1.peak_rss_mb"] for r in rs], "o-", label="day load peak RSS (MB)")
    ax[2].plot(x, [r["open.open_cold_ms"] for r in rs], "s--", label="read-only open, cold (ms)")
    ax[2].axhline(rs[-1]["memory_mb"] + 256, color="grey", lw=0.8, ls=":", label="--memory + 256 MB")
    ax[2].set(title="Memory and opening", xlabel="events stored (M)")
    finish(fig, ax, out, "scale_load.png")


def snapshot_chart(rs, out):
    x = [stored(r) for r in rs]
    fig, ax = plt.subplots(1, 3, figsize=(15, 4.2), sharey=False)
    for i, length in enumerate((1024, 8192, 65536)):
        for mode, style in (("warm", "-"), ("cold", "--")):
            for q in ("p50", "p99"):
                k = "serve.snap_%d_t1_%s_%s_us" % (length, mode, q)
                ys = [r.get(k, float("nan")) / 1e3 for r in rs]
                ax[i].plot(x, ys, "o" + style, label="%s %s" % (mode, q))
        ax[i].set(title="Snapshot of %d events, 1 thread" % length, xlabel="events stored (M)", ylabel="ms")
    finish(fig, ax, out, "scale_snapshot.png")


def train_chart(rs, out):
    x = [stored(r) for r in rs]
    fig, ax = plt.subplots(1, 2, figsize=(11, 4.2))
    for tenant in ("long", "mid", "short"):
        # open_cold: files evicted, the indexes already read (runs before it lack it)
        for mode, style in (("warm", "-"), ("cold", "--"), ("open_cold", ":")):
            k = "train.train_%s_%s_records_per_cpu_s" % (tenant, mode)
            ax[0].plot(x, [r.get(k, float("nan")) / 1e3 for r in rs], "o" + style, label="%s %s" % (tenant, mode))
    ax[0].set(title="Training: records rebuilt per CPU-second", xlabel="events stored (M)", ylabel="K records / CPU-s")
    ax[1].plot(x, [r["procs.procs_1_records_per_s"] / 1e3 for r in rs], "o-", label="1 process")
    ax[1].plot(x, [r["procs.procs_n_records_per_s"] / 1e3 for r in rs], "o-", label="8 processes")
    ax[1].plot(x, [r["load_day3.procs_during_load_records_per_s"] / 1e3 for r in rs], "o--",
               label="8 processes, a load publishing")
    ax[1].set(title="Training processes at once (1,024-event tenant)", xlabel="events stored (M)",
              ylabel="K records / s, all processes")
    finish(fig, ax, out, "scale_train.png")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(__file__), "..", "results")
    rs = runs(sys.argv[1])
    load_chart(rs, out)
    snapshot_chart(rs, out)
    train_chart(rs, out)


if __name__ == "__main__":
    main()
