"""Resource declarations: identity, task-local fields, the work registry and StageInfo."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import re
from collections.abc import Callable
from typing import Any, cast

import pytest
from trace_testkit import Buf, Queue, Src

from ts_ir import Role, WorkAttr
from ts_trace import (
    MemoryResource,
    ResourceDeclarationError,
    StageInfo,
    TaskLocalVariable,
    WorkInfo,
    bind_task_local_variables,
    consumer_work,
    get_work_info,
    producer_work,
)


def line_of(marker: str) -> int:
    """The line of this file that carries ``marker`` in a trailing comment."""
    lines = inspect.getsource(inspect.getmodule(line_of)).splitlines()  # type: ignore[arg-type]
    pattern = re.compile(rf"# {re.escape(marker)}$")
    hits = [i + 1 for i, text in enumerate(lines) if pattern.search(text)]
    assert len(hits) == 1, marker
    return hits[0]


class FakeJit:
    """Simulates ``@cute.jit``: a callable object wrapping a function, with ``__get__``."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.calls = 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        return self.fn(*args, **kwargs)

    def __get__(self, obj: object, objtype: type | None = None) -> Any:
        return self if obj is None else functools.partial(self.__call__, obj)


@dataclasses.dataclass(kw_only=True)
class Plain(MemoryResource):
    size: int = 0


@dataclasses.dataclass(kw_only=True)
class Base(MemoryResource):
    """A work registry with every decorator form."""

    value: TaskLocalVariable = TaskLocalVariable.uninitialized()
    other: TaskLocalVariable = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.value = TaskLocalVariable(dtype="Int32", default=0)
        self.other = TaskLocalVariable(dtype="Int32", default=1)

    @producer_work
    def fill(self, stage_info: Any, *, value: Any, mode: str = "x") -> str:  # def-fill
        return f"fill {value} {mode}"

    @producer_work()
    def fill_factory(self, stage_info: Any) -> None:
        del stage_info

    @producer_work(work_attrs=WorkAttr.AUXILIARY)
    def setup(self, stage_info: Any, **options: Any) -> None:
        del stage_info, options

    @consumer_work
    def read(self, stage_info: Any) -> None:
        del stage_info

    @consumer_work()
    def read_factory(self, stage_info: Any) -> None:
        del stage_info

    @consumer_work(returns=value)
    def get_field(self, stage_info: Any) -> Any:
        return stage_info

    @consumer_work(returns="other")
    def get_name(self, stage_info: Any) -> Any:
        return stage_info

    @consumer_work(returns=[other, "value"], work_attrs=WorkAttr.AUXILIARY)
    def get_both(self, stage_info: Any) -> Any:
        return stage_info, stage_info

    def helper(self) -> int:
        return 1


@dataclasses.dataclass(kw_only=True)
class Derived(Base):
    """Inherits Base's work, replaces two methods, drops one and adds one."""

    @consumer_work(returns=Base.other)
    def fill(self, stage_info: Any, *, value: Any, mode: str = "x") -> str:
        return "now a consumer"

    def read(self, stage_info: Any) -> None:
        """Overridden without a decorator: no longer work."""

    @consumer_work(returns=Base.value)
    def extra(self, stage_info: Any) -> Any:
        return stage_info


@dataclasses.dataclass(kw_only=True)
class Jitted(MemoryResource):
    result: TaskLocalVariable = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.result = TaskLocalVariable(dtype="Float32", default=0.0)

    @consumer_work(returns=result)
    @FakeJit
    def compute(self, stage_info: Any, *, scale: int = 1) -> Any:  # def-compute
        return (self.name, stage_info, scale)

    @producer_work(work_attrs=WorkAttr.AUXILIARY)
    @FakeJit
    def touch(self, stage_info: Any) -> str:
        return f"touched {self.name} at {stage_info}"


# -- identity --------------------------------------------------------------------------------


def test_resources_hash_and_compare_by_identity() -> None:
    a, b = Plain(name="x", size=1), Plain(name="x", size=1)
    assert dataclasses.fields(a) == dataclasses.fields(b)
    assert a == a
    assert a != b
    assert hash(a) == object.__hash__(a)
    assert hash(b) == object.__hash__(b)
    keys: dict[MemoryResource, int] = {a: 1, b: 2}
    assert len(keys) == 2
    assert keys[a] == 1 and keys[b] == 2
    assert {a, b, a} == {a, b}
    # Subclasses of subclasses (dataclass or not) keep identity semantics.
    src1, src2 = Src(name="s"), Src(name="s")
    assert src1 != src2 and len({src1, src2}) == 2
    d1, d2 = Derived(name="d"), Derived(name="d")
    assert d1 != d2 and hash(d1) != hash(d2)


