"""Charts of a fatrow_bench run: what each paradigm writes and stores, and
what each tenant reads, how fast, and its batch latency.

    build/release/bench/fatrow_bench --json bench/results/fatrow.json
    /usr/bin/python3 bench/plot_fatrow.py bench/results/fatrow.json

writes fatrow_bytes.png and fatrow_tenants.png next to the JSON file.
Needs matplotlib (Debian's python3-matplotlib, installed by scripts/setup).
"""

import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

LATE = "#1b7837"
FAT = ["#b2182b", "#ef8a62", "#fddbc7", "#d6604d", "#f4a582"]  # cycled for more block sizes


def label_bars(ax, bars, fmt):
    for b in bars:
        ax.annotate(fmt.format(b.get_height()), (b.get_x() + b.get_width() / 2, b.get_height()),
                    ha="center", va="bottom", fontsize=8)


def bytes_chart(r, out):
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    late = r["late"]
    names = ["late\nmaterialization"] + [f"fat rows\n{f['block_kb']} KB blocks" for f in r["fat"]]
    colors = [LATE] + [FAT[i % len(FAT)] for i in range(len(r["fat"]))]
    # Written per day, late materialization split into its parts.
    ax = axes[0]
    parts = [("snapshot logs", late["logs_per_day"]), ("daily load's generation", late["load_per_day"]),
             ("the rest: mutable tier, load's runs", late["rest_per_day"])]
    bottom = 0
    for (what, v), shade in zip(parts, ["#5aae61", LATE, "#a6dba0"]):
        ax.bar(0, v / 1e6, bottom=bottom / 1e6, color=shade, label=what)
        bottom += v
    bars = ax.bar(range(1, len(names)), [f["written_per_day"] / 1e6 for f in r["fat"]], color=colors[1:])
    label_bars(ax, bars, "{:.1f}")
    ax.annotate(f"{late['written_per_day'] / 1e6:.1f}", (0, late["written_per_day"] / 1e6), ha="center",
                va="bottom", fontsize=8)
    ax.set_xticks(range(len(names)), names, fontsize=8)
    ax.set_ylabel("MB")
    ax.set_title("written per day", fontsize=10)
    ax.legend(fontsize=7)
    # Stored: the served days' examples.
    ax = axes[1]
    bars = ax.bar(range(len(names)), [late["stored"] / 1e6] + [f["stored"] / 1e6 for f in r["fat"]], color=colors)
    label_bars(ax, bars, "{:.1f}")
    ax.set_xticks(range(len(names)), names, fontsize=8)
    ax.set_ylabel("MB")
    ax.set_title(f"stored ({r['train_days']} days of examples)", fontsize=10)
    fig.suptitle(f"{r['users']} users, {r['days'] - r['train_days']} days of history, then {r['train_days']} days "
                 f"served: {r['examples']} examples (16.5 per active user per day)", fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def tenants_chart(r, out):
    tenants = r["tenants"]
    series = [("late materialization", LATE, lambda t: t["late"]),
              ("the same, jagged layout", "#7fbc41", lambda t: t["late_jagged"])]
    for i, f in enumerate(r["fat"]):
        series.append((f"fat rows, {f['block_kb']} KB blocks", FAT[i % len(FAT)], lambda t, i=i: t["fat"][i]))
    width = 0.8 / len(series)
    fig, axes = plt.subplots(1, 3, figsize=(13, 4))
    panels = [("KB read per example", lambda p: p["bytes_per_example"] / 1e3, "{:.1f}"),
              ("examples/s per core", lambda p: p["examples_per_s"], "{:.0f}"),
              (f"batch latency p50 (bar) and p99 (tick), ms, batches of {r['batch']}",
               lambda p: p["p50_ms"], "{:.1f}")]
    for ax, (title, value, fmt) in zip(axes, panels):
        for k, (name, color, of) in enumerate(series):
            xs = [i + (k - (len(series) - 1) / 2) * width for i in range(len(tenants))]
            bars = ax.bar(xs, [value(of(t)) for t in tenants], width, color=color, label=name)
            label_bars(ax, bars, fmt)
            if title.startswith("batch"):
                ax.scatter(xs, [of(t)["p99_ms"] for t in tenants], marker="_", s=200, color="black")
        ax.set_xticks(range(len(tenants)), [t["name"] for t in tenants])
        ax.set_title(title, fontsize=9)
        ax.tick_params(axis="y", labelsize=8)
    fig.legend(*axes[0].get_legend_handles_labels(), loc="lower center", ncol=len(series), fontsize=8)
    lengths = {"long": r["length"], "mid": r["length"] // 4, "short": r["length"] // 32}
    fig.suptitle("tenants: " + ", ".join(f"{n} ({lengths[n]} events)" for n in lengths) + "; one thread each",
                 fontsize=10)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    fig.savefig(out, dpi=110)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: plot_fatrow.py RESULTS.json")
    with open(sys.argv[1]) as f:
        r = json.load(f)
    where = os.path.dirname(os.path.abspath(sys.argv[1]))
    for name, chart in (("fatrow_bytes.png", bytes_chart), ("fatrow_tenants.png", tenants_chart)):
        chart(r, os.path.join(where, name))
        print(os.path.join(where, name))


if __name__ == "__main__":
    main()
