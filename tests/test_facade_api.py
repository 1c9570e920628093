"""The facade exports exactly the documented names with exactly the documented signatures."""

from __future__ import annotations

import enum
import inspect
import re
from typing import Any

import pytest

import task_scheduling

DOCUMENTED_NAMES = {
    "consumer_work",
    "domain_loop",
    "Every",
    "IterationPredicate",
    "OpaqueCondition",
    "pipeline",
    "producer_work",
    "schedule",
    "when_false",
    "when_true",
    "WorkAttr",
    "work_tile_loop",
}

# The documented signatures, written as `inspect` renders them after normalising module
# prefixes (see `render`).
DOCUMENTED_SIGNATURES: dict[str, str] = {
    "consumer_work": "(method: Callable[..., Any] | None = None, *, "
    "work_attrs: WorkAttr = WorkAttr.NONE, returns: str | Field | tuple[str | Field, ...] | "
    "list[str | Field] | None = None) -> Callable[..., Any]",
    "producer_work": "(method: Callable[..., Any] | None = None, *, "
    "work_attrs: WorkAttr = WorkAttr.NONE) -> Callable[..., Any]",
    "domain_loop": "(*bounds: object | Callable[..., object], unroll: int | None = None) "
    "-> Iterator[DomainLoopProxy]",
    "work_tile_loop": "(wq: object, *, skip_if: Callable[..., Boolean] | None = None) "
    "-> Iterator[WorkTileLoopProxy]",
    "schedule": "(fn: Callable[..., None]) -> Callable[..., Schedule]",
    "when_true": "(cond: object, *, key: Hashable | None = None) -> Iterator[None]",
    "when_false": "(cond: object, *, key: Hashable | None = None) -> Iterator[None]",
    "Every": "(period: int, start: int = 0) -> None",
    "OpaqueCondition": "(key: Hashable, negated: bool = False, resource: object | None = None, "
    "method_label: str | None = None, result_name: str | None = None) -> None",
    "IterationPredicate.fires": "(self, iter_idx: int, num_iters: int) -> bool",
    "Every.fires": "(self, iter_idx: int, num_iters: int) -> bool",
    "WorkAttr.is_valid_combination": "(value: WorkAttr) -> bool",
    "WorkAttr.validate": "(value: WorkAttr, field_name: str) -> None",
    "WorkAttr.is_auxiliary": "(self) -> bool",
}


def _annotation(annotation: Any) -> str:
    text = annotation if isinstance(annotation, str) else str(inspect.formatannotation(annotation))
    text = re.sub(r"\b(?:[a-z_]+\.)+(?=[A-Z])", "", text)  # drop module prefixes
    return text.replace("Field[Any]", "Field")


def _default(value: Any) -> str:
    if isinstance(value, enum.Enum):
        return f"{type(value).__name__}.{value.name}"
    return repr(value)


def render(obj: Any) -> str:
    """The signature of ``obj`` in the documented notation."""
    sig = inspect.signature(obj)
    parts: list[str] = []
    star_done = False
    for p in sig.parameters.values():
        if p.kind is p.KEYWORD_ONLY and not star_done:
            parts.append("*")
            star_done = True
        if p.kind is p.VAR_POSITIONAL:
            star_done = True
        text = ("*" if p.kind is p.VAR_POSITIONAL else "") + p.name
        if p.annotation is not p.empty:
            text += f": {_annotation(p.annotation)}"
        if p.default is not p.empty:
            text += f" = {_default(p.default)}"
        parts.append(text)
    out = f"({', '.join(parts)})"
    if sig.return_annotation is not sig.empty:
        out += f" -> {_annotation(sig.return_annotation)}"
    return out


def test_top_level_names_are_exactly_the_documented_ones() -> None:
    assert set(task_scheduling.__all__) == DOCUMENTED_NAMES
    for name in DOCUMENTED_NAMES:
        assert hasattr(task_scheduling, name), name


@pytest.mark.parametrize("dotted", sorted(DOCUMENTED_SIGNATURES))
def test_signature_matches_documentation(dotted: str) -> None:
    obj: Any = task_scheduling
    for part in dotted.split("."):
        obj = getattr(obj, part)
    assert render(obj) == DOCUMENTED_SIGNATURES[dotted]


def test_pipeline_is_the_ts_submodule() -> None:
    assert inspect.ismodule(task_scheduling.pipeline)
    assert task_scheduling.pipeline.__name__ == "task_scheduling.pipeline"


@pytest.mark.parametrize("module", ["enums", "resources", "schedule_builder", "plan"])
def test_documented_submodules_are_package_attributes(module: str) -> None:
    assert inspect.ismodule(getattr(task_scheduling, module))