def test_task_local_field_is_readable_on_the_class() -> None:
    field = Src.item
    assert isinstance(field, dataclasses.Field)
    assert field.name == "item"
    assert field.init is False
    assert field.metadata["ts_task_local"] is True
    assert Base.other is dataclasses.fields(Base)[4]
    # Inherited through a subclass, too.
    assert Derived.value is Base.value
    assert dataclasses.fields(Base)[3].name == "value"


def test_missing_class_attributes_raise_attribute_error() -> None:
    with pytest.raises(AttributeError, match="type object 'Src' has no attribute 'nope'"):
        Src.nope  # noqa: B018
    # `name` has a default, so it is an ordinary class attribute.
    assert Src.name == ""


def test_field_read_on_the_class_works_in_returns_of_a_subclass() -> None:
    assert Derived.work_methods()["fill"].outputs == ("other",)
    assert Derived.work_methods()["extra"].outputs == ("value",)


# -- work registry ----------------------------------------------------------------------------


def test_work_registry_of_every_decorator_form() -> None:
    methods = Base.work_methods()
    assert list(methods) == [
        "fill",
        "fill_factory",
        "setup",
        "read",
        "read_factory",
        "get_field",
        "get_name",
        "get_both",
    ]
    summary = {
        label: (m.label, m.role, m.attrs, m.outputs, m.info.parameters, m.info.accepts_any_keyword)
        for label, m in methods.items()
    }
    p, c, n, aux = Role.PRODUCER, Role.CONSUMER, WorkAttr.NONE, WorkAttr.AUXILIARY
    assert summary == {
        "fill": ("fill", p, n, (), ("value", "mode"), False),
        "fill_factory": ("fill_factory", p, n, (), (), False),
        "setup": ("setup", p, aux, (), (), True),
        "read": ("read", c, n, (), (), False),
        "read_factory": ("read_factory", c, n, (), (), False),
        "get_field": ("get_field", c, n, ("value",), (), False),
        "get_name": ("get_name", c, n, ("other",), (), False),
        "get_both": ("get_both", c, aux, ("other", "value"), (), False),
    }
    assert "helper" not in methods
    assert methods["fill"].location.line == line_of("def-fill")
    assert methods["fill"].location.file == __file__
    assert methods["fill"].location.text.startswith("def fill(")
    assert Base.suggest_work("get_feild") == "get_field"
    assert Base.suggest_work("zzzz") is None


def test_inherited_overridden_and_removed_work() -> None:
    methods = Derived.work_methods()
    assert list(methods) == [
        "fill",
        "fill_factory",
        "setup",
        "read_factory",
        "get_field",
        "get_name",
        "get_both",
        "extra",
    ]
    assert methods["fill"].role is Role.CONSUMER
    assert methods["setup"] is Base.work_methods()["setup"]
    # The base registry is untouched by the subclass.
    assert "read" in Base.work_methods()
    assert Base.work_methods()["fill"].role is Role.PRODUCER
    # Re-declaring the method plainly again in a grandchild keeps it out.
    assert "read" not in type("Grandchild", (Derived,), {}).work_methods()  # type: ignore[attr-defined]


def test_decorated_methods_stay_callable() -> None:
    base = Base(name="b")
    assert base.fill(None, value=3) == "fill 3 x"
    assert base.fill(None, value=3, mode="y") == "fill 3 y"
    assert base.get_both("s") == ("s", "s")
    assert Derived(name="d").fill(None, value=1) == "now a consumer"
    info = get_work_info(Base.fill)
    assert isinstance(info, WorkInfo)
    assert info.function.__name__ == "fill"
    assert Base.fill.__name__ == "fill"
    assert Base.fill.__qualname__ == "Base.fill"
    assert get_work_info(Base.helper) is None
    assert get_work_info(42) is None


def test_decorators_stack_outside_a_callable_wrapper_object() -> None:
    res = Jitted(name="j")
    assert res.compute("si", scale=3) == ("j", "si", 3)
    assert res.compute("si") == ("j", "si", 1)
    assert res.touch(7) == "touched j at 7"
    compute = Jitted.work_methods()["compute"]
    assert isinstance(compute.info.function, FakeJit)
    assert compute.info.function.calls == 2
    assert compute.info.parameters == ("scale",)
    assert compute.outputs == ("result",)
    assert compute.role is Role.CONSUMER
    assert compute.location.line == line_of("def-compute")
    touch = Jitted.work_methods()["touch"]
    assert (touch.role, touch.attrs, touch.outputs) == (Role.PRODUCER, WorkAttr.AUXILIARY, ())


def dummy(self: Any, stage_info: Any) -> None:
    del self, stage_info


