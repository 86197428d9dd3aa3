"""Policy section ``delivery:``: who receives the report and how it is sent. Owned by the report/delivery work."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class DeliveryConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    recipients: list[str] = []