def test_facade_reexports_the_layer_objects() -> None:
    import ts_ir
    import ts_trace
    from task_scheduling import enums, resources, schedule_builder

    assert task_scheduling.schedule is ts_trace.schedule
    assert task_scheduling.Every is ts_ir.Every
    assert resources.MemoryResource is ts_trace.MemoryResource
    assert schedule_builder.Schedule is ts_ir.Schedule
    assert enums.ScheduleStage is ts_ir.ScheduleStage
    for mod in (enums, resources, schedule_builder, task_scheduling.pipeline):
        for name in mod.__all__:
            assert getattr(mod, name).__module__.split(".")[0] in {
                "ts_ir",
                "ts_trace",
                "ts_runtime",
                "typing",
                "types",
            }, (
                mod.__name__,
                name,
            )


def test_every_validation_matches_documentation() -> None:
    from task_scheduling import Every

    assert Every(3, start=1).fires(4, 10)
    assert not Every(3, start=1).fires(0, 10)
    with pytest.raises(ValueError):
        Every(0)
    with pytest.raises(ValueError):
        Every(1, start=-1)
    with pytest.raises(TypeError):
        Every(1.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        Every(2**31)


def test_runtime_facade_modules() -> None:
    from task_scheduling.memory import ResourceContext, SmemAllocation, SmemAllocator
    from task_scheduling.task import Task as FacadeTask
    from task_scheduling.task_manager import TaskManager as FacadeManager
    from ts_runtime import Task, TaskManager

    assert FacadeTask is Task and FacadeManager is TaskManager
    assert SmemAllocation.__module__ == "ts_runtime.memory"
    assert SmemAllocator is not None and ResourceContext is not None
    # As documented: task / task_manager are imported explicitly, not by the package.
    assert "task" not in task_scheduling.__all__ and "task_manager" not in task_scheduling.__all__


def test_reference_resources_module_names() -> None:
    """The names the reference's ``resources`` module offers besides its own import from ours
    (a program may take ``WorkTileInfo`` or ``SignalingThreads`` from there)."""
    import ts_codegen
    import ts_ir
    import ts_runtime.memory
    import ts_runtime.tmem
    from task_scheduling import resources

    assert resources.WorkTileInfo is ts_codegen.WorkTile
    assert resources.ResourceContext is ts_runtime.memory.ResourceContext
    assert resources.SmemAllocation is ts_runtime.memory.SmemAllocation
    assert resources.TmemAllocation is ts_runtime.tmem.TmemAllocation
    for name in ("PipelineType", "SignalingThreads", "TileSchedulerType", "ScheduleStage"):
        assert getattr(resources, name) is getattr(ts_ir, name), name
    with pytest.raises(AttributeError, match="no attribute 'WorkTileInfos'"):
        resources.WorkTileInfos  # noqa: B018


def test_work_tile_info_update_from() -> None:
    from task_scheduling.resources import WorkTileInfo

    tile = WorkTileInfo((0, 0, 0), False)
    tile.update_from(WorkTileInfo((3, 1, 2), True))
    assert tile.tile_idx == (3, 1, 2)
    assert bool(tile.is_valid_tile)
    tile.update_from(WorkTileInfo((4, 0, 0), False))
    assert tile.tile_idx == (4, 0, 0) and not bool(tile.is_valid_tile)


def test_resource_without_tmem_adds_nothing_to_the_tmem_allocator() -> None:
    """The reference's MemoryResource has a ``get_tmem_requirements`` hook returning no blocks:
    adding every resource to both allocators is a correct program."""
    from task_scheduling.memory import TmemAllocation, TmemAllocator
    from task_scheduling.resources import MemoryResource

    plain = MemoryResource(name="plain")
    assert plain.get_tmem_requirements() == []
    tmem = TmemAllocator()
    tmem.add_resource(plain)
    tmem.add(TmemAllocation("acc", 32))
    tmem.compute_layout()
    assert tmem.total_tmem_columns == 32


def test_task_get_domain_and_smem_get_typed_ptr_as_the_reference_spells_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from task_scheduling.memory import SmemAllocation, SmemAllocator
    from task_scheduling.task import Task

    # Task.get_domain(self, tile_coord): the reference's parameter name, by keyword too.
    assert list(inspect.signature(Task.get_domain).parameters) == ["self", "tile_coord"]
    monkeypatch.setattr(Task, "domain", property(lambda self: 7))
    assert Task.__new__(Task).get_domain(tile_coord=(0, 0, 0)) == 7
    # SmemAllocator.get_typed_ptr: the reference's older name of get_as_type.
    calls: list[tuple[Any, ...]] = []

    def get_as_type(self: Any, *args: Any) -> str:
        calls.append(args)
        return "view"

    monkeypatch.setattr(SmemAllocator, "get_as_type", get_as_type)
    alloc = SmemAllocation("buf", size_bytes=64)
    assert SmemAllocator().get_typed_ptr(alloc, "f32", 4) == "view"
    assert calls == [(alloc, "f32", 4)]