@pytest.mark.parametrize("deco", [producer_work, consumer_work])
def test_bad_work_attrs_are_rejected(deco: Callable[..., Any]) -> None:
    with pytest.raises(ValueError, match=r"work_attrs=3 is not a supported WorkAttr"):
        deco(work_attrs=cast(WorkAttr, 3))(dummy)
    with pytest.raises(TypeError, match="work_attrs must be a WorkAttr, got str"):
        deco(work_attrs=cast(WorkAttr, "x"))(dummy)
    with pytest.raises(TypeError, match="work_attrs must be a WorkAttr, got bool"):
        deco(work_attrs=cast(WorkAttr, True))(dummy)


@pytest.mark.parametrize("returns", [3, ["ok", 3.5], (None,)])
def test_bad_returns_type_is_rejected(returns: object) -> None:
    with pytest.raises(TypeError, match="returns= takes task-local slot names"):
        consumer_work(returns=cast(Any, returns))


def test_decorating_a_non_callable_is_rejected() -> None:
    with pytest.raises(TypeError, match="@producer_work decorates a method, got 3"):
        producer_work(cast(Any, 3))
    with pytest.raises(TypeError, match="@consumer_work decorates a method"):
        consumer_work()(cast(Any, "text"))


def test_producer_work_cannot_declare_outputs() -> None:
    assert "returns" not in inspect.signature(producer_work).parameters
    with pytest.raises(TypeError):
        cast(Any, producer_work)(returns="value")

    # A WorkInfo forged with outputs on the producer side is refused by the registry.
    def forged(self: Any, stage_info: Any) -> None:
        del self, stage_info

    forged.__ts_work__ = WorkInfo(  # type: ignore[attr-defined]
        Role.PRODUCER, WorkAttr.NONE, ("value",), (), False, forged
    )
    with pytest.raises(ResourceDeclarationError) as err:
        type("Forged", (MemoryResource,), {"forged": forged})
    assert err.value.code == "TS-T019"
    assert "producer work Forged.forged cannot declare outputs" in str(err.value)


def test_returns_naming_a_field_of_no_class_is_rejected() -> None:
    with pytest.raises(ResourceDeclarationError) as err:

        class Stray(MemoryResource):
            @consumer_work(returns=TaskLocalVariable.uninitialized())
            def get(self, stage_info: Any) -> Any:
                return stage_info

    assert err.value.code == "TS-T019"
    assert "Stray.get: returns= names a field that is not declared on Stray" in str(err.value)


# -- task-local variables ---------------------------------------------------------------------


def test_task_local_variable_argument_checks() -> None:
    with pytest.raises(TypeError, match=r"TaskLocalVariable needs dtype=\.\.\."):
        TaskLocalVariable(default=0)
    exactly_one = r"needs exactly one of default=\.\.\. and default_factory=\.\.\."
    with pytest.raises(TypeError, match=exactly_one):
        TaskLocalVariable(dtype="Int32")
    with pytest.raises(TypeError, match=exactly_one):
        TaskLocalVariable(dtype="Int32", default=0, default_factory=int)


def test_task_local_variable_values_and_names() -> None:
    none_default = TaskLocalVariable(dtype="WorkTileInfo", default=None, docs="the tile")
    assert none_default.initial_value() is None
    assert none_default.docs == "the tile"
    factory = TaskLocalVariable(dtype="List", default_factory=list)
    first, second = factory.initial_value(), factory.initial_value()
    assert first == [] and second == [] and first is not second
    assert factory.default_factory is list
    plain = TaskLocalVariable(dtype="Int32", default=5)
    assert plain.initial_value() == 5
    assert (plain.owner, plain.field_name, plain.slot_name) == (None, None, None)
    assert repr(plain) == "TaskLocalVariable(dtype='Int32')"
    renamed = TaskLocalVariable(dtype="Int32", default=0, runtime_slot_name="rt_slot")
    assert renamed.slot_name == "rt_slot"


def test_binding_sets_owner_and_field_name() -> None:
    src = Src(name="s")
    found = src.task_local_variables()
    assert list(found) == ["item", "flag"]
    item = found["item"]
    assert item is src.item
    assert item.owner is src
    assert item.field_name == "item"
    assert item.slot_name == "item"
    assert repr(item) == "TaskLocalVariable(item, dtype='Int32')"
    # Binding again is harmless.
    assert src.task_local_variables() == found


def test_runtime_slot_name_survives_binding() -> None:
    @dataclasses.dataclass(kw_only=True)
    class Renamed(MemoryResource):
        slot: TaskLocalVariable = TaskLocalVariable.uninitialized()

        def __post_init__(self) -> None:
            self.slot = TaskLocalVariable(dtype="Int32", default=0, runtime_slot_name="rt")

    res = Renamed(name="r")
    var = res.task_local_variables()["slot"]
    assert (var.field_name, var.slot_name, var.owner) == ("slot", "rt", res)


