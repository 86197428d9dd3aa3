"""Policy section ``proxy:``: inferring sensitive attributes that were never collected. Owned by the proxy work."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class ProxyConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    method: str = "bisg"
