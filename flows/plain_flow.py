"""``plain_flow``: Prefect's ``@flow`` for flows whose parameters are plain JSON values (texts, numbers, None,
lists and dicts of them), recorded on the flow run without importing FastAPI.

Prefect records a flow run's parameters through ``fastapi.encoders.jsonable_encoder``, and importing it loads
FastAPI and Starlette (about 0.3 s of CPU quiet, 9% of a CI gate's ``fairgate audit --json`` on COMPAS). For plain
JSON values that encoder returns equal values, so they are copied as they are; any other value (a path, a
model, a date) goes to Prefect's own encoder, as before.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

from prefect import Flow

P = ParamSpec("P")
R = TypeVar("R")

_SCALARS = (str, int, float, bool, type(None))


def _plain(value: Any) -> bool:
    """Whether ``value`` is JSON as it is: exact scalars (no subclasses such as enums), lists, dicts with text
    keys (none of the ``_sa`` keys that FastAPI's encoder leaves out)."""
    if type(value) in _SCALARS:
        return True
    if type(value) is list:
        return all(_plain(item) for item in value)
    if type(value) is dict:
        return all(type(k) is str and not k.startswith("_sa") and _plain(v) for k, v in value.items())
    return False


def _copied(value: Any) -> Any:
    """A plain value with fresh containers (as FastAPI's encoder returns them)."""
    if type(value) is list:
        return [_copied(item) for item in value]
    if type(value) is dict:
        return {key: _copied(item) for key, item in value.items()}
    return value


class PlainParametersFlow(Flow[P, R]):
    """A Prefect flow whose plain parameters are serialised without FastAPI (see the module's docstring)."""

    def serialize_parameters(self, parameters: dict[str, Any]) -> dict[str, Any]:
        """Plain parameters as they are; anything else through Prefect's own ``serialize_parameters``."""
        if self.ismethod or self.isclassmethod or not all(_plain(v) for v in parameters.values()):
            return super().serialize_parameters(parameters)
        return {key: _copied(value) for key, value in parameters.items()}


def plain_flow(**options: Any) -> Callable[[Callable[P, R]], PlainParametersFlow[P, R]]:
    """``@plain_flow(name=..., task_runner=...)``: as ``@prefect.flow(...)``, with the options of
    ``prefect.Flow``."""

    def decorate(fn: Callable[P, R]) -> PlainParametersFlow[P, R]:
        return PlainParametersFlow(fn=fn, **options)

    return decorate
