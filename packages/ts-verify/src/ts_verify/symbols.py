"""Which runtime values a plan relates: the symbols the whole-kernel proof quantifies over.

Soundness rests on one rule: every value decided at run time is its own, independent symbol
unless the program states that two are the same. The relations the program can state:

* **Loop bounds.** A constant is a number. A per-tile getter (``MyTask.get_domain``) is the same
  value wherever the same getter is used, per work tile. A runtime value is the same wherever
  the same *object* is passed (``k_tiles`` handed to two schedules); two different objects are
  independent even when they have the same type (``n`` and ``n - 1`` are both ``Int32``). A
  trace-time placeholder without arithmetic (``runtime("n")`` in the examples, a string such as
  ``"k_tiles"``) names its value: equal names (type name and attributes) are one symbol. A
  loop's trip count is one symbol per triple of bound symbols (its *class*); loops of
  different classes are independent, except that a loop with a run-time end, a constant
  start ``s >= 0`` and a constant step ``t > 0`` is a function of its end, counted through
  ``domain_loop(0, end, 1)`` (:func:`ts_verify.counting.loop_base`): ``domain_loop(1, n)``
  runs ``max(0, n - 1)`` times where ``domain_loop(n)`` runs ``max(0, n)``.
* **Runtime conditions** are one symbol per ``key`` (the tracer gives an un-keyed condition a
  key of its own), decided once per work tile inside a work-tile loop and once per kernel
  outside of one (both values are explored in both places).
* **Skipped tiles** are one symbol per ``skip_if`` predicate, per work tile.
"""

from __future__ import annotations

from ts_ir import Bound, ConstBound, DynamicBound, RuntimeBound

__all__ = ["bound_symbol", "is_numeric_value"]

_ARITHMETIC = ("__add__", "__sub__", "__index__", "__int__")

# Runtime values keyed by identity get a small ordinal for readable messages. The registry keeps
# the objects alive so that an id is never reused while its ordinal is remembered.
_ORDINALS: dict[int, tuple[object, int]] = {}
_REGISTRY_LIMIT = 4096


def is_numeric_value(value: object) -> bool:
    """True for a value with integer arithmetic (a DSL integer), not a named placeholder."""
    if isinstance(value, str):
        return False
    return any(hasattr(type(value), name) for name in _ARITHMETIC)


def _ordinal(value: object) -> int:
    hit = _ORDINALS.get(id(value))
    if hit is not None and hit[0] is value:
        return hit[1]
    if len(_ORDINALS) > _REGISTRY_LIMIT:
        _ORDINALS.clear()
    n = len(_ORDINALS) + 1
    _ORDINALS[id(value)] = (value, n)
    return n


def _placeholder_name(bound: RuntimeBound) -> str:
    value = bound.value
    if isinstance(value, str):
        return value
    attrs = getattr(value, "__dict__", None)
    if not attrs:
        return bound.name
    # Attributes distinguish placeholders of one class (``Dyn("n")`` vs ``Dyn("n_minus_1")``).
    shown = ", ".join(f"{k}={v!r}" for k, v in sorted(attrs.items(), key=lambda kv: str(kv[0])))
    return f"{bound.name}({shown[:80]})"


def bound_symbol(bound: Bound) -> str:
    """The symbol of one loop bound, as shown in messages (a constant shows its value)."""
    if isinstance(bound, ConstBound):
        return str(bound.value)
    if isinstance(bound, DynamicBound):
        return f"{bound.getter}(tile)"
    if bound.value is None:
        return f"<{bound.name}>"
    if is_numeric_value(bound.value):
        return f"<{bound.name} #{_ordinal(bound.value)}>"
    return f"<{_placeholder_name(bound)}>"
