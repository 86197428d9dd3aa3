"""The ``task:`` and ``multiclass:`` policy keys: what kind of model is audited (issue 15).

``task`` is ``binary`` (the default: every audit written before these keys existed), ``multiclass``,
``regression`` or ``ranking``. A multiclass audit declares its classes (labels as they appear in the data, in
order when they are ordered, e.g. risk tiers) and may name the *adverse* classes: then the tier model is judged
as a binary decision too, "adverse or not" (e.g. ``[Medium, High]`` for COMPAS's tiers).

These models are not part of ``Policy`` yet (the pipeline does not read them this release); ``TaskSettings``
holds the two keys together with their cross-checks so that ``Policy`` can take them over as two fields.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

TaskKind = Literal["binary", "multiclass", "regression", "ranking"]


class _Strict(BaseModel):
    # As core.py's: unknown keys are errors, models are immutable (core.py imports policy modules, not back).
    model_config = ConfigDict(extra="forbid", frozen=True)


class MulticlassOptions(_Strict):
    """The ``multiclass:`` section: the declared classes and, optionally, the adverse ones.

    >>> options = MulticlassOptions(classes=["Low", "Medium", "High"], adverse_classes=["Medium", "High"])
    >>> options.class_index("High"), options.adverse_indices
    (2, (1, 2))
    """

    # Every label y_true and y_pred may hold, as text (YAML may read 1 or true); a value outside is an error.
    classes: list[str] = Field(min_length=2, max_length=1000)
    # Ordered-outcome option: these classes are the adverse outcome of a binary decision ("medium or high").
    adverse_classes: list[str] | None = None

    @field_validator("classes", "adverse_classes", mode="before")
    @classmethod
    def _as_strings(cls, values: Any) -> Any:
        if isinstance(values, list):
            return [str(v) for v in values]
        return values

    @model_validator(mode="after")
    def _consistent(self) -> MulticlassOptions:
        if len(set(self.classes)) != len(self.classes):
            raise ValueError(f"multiclass.classes lists a class twice: {self.classes}")
        if self.adverse_classes is not None:
            stray = [c for c in self.adverse_classes if c not in self.classes]
            if stray:
                raise ValueError(
                    f"multiclass.adverse_classes names {stray}, which are not in multiclass.classes "
                    f"{self.classes}; write classes from that list"
                )
            if len(set(self.adverse_classes)) != len(self.adverse_classes):
                raise ValueError(f"multiclass.adverse_classes lists a class twice: {self.adverse_classes}")
            if not self.adverse_classes or len(self.adverse_classes) == len(self.classes):
                raise ValueError(
                    "multiclass.adverse_classes must name some but not all classes (a binary decision needs both "
                    f"outcomes); got {self.adverse_classes} of {self.classes}"
                )
        return self

    def class_index(self, label: str) -> int:
        """The position of a class in ``classes`` (its code in the multiclass cube)."""
        return self.classes.index(label)

    @property
    def adverse_indices(self) -> tuple[int, ...]:
        """The codes of the adverse classes (empty without the ordered-outcome option)."""
        return tuple(self.class_index(c) for c in self.adverse_classes or [])


class TaskSettings(_Strict):
    """``task:`` with the section its kind needs: ``multiclass:`` goes with ``task: multiclass`` only.

    >>> TaskSettings().task
    'binary'
    >>> TaskSettings.model_validate({"task": "multiclass", "multiclass": {"classes": ["a", "b", "c"]}}).task
    'multiclass'
    """

    task: TaskKind = "binary"
    multiclass: MulticlassOptions | None = None

    @model_validator(mode="after")
    def _section_matches_task(self) -> TaskSettings:
        if self.task == "multiclass" and self.multiclass is None:
            raise ValueError(
                "task: multiclass needs a multiclass: section declaring the classes, e.g. "
                "multiclass: {classes: [low, medium, high]}"
            )
        if self.multiclass is not None and self.task != "multiclass":
            raise ValueError(f"a multiclass: section is only read with task: multiclass (task is {self.task!r})")
        return self
