"""make report, second half: contract rows (JSON lines from cairn-bench --json) to a page of plots.

    python3 scripts/report.py <rows.jsonl> <out dir>

Writes <out dir>/index.html and one PNG per benchmark and metric: cairn's figure (the median of
its rounds, a band from min to max) and its baseline's (dashed, its own band) over message size,
or over ranks where the size does not vary, one line per configuration (engine, ranks, and the
row's own labels such as a route or an algorithm). The page starts with the run context that
every row carries (commit, date, host, cores, compiler, MPI) and lists every row under its plot.
"""

import html
import json
import os
import sys
from collections import OrderedDict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

# Row fields that describe the measurement, not the configuration: never part of a line's label.
NOT_LABELS = {"bench", "engine", "metric", "better", "baseline", "baseline_mode",
              "baseline_thread_level"}


def labels(row):
    """The row's own string fields that tell its configuration apart (route, algorithm, ...)."""
    return tuple((k, v) for k, v in row.items() if isinstance(v, str) and k not in NOT_LABELS)


def series_name(engine, ranks, extra):
    name = f"{engine}, {ranks} ranks" if ranks is not None else engine
    for key, value in extra:
        name += f", {key}={value}"
    return name


def human_size(n, unit="B"):
    """A row's size as cairn-bench's table shows it: "4 KiB", or "256 Ki vertices" for a row
    whose size counts something else (its size_unit)."""
    for prefix, shift in (("Gi", 30), ("Mi", 20), ("Ki", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {prefix}B" if unit == "B" else f"{n >> shift} {prefix} {unit}"
    return f"{n} {unit}"


def plot(bench, metric, rows, path):
    """One figure of `rows` (one benchmark and metric); returns the x axis used."""
    sizes = {r["size"] for r in rows}
    ranks = {r["ranks"] for r in rows}
    by = "size" if len(sizes) > 1 else "ranks" if len(ranks) > 1 else "size"
    lines = OrderedDict()
    for r in rows:
        key = (r["engine"], None if by == "ranks" else r["ranks"], labels(r))
        lines.setdefault(key, []).append(r)
    fig, ax = plt.subplots(figsize=(8, 4.5))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, (key, points) in enumerate(lines.items()):
        points.sort(key=lambda r: r[by])
        color = colors[i % len(colors)]
        xs = [r[by] for r in points]
        for field, low, high, style, who in (
                ("cairn", "min", "max", "-", "cairn"),
                ("baseline_value", "baseline_min", "baseline_max", "--", points[0]["baseline"])):
            ys = [r.get(field) for r in points]
            if all(y is None for y in ys):
                continue
            ax.plot(xs, ys, style, marker="o", markersize=3, color=color,
                    label=f"{who}: {series_name(*key)}")
            lo = [r.get(low, r.get(field)) for r in points]
            hi = [r.get(high, r.get(field)) for r in points]
            if all(v is not None for v in lo + hi):
                ax.fill_between(xs, lo, hi, color=color, alpha=0.15 if style == "-" else 0.07)
    if by == "size" and len(sizes) > 1:
        ax.set_xscale("log", base=2)
        ticks = sorted(sizes)
        ax.set_xticks(ticks)
        ax.set_xticklabels([human_size(t) for t in ticks], rotation=45, fontsize=7)
    elif by == "ranks":
        ax.set_xticks(sorted(ranks))
    ax.set_xlabel("message size" if by == "size" else "ranks")
    values = [v for r in rows for v in (r.get("cairn"), r.get("baseline_value")) if v]
    if values and min(values) > 0 and max(values) / min(values) > 20:
        ax.set_yscale("log")
    better = rows[0].get("better", "")
    ax.set_ylabel(f"{metric} ({better} is better)" if better else metric)
    ax.set_title(f"{bench}: {metric}")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=6, loc="best")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return by


def fmt(v):
    return "" if v is None else f"{v:.4g}" if isinstance(v, float) else str(v)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    src, out = sys.argv[1], sys.argv[2]
    rows = []
    with open(src) as f:
        for line in f:
            if line.lstrip().startswith("{"):
                rows.append(json.loads(line))
    if not rows:
        sys.exit(f"report: no rows in {src}")
    os.makedirs(out, exist_ok=True)
    groups = OrderedDict()
    for r in rows:
        if r.get("cairn") is None and r.get("baseline_value") is None:
            continue
        groups.setdefault((r["bench"], r["metric"]), []).append(r)
    contexts = OrderedDict()
    for r in rows:
        c = r.get("context") or {}
        contexts[json.dumps(c, sort_keys=True)] = c
    page = ["<!doctype html><html><head><meta charset='utf-8'><title>cairn benchmark report"
            "</title><style>body{font-family:sans-serif;margin:2em}table{border-collapse:"
            "collapse;font-size:12px}td,th{border:1px solid #ccc;padding:2px 6px;text-align:"
            "right}th{background:#eee}</style></head><body><h1>cairn benchmark report</h1>"]
    page.append(f"<p>{len(rows)} rows from {html.escape(src)}; each plot: cairn's median "
                "(solid, band min to max of its rounds) against its baseline measured in the "
                "same run (dashed).</p><h2>Run context</h2><table><tr>")
    keys = ["commit", "date", "host", "cores", "compiler", "mpi"]
    page.append("".join(f"<th>{k}</th>" for k in keys) + "</tr>")
    for c in contexts.values():
        page.append("<tr>" + "".join(f"<td>{html.escape(str(c.get(k, '')))}</td>" for k in keys)
                    + "</tr>")
    page.append("</table>")
    for n, ((bench, metric), members) in enumerate(groups.items()):
        png = f"{n:02d}-{bench}-{metric}.png".replace("/", "_")
        by = plot(bench, metric, members, os.path.join(out, png))
        page.append(f"<h2>{html.escape(bench)}: {html.escape(metric)}</h2>"
                    f"<img src='{html.escape(png)}' alt='{html.escape(bench)}'>")
        page.append("<table><tr><th>engine</th><th>ranks</th><th>size</th><th>labels</th>"
                    "<th>cairn</th><th>min</th><th>max</th><th>baseline</th><th>value</th>"
                    "<th>ratio</th><th>handoff ns</th></tr>")
        for r in sorted(members, key=lambda r: (r["engine"], r["ranks"], labels(r), r[by])):
            extra = ", ".join(f"{k}={v}" for k, v in labels(r))
            handoff = r.get("handoff_ns") or [r.get("handoff_ns_before"), r.get("handoff_ns_after")]
            page.append("<tr>" + "".join(f"<td>{html.escape(fmt(v))}</td>" for v in (
                r["engine"], r["ranks"], human_size(r["size"], r.get("size_unit", "B")), extra, r.get("cairn"),
                r.get("min"), r.get("max"), r.get("baseline"), r.get("baseline_value"),
                r.get("ratio"), " ".join(fmt(round(h)) for h in handoff if h is not None)))
                + "</tr>")
        page.append("</table>")
    page.append("</body></html>")
    with open(os.path.join(out, "index.html"), "w") as f:
        f.write("\n".join(page))
    print(f"report: {len(groups)} plots in {os.path.join(out, 'index.html')}")


if __name__ == "__main__":
    main()
