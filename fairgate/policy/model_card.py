"""The ``model_card:`` section: what the model is for and who answers for it, in the owner's words.

Every field is optional; the report and the model card file name the ones left out. fairgate adds what it knows
itself (evaluation window, rows, policy hash, verdict, judged results): see fairgate/document/model_card.py.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, field_validator

from fairgate.policy.base import STRICT

# The fields in the order the report and the card show them, with their labels.
CARD_FIELDS: dict[str, str] = {
    "owner": "Owner",
    "intended_use": "Intended use",
    "out_of_scope_uses": "Out-of-scope uses",
    "training_data": "Training data",
    "evaluation_data": "Evaluation data",
    "limitations": "Limitations",
    "contact": "Contact",
}


class ModelCard(BaseModel):
    """The policy's ``model_card`` section: owner, intended and out-of-scope uses, data, limitations, contact."""

    model_config = STRICT

    owner: str | None = Field(default=None, min_length=1, max_length=200)
    """Who owns the model."""
    intended_use: str | None = Field(default=None, min_length=1, max_length=2000)
    """What the model is for."""
    out_of_scope_uses: list[str] = []
    """Uses the model must not be put to; one text or a list."""
    training_data: str | None = Field(default=None, min_length=1, max_length=2000)
    """Where the training data is described (a name, a path or a link)."""
    evaluation_data: str | None = Field(default=None, min_length=1, max_length=2000)
    """What the audited rows are (the window and row counts are added from the data)."""
    limitations: list[str] = []
    """Known limitations; one text or a list."""
    contact: str | None = Field(default=None, min_length=1, max_length=200)
    """Whom to contact about the model."""

    @field_validator("out_of_scope_uses", "limitations", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @field_validator("out_of_scope_uses", "limitations")
    @classmethod
    def _no_empty_entries(cls, value: list[str]) -> list[str]:
        if any(not entry.strip() for entry in value):
            raise ValueError("an entry is empty; write what it says or remove it")
        return value

    def missing(self) -> list[str]:
        """The labels of the fields the policy leaves out, in card order."""
        return [label for name, label in CARD_FIELDS.items() if not getattr(self, name)]
