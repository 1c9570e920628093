"""Translation validation of a CLC work queue: who asks for a tile and what completes the answer.

A ``ClcFetchAsync`` ring's stage holds the 16-byte answer of one cluster-launch-control
request. Its protocol differs from a thread ring's on the producer side only:

* the producer's ``acquire`` waits on the empty barrier and *arms* the full barrier: one
  ``mbarrier.arrive.expect_tx`` for the answer's bytes (the barrier counts that one arrival;
  :mod:`ts_runtime.ptx_check` compares the count and the bytes like a TMA ring's);
* the fetch step issues ``clusterlaunchcontrol.try_cancel`` with the stage's response slot and
  its full barrier: the hardware writes the 16-byte answer and completes those 16 bytes on the
  barrier (``mbarrier::complete_tx::bytes``), which completes the phase;
* the ``commit`` arrives nowhere (the answer completes the phase); an arrive there would be
  an arrival past the barrier's count.

So, per full barrier phase, the bytes the ``try_cancel`` s complete must equal the bytes the
acquire arms (the plan's ``bytes_per_stage``): one request issued by one thread completes 16
bytes; a request from every lane of a warp would complete 32 answers' bytes (and cancel 32
clusters, whose tiles only one answer's reader would run). :func:`check_requests` checks each
request site (a full barrier of a CLC ring, issued by a task that fills that ring, by threads
whose answers add up to the stage's bytes) and that every CLC ring the plan fills has one.

One CTA's view, as for every ring: the multicast form (``.multicast::cluster::all``) writes the
answer into every CTA of the cluster and completes 16 bytes on each one's barrier at the same
offset, which is what this CTA's barrier sees.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping

from ts_ir import WARP_SIZE, PipelineSpec, PipelineType, ScheduleStage, TaskSpec

__all__ = ["CLC_RESPONSE_BYTES", "ClcRequest", "Finding", "check_requests"]

CLC_RESPONSE_BYTES = 16
"""Bytes one ``clusterlaunchcontrol.try_cancel`` writes and completes (its ``.b128`` answer)."""

_FILLS = frozenset({ScheduleStage.ProducerAcquire, ScheduleStage.ProducerCommit})


@dataclasses.dataclass(frozen=True)
class ClcRequest:
    """One ``try_cancel`` site as located on the plan's rings.

    Attributes:
        line: Its PTX line.
        text: Its instruction text.
        resource: The ring whose barrier it completes.
        side: ``"full"`` or ``"empty"``.
        threads: The threads of the CTA that may issue it.
    """

    line: int
    text: str
    resource: str
    side: str
    threads: frozenset[int]


@dataclasses.dataclass(frozen=True)
class Finding:
    """A difference (``code`` set) or a line of what was checked (``code`` empty)."""

    code: str
    message: str
    resource: str = ""
    task: str = ""
    line: int = 0


def check_requests(
    requests: Iterable[ClcRequest],
    pipes: Mapping[str, PipelineSpec],
    tasks: Iterable[TaskSpec],
    live_roles: Callable[[str, str], set[ScheduleStage]],
    ring_lines: Mapping[str, int],
) -> list[Finding]:
    """Compare the PTX's CLC requests with the plan's CLC rings (module docstring).

    Args:
        requests: Every ``try_cancel`` on a barrier of the plan's rings.
        pipes: The plan's rings.
        tasks: The plan's tasks.
        live_roles: ``(task, ring)`` -> the ring operations the task's schedule can run.
        ring_lines: Each ring's first ``mbarrier.init`` line (for a missing request).
    """
    tasks = list(tasks)
    out: list[Finding] = []
    answered: set[str] = set()
    for req in requests:
        pipe = pipes[req.resource]
        if req.side != "full" or pipe.type is not PipelineType.ClcFetchAsync:
            out.append(
                Finding(
                    "TS-X103",
                    f"`{req.text.split()[0]}` completes a {CLC_RESPONSE_BYTES}-byte CLC answer "
                    f"on the {req.side} barrier of ring `{req.resource}` ({pipe.type.value}), "
                    "which expects none (only a ClcFetchAsync ring's full barriers take CLC "
                    "answers)",
                    resource=req.resource,
                    line=req.line,
                )
            )
            continue
        answered.add(req.resource)
        issuers = [t for t in tasks if req.threads & _threads(t)]
        for task in issuers:
            if not live_roles(task.name, req.resource) & _FILLS:
                out.append(
                    Finding(
                        "TS-X105",
                        f"task `{task.name}` requests a CLC answer into ring `{req.resource}`"
                        ", but its schedule does not fill that ring",
                        resource=req.resource,
                        task=task.name,
                        line=req.line,
                    )
                )
                continue
            n = len(req.threads & _threads(task))
            got = n * CLC_RESPONSE_BYTES
            if got != pipe.bytes_per_stage:
                out.append(
                    Finding(
                        "TS-X103",
                        f"task `{task.name}`: the try_cancel is issued by {n} thread(s), whose "
                        f"answers complete {got} byte(s) on a full barrier of ring "
                        f"`{req.resource}` per stage; the plan arms it for "
                        f"{pipe.bytes_per_stage} (one request, {CLC_RESPONSE_BYTES} bytes, "
                        "per stage)",
                        resource=req.resource,
                        task=task.name,
                        line=req.line,
                    )
                )
            else:
                out.append(
                    Finding(
                        "",
                        f"task `{task.name}` requests one CLC answer per stage of ring "
                        f"`{req.resource}` ({got} bytes, line {req.line})",
                    )
                )
    for name, pipe in pipes.items():
        filled = any(live_roles(t.name, name) & _FILLS for t in tasks)
        if pipe.type is PipelineType.ClcFetchAsync and filled and name not in answered:
            out.append(
                Finding(
                    "TS-X103",
                    f"ring `{name}` (ClcFetchAsync): no clusterlaunchcontrol.try_cancel "
                    "completes bytes on its full barriers, so the bytes its acquire arms never "
                    "arrive and its consumers' waits never finish",
                    resource=name,
                    line=ring_lines.get(name, 0),
                )
            )
    return out


def _threads(task: TaskSpec) -> frozenset[int]:
    return frozenset(range(task.warp_start * WARP_SIZE, task.warp_end * WARP_SIZE))
