"""Draw an interleaving as an SVG timeline: one lane per task, barrier hand-offs as arrows.

Events are placed as early as the barriers allow (an event starts one slot after the previous
event of its task and one slot after the event that enabled it: the commit that filled the
stage it waits for, or the release that emptied the stage it acquires). Parallel progress of
the tasks therefore shows as overlapping lanes, and a stall as a gap. Boxes are coloured per
resource and labelled with the operation and the ring stage; a ``skip_stage()``, which touches
no barrier, is drawn pale; blocked operations of a counterexample are drawn dashed, in red, at
the end of their lane.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from ts_ir import KernelPlan
from ts_verify import Trace, TraceEvent

__all__ = ["layout_times", "render_svg"]

_PALETTE = (
    "#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2",
    "#edc948", "#ff9da7", "#9c755f", "#bab0ac", "#e15759",
)  # fmt: skip
_SHORT = {
    "ProducerAcquire": "acq",
    "ProducerCommit": "cmt",
    "ConsumerWait": "wait",
    "ConsumerRelease": "rel",
    "ProducerTryAcquire": "try_acq",
    "ConsumerTryWait": "try_wait",
    "ConsumerSkip": "skip",
}
_SLOT, _LANE, _LEFT, _TOP = 64, 46, 120, 40


def _enabler(events: Sequence[TraceEvent], i: int, stages: dict[str, int]) -> int | None:
    """Index of the event that let event ``i`` pass its barrier, if it waited on one."""
    e = events[i]
    if e.op == "ConsumerWait":
        wanted, rnd = "ProducerCommit", e.round
    elif e.op == "ProducerAcquire" and e.round >= 1:
        wanted, rnd = "ConsumerRelease", e.round - 1
    else:
        return None
    found = None
    for j in range(i):
        o = events[j]
        if o.resource == e.resource and o.op == wanted and o.stage == e.stage and o.round == rnd:
            found = j
    return found


def layout_times(events: Sequence[TraceEvent], stages: dict[str, int]) -> list[int]:
    """The slot of every event: as early as its task and its barrier allow."""
    times: list[int] = []
    last: dict[str, int] = {}
    for i, e in enumerate(events):
        t = last.get(e.task, -1) + 1
        j = _enabler(events, i, stages)
        if j is not None:
            t = max(t, times[j] + 1)
        times.append(t)
        last[e.task] = t
    return times


def _label(e: TraceEvent) -> str:
    op = _SHORT.get(e.op, e.text.split(" ", 2)[1].split(".", 1)[-1] if " " in e.text else e.op)
    return f"{op} s{e.stage}" if e.stage >= 0 else op


def render_svg(plan: KernelPlan, trace: Trace, title: str) -> str:
    """An SVG picture of ``trace`` (a verified run or a counterexample) of ``plan``."""
    events = list(trace.events)
    stages = {r.name: r.pipeline.stages for r in plan.resources if r.pipeline is not None}
    times = layout_times(events, stages)
    lanes = {t.name: i for i, t in enumerate(plan.tasks)}
    colours = {r.name: _PALETTE[i % len(_PALETTE)] for i, r in enumerate(plan.resources)}
    blocked = dict(trace.blocked)
    end = max(times, default=-1) + (2 if blocked else 1)
    width = _LEFT + end * _SLOT + 40
    height = _TOP + len(lanes) * _LANE + 70
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'font-family="monospace" font-size="11">',
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="6" '
        'markerHeight="6" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#555"/></marker>'
        "</defs>",
        '<rect width="100%" height="100%" fill="white"/>',
        f'<text x="10" y="20" font-size="14" font-weight="bold">{html.escape(title)}</text>',
    ]
    for name, lane in lanes.items():
        y = _TOP + lane * _LANE
        out.append(f'<text x="10" y="{y + 22}">{html.escape(name)}</text>')
        out.append(
            f'<line x1="{_LEFT}" y1="{y + 36}" x2="{width - 20}" y2="{y + 36}" stroke="#ddd"/>'
        )

    def box(i: int) -> tuple[int, int]:
        e = events[i]
        return _LEFT + times[i] * _SLOT, _TOP + lanes.get(e.task, 0) * _LANE + 6

    for i in range(len(events)):
        j = _enabler(events, i, stages)
        if j is not None:
            (x1, y1), (x2, y2) = box(j), box(i)
            out.append(
                f'<line x1="{x1 + _SLOT - 6}" y1="{y1 + 14}" x2="{x2}" y2="{y2 + 14}" '
                'stroke="#555" stroke-width="1" marker-end="url(#arrow)" opacity="0.7"/>'
            )
    for i, e in enumerate(events):
        x, y = box(i)
        colour = colours.get(e.resource, "#999")
        tip = html.escape(f"{e.index}. {e.task}: {e.text} ({e.location})")
        opacity = 0.4 if e.op == "ConsumerSkip" else 0.85  # a skip waits for nothing
        out.append(
            f'<g><title>{tip}</title><rect x="{x}" y="{y}" width="{_SLOT - 6}" height="28" '
            f'rx="4" fill="{colour}" fill-opacity="{opacity}"/>'
            f'<text x="{x + 4}" y="{y + 12}" fill="white">{html.escape(e.resource[:8])}</text>'
            f'<text x="{x + 4}" y="{y + 24}" fill="white">{html.escape(_label(e)[:9])}</text></g>'
        )
    for task, why in blocked.items():
        lane = lanes.get(task, 0)
        done = [times[i] for i, e in enumerate(events) if e.task == task]
        x = _LEFT + (max(done, default=-1) + 1) * _SLOT
        y = _TOP + lane * _LANE + 6
        out.append(
            f'<g><title>{html.escape(why)}</title><rect x="{x}" y="{y}" width="{_SLOT - 6}" '
            'height="28" rx="4" fill="none" stroke="#d62728" stroke-width="2" '
            'stroke-dasharray="4 3"/>'
            f'<text x="{x + 4}" y="{y + 18}" fill="#d62728">blocked</text></g>'
        )
    legend_y = _TOP + len(lanes) * _LANE + 20
    x = _LEFT
    for name, colour in colours.items():
        if any(e.resource == name for e in events):
            out.append(f'<rect x="{x}" y="{legend_y}" width="12" height="12" fill="{colour}"/>')
            out.append(f'<text x="{x + 16}" y="{legend_y + 10}">{html.escape(name)}</text>')
            x += 30 + 7 * len(name)
    when = ", ".join(f"{k} = {v}" for k, v in trace.valuation) or "always"
    out.append(f'<text x="10" y="{legend_y + 32}">{html.escape("when: " + when)}</text>')
    out.append("</svg>")
    return "\n".join(out)
