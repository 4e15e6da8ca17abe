"""The table and the JSON summary: medians, ratios to the floor and to the best official
SDK, and each goal of ../shared/BENCHMARKS.md met or missed.

A ratio here is always "acpstack's performance as a multiple of the other's": acpstack ÷
other where higher is better, other ÷ acpstack for latency, time and memory. Against the
floor it is the fraction of the floor's performance that BENCHMARKS.md's goals are set in.
"""

from __future__ import annotations

from typing import Any

from benchmarks._runner import Results
from benchmarks._workloads import IMPLS, METRICS, NOT_RUN, ONLY, SDKS, V2_METRICS, Metric


def ratio(ours: float | None, theirs: float | None, higher_better: bool) -> float | None:
    if not ours or not theirs:
        return None
    return ours / theirs if higher_better else theirs / ours


def best_sdk(results: Results, metric: Metric) -> str | None:
    """The official SDK with the better median on `metric` in this run."""
    found = [(results.median(s, metric.name), s) for s in SDKS]
    present = [(v, s) for v, s in found if v is not None]
    if not present:
        return None
    pick = max if metric.higher_better else min
    return pick(present)[1]


def evaluate(results: Results, metric: Metric) -> dict[str, Any] | None:
    """Medians, ratios and goals of one metric; None when nobody measured it."""
    medians = {i: results.median(i, metric.name) for i in IMPLS}
    if all(v is None for v in medians.values()):
        return None
    ours, higher = medians["acpstack"], metric.higher_better
    sdk = best_sdk(results, metric)
    vs_sdk = ratio(ours, medians[sdk], higher) if sdk else None
    vs_floor = ratio(ours, medians["floor"], higher)
    goals: dict[str, dict[str, Any]] = {}
    if metric.floor_goal is not None:
        goals["floor"] = _goal(metric.floor_goal, vs_floor, True)
    if metric.sdk_goal is not None:
        goals["sdk"] = _goal(metric.sdk_goal, vs_sdk, True)
    if metric.goal is not None:
        goals["absolute"] = _goal(metric.goal, ours, higher)
    v2 = medians["acpstack-v2"]
    return {
        "unit": metric.unit,
        "higher_better": higher,
        **({"title": metric.title} if metric.title else {}),
        "medians": {i: v for i, v in medians.items() if v is not None},
        **({"v2_vs_v1": ratio(v2, ours, higher)} if v2 is not None else {}),
        "vs_floor": vs_floor,
        "best_sdk": sdk,
        "vs_best_sdk": vs_sdk,
        "goals": goals,
    }


def _goal(goal: float, value: float | None, at_least: bool) -> dict[str, Any]:
    met = None if value is None else (value >= goal if at_least else value <= goal)
    return {"goal": goal, "value": value, "met": met}


def summary(results: Results) -> dict[str, dict[str, Any]]:
    """metric -> `evaluate`, for the JSON."""
    out = {}
    for metric in METRICS:
        found = evaluate(results, metric)
        if found is not None:
            out[metric.name] = found
    return out


