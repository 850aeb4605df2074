"""Reading what ctriton.profiler writes: ``parse(metric_names, path)`` ->
(tree, metrics), ``print_tree(tree, metrics)``. Derived metrics:
``time/ms`` (/s, /us, /ns), ``tflop<N>/s`` and ``gbyte/s`` from ``flops<N>``
and ``bytes``."""
import json
import re


def _derive(m, name):
    ns = m.get("time (ns)", 0)
    units = {"time/s": 1e9, "time/ms": 1e6, "time/us": 1e3, "time/ns": 1.0}
    if name in units:
        return ns / units[name]
    r = re.fullmatch(r"tflop(\d*)/s", name)
    if r:
        key = f"flops{r.group(1)}" if r.group(1) else "flops"
        return m.get(key, 0) / ns / 1e3 if ns else 0.0
    r = re.fullmatch(r"gflop(\d*)/s", name)
    if r:
        key = f"flops{r.group(1)}" if r.group(1) else "flops"
        return m.get(key, 0) / ns if ns else 0.0
    if name in ("gbyte/s", "byte/s"):
        scale = 1.0 if name == "gbyte/s" else 1e9
        return m.get("bytes", 0) / ns * scale if ns else 0.0
    return m.get(name, 0)


def _walk(node, metric_names, depth, out):
    row = {"name": node["frame"]["name"], "depth": depth}
    for n in metric_names:
        row[n] = _derive(node["metrics"], n)
    out.append(row)
    for c in node.get("children", []):
        _walk(c, metric_names, depth + 1, out)


def parse(metrics, filename, include=None, exclude=None, threshold=None):
    with open(filename) as f:
        data = json.load(f)
    rows = []
    _walk(data[0], list(metrics), 0, rows)
    return rows, list(metrics)


def print_tree(tree, metrics, depth=100, format=None, print_sorted=False):
    for row in tree:
        if row["depth"] > depth:
            continue
        vals = ", ".join(f"{m}: {row[m]:.3f}" for m in metrics)
        print(f"{'  ' * row['depth']}{vals} {row['name']}")