def test_declared_fields_come_first_in_declaration_order_then_extras() -> None:
    @dataclasses.dataclass(kw_only=True)
    class Ordered(MemoryResource):
        a: TaskLocalVariable = TaskLocalVariable.uninitialized()
        b: TaskLocalVariable = dataclasses.field(init=False)  # annotation alone marks it

        def __post_init__(self) -> None:
            self.extra_before = TaskLocalVariable(dtype="Int8", default=0)
            self.b = TaskLocalVariable(dtype="Int32", default=2)
            self.a = TaskLocalVariable(dtype="Int32", default=1)

    res = Ordered(name="o")
    res.extra_after = TaskLocalVariable(dtype="Int8", default=9)  # type: ignore[attr-defined]
    found = res.task_local_variables()
    assert list(found) == ["a", "b", "extra_before", "extra_after"]
    assert [v.initial_value() for v in found.values()] == [1, 2, 0, 9]
    assert found["extra_after"].owner is res
    assert found["extra_after"].field_name == "extra_after"


def test_plain_objects_can_hold_task_local_variables() -> None:
    class Holder:
        def __init__(self) -> None:
            self.name = "holder"
            self.count = 3
            self.slot = TaskLocalVariable(dtype="Int32", default=0)

    holder = Holder()
    found = bind_task_local_variables(holder)
    assert list(found) == ["slot"]
    assert found["slot"].owner is holder


def test_one_variable_bound_to_two_resources_is_rejected() -> None:
    shared = TaskLocalVariable(dtype="Int32", default=0)

    @dataclasses.dataclass(kw_only=True)
    class Sharing(MemoryResource):
        slot: TaskLocalVariable = TaskLocalVariable.uninitialized()

        def __post_init__(self) -> None:
            self.slot = shared

    first, second = Sharing(name="first"), Sharing(name="second")
    first.task_local_variables()
    with pytest.raises(ResourceDeclarationError) as err:
        second.task_local_variables()
    assert err.value.code == "TS-T018"
    assert err.value.resource == "second"
    assert "one TaskLocalVariable object is bound to `slot` here" in str(err.value)
    assert "create a new TaskLocalVariable(...) for every slot" in str(err.value)
    assert shared.owner is first


def test_one_variable_bound_to_two_fields_is_rejected() -> None:
    res = Plain(name="p")
    var = TaskLocalVariable(dtype="Int32", default=0)
    res.one = var  # type: ignore[attr-defined]
    res.two = var  # type: ignore[attr-defined]
    with pytest.raises(ResourceDeclarationError) as err:
        res.task_local_variables()
    assert err.value.code == "TS-T018"
    assert "bound to `two` here and to `one`" in str(err.value)


# -- StageInfo ---------------------------------------------------------------------------------


def test_stage_info_fields_and_defaults() -> None:
    names = [f.name for f in dataclasses.fields(StageInfo)]
    assert names == [
        "loop_offset",
        "loop_start",
        "loop_end",
        "loop_step",
        "stage_idx",
        "label",
        "barrier",
        "work_tile",
        "num_active_stages",
        "context",
        "task_cache",
        "iter_idx",
        "phase",
        "peek_work_tile",  # a TS extension, last: the reference's positions hold
    ]
    info = StageInfo(4, 0, 16, 2, 1, "load", "bar", (0, 1))
    assert info.peek_work_tile is None
    assert (info.loop_offset, info.loop_start, info.loop_end, info.loop_step) == (4, 0, 16, 2)
    assert (info.stage_idx, info.label, info.barrier, info.work_tile) == (1, "load", "bar", (0, 1))
    assert (info.num_active_stages, info.context, info.task_cache) == (0, None, None)
    assert (info.iter_idx, info.phase) == (0, None)
    assert StageInfo(*range(13)) == StageInfo(*range(13))
    assert StageInfo(*range(13)).phase == 12


def test_stage_info_is_frozen() -> None:
    info = StageInfo(0, 0, 1, 1, None, "x", None, None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        info.loop_offset = 1  # type: ignore[misc]
    updated = dataclasses.replace(info, iter_idx=3, phase=1)
    assert (updated.iter_idx, updated.phase, info.iter_idx) == (3, 1, 0)


def test_testkit_resources_register_their_work() -> None:
    assert list(Src.work_methods()) == ["load", "load_with_flag", "peek"]
    assert list(Buf.work_methods()) == ["store", "prefetch", "read"]
    assert Queue.work_methods()["next_tile"].outputs == ("tile",)
    assert Queue.is_work_queue and not Src.is_work_queue