def goals(summary_: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Every goal of the run, flat: metric, kind (floor, sdk, absolute), goal, value, met."""
    return [
        {
            "metric": name,
            **({"title": found["title"]} if "title" in found else {}),
            "kind": kind,
            **goal,
        }
        for name, found in summary_.items()
        for kind, goal in found["goals"].items()
    ]


def fmt(value: float | None, unit: str = "") -> str:
    if value is None:
        return "—"
    if unit in ("s", "MB growth"):
        return f"{value:.3f}"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.1f}" if abs(value) >= 1 else f"{value:.2f}"


def _met(goal: dict[str, Any] | None) -> str:
    if goal is None:
        return ""
    return {True: "yes", False: "NO", None: "—"}[goal["met"]]


def _goal_text(metric: Metric) -> str:
    if metric.floor_goal is not None:
        return f"≥ {metric.floor_goal:.2f}"
    if metric.goal is not None:
        unit = metric.unit.split()[0]
        return f"{'≥' if metric.higher_better else '≤'} {metric.goal:g} {unit}"
    return ""


def table(results: Results, chosen: list[str], workloads: list[str]) -> str:
    # acpstack over protocol v2 has a table of its own, beside acpstack over v1.
    impls = [i for i in IMPLS if i in chosen and i in results.samples and i not in ONLY]
    header = ["metric", "unit", *impls, "vs best SDK", "5× SDK", "vs floor", "goal", "met"]
    rows = [header]
    for metric in METRICS:
        found = evaluate(results, metric)
        if found is None:
            continue
        sdk, vs_sdk, vs_floor = found["best_sdk"], found["vs_best_sdk"], found["vs_floor"]
        goal = found["goals"].get("floor") or found["goals"].get("absolute")
        rows.append(
            [
                metric.name,
                metric.unit,
                *(fmt(results.median(i, metric.name), metric.unit) for i in impls),
                "—" if vs_sdk is None else f"{vs_sdk:.2f}× {sdk}",
                _met(found["goals"].get("sdk")),
                "—" if vs_floor is None else f"{vs_floor:.2f}",
                _goal_text(metric),
                _met(goal),
            ]
        )
    text = render(rows)
    shown = {row[0] for row in rows}
    titled = [
        f"{m.name} is BENCHMARKS.md's “{m.title}”" for m in METRICS if m.title and m.name in shown
    ]
    if titled:
        text += "\n" + "; ".join(titled) + "."
    text += _cross_table(results)
    text += _v2_table(results)
    text += _layer_table(results)
    skipped = [
        f"  {w} not run for {', '.join(sorted(impls_ & set(chosen)))}: {why}"
        for w, (impls_, why) in NOT_RUN.items()
        if w in workloads and impls_ & set(chosen)
    ]
    skipped += [
        f"  {impl} runs {', '.join(only)} only: {why}"
        for impl, (only, why) in ONLY.items()
        if impl in chosen
    ]
    if skipped:
        text += "\n\n" + "\n".join(skipped)
    if results.errors:
        text += "\n\nErrors:\n" + "\n".join(
            f"  {label} {w}: {e}" for label, errs in results.errors.items() for w, e in errs.items()
        )
    return text


def _cross_table(results: Results) -> str:
    cross = [  # W8's remote pairs have a table of their own
        label
        for label, ms in results.samples.items()
        if "→" in label and any(m in ms for m in ("W1", "W2 p50", "W3"))
    ]
    if not cross:
        return ""
    rows = [["pair", "W1 updates/s", "W2 p50 µs", "W3 requests/s"]]
    for label in cross:
        rows.append([label, *(fmt(results.median(label, m)) for m in ("W1", "W2 p50", "W3"))])
    return "\n\nCross pairs (interop under load; which side costs the time):\n" + render(rows)


def _v2_table(results: Results) -> str:
    """acpstack over protocol v1 and over v2, same run: medians and v2's performance as a
    multiple of v1's (below 1: v2 costs more)."""
    if "acpstack-v2" not in results.samples:
        return ""
    rows = [["metric", "unit", "acpstack v1", "acpstack v2", "v2 vs v1"]]
    for metric in METRICS:
        if metric.name not in V2_METRICS:
            continue
        v1 = results.median("acpstack", metric.name)
        v2 = results.median("acpstack-v2", metric.name)
        if v2 is None:
            continue
        vs = ratio(v2, v1, metric.higher_better)
        rows.append(
            [
                metric.name,
                metric.unit,
                fmt(v1, metric.unit),
                fmt(v2, metric.unit),
                "—" if vs is None else f"{vs:.2f}×",
            ]
        )
    return "\n\nProtocol v2 (acpstack both sides, beside v1 in the same run):\n" + render(rows)


def _layer_table(results: Results) -> str:
    """The official SDK's peers on the official SDK and on acpstack's `acp` layer, beside
    acpstack's own API, same run: the layer as a multiple of the SDK."""
    if "acp-layer" not in results.samples:
        return ""
    rows = [["metric", "unit", "py-sdk", "acp-layer", "layer vs py-sdk", "acpstack"]]
    for metric in METRICS:
        layer = results.median("acp-layer", metric.name)
        if layer is None or metric.name not in V2_METRICS:
            continue
        sdk = results.median("py-sdk", metric.name)
        vs = ratio(layer, sdk, metric.higher_better)
        rows.append(
            [
                metric.name,
                metric.unit,
                fmt(sdk, metric.unit),
                fmt(layer, metric.unit),
                "—" if vs is None else f"{vs:.2f}×",
                fmt(results.median("acpstack", metric.name), metric.unit),
            ]
        )
    return "\n\nThe official SDK's peers on acpstack's `acp` layer (compat/):\n" + render(rows)


def render(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = []
    for n, row in enumerate(rows):
        out.append(
            "  ".join(
                cell.ljust(w) if i < 2 else cell.rjust(w)
                for i, (cell, w) in enumerate(zip(row, widths, strict=True))
            ).rstrip()
        )
        if n == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)
