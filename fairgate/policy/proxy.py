"""Policy section ``proxy:``: inferring sensitive attributes that were never collected.

Example::

    proxy:
      method: bisg                 # bisg | bifsg | india | custom
      attribute: race              # the attribute it produces (listed in sensitive_attributes)
      mode: probabilistic          # or most_likely (hard assignment when max P >= confidence_cut)
      confidence_cut: 0.8
      columns: {surname: last_name, first_name: first_name, zip: zip5}
      labels: {white: White, black: Black}   # inferred group -> value used in the audit (optional)
      proxy_features: {columns: [zip5, age], cramers_v_threshold: 0.3}
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, model_validator

from fairgate.policy.base import STRICT

ProxyMethod = Literal["bisg", "bifsg", "india", "custom"]
ProxyMode = Literal["probabilistic", "most_likely"]

# The attribute each built-in method produces unless the policy names another.
DEFAULT_ATTRIBUTE: dict[str, str] = {
    "bisg": "race",
    "bifsg": "race",
    "india": "caste_category",
    "custom": "group",
}


class _Strict(BaseModel):
    model_config = STRICT


class ProxyColumns(_Strict):
    """Input columns (after alignment) the proxy reads. Which are required depends on the method."""

    surname: str = "surname"
    """The surname column."""
    first_name: str | None = None
    """The first-name column (`bifsg`)."""
    zip: str | None = None
    """The ZIP code column (`bisg`, `bifsg`), kept as zero-padded text."""
    pincode: str | None = None
    """The Indian PIN code column (`india`)."""
    state: str | None = None
    """The Indian state column (`india`)."""
    area: str | None = None
    """`custom`: the column holding the area key matched against the area table."""


class CustomTables(_Strict):
    """User tables for ``method: custom``: CSV or Parquet paths, relative to the working directory.

    ``name_table``: column ``name`` then one column per group holding P(group | name).
    ``area_table``: column ``area`` then one column per group holding P(area | group) (each column sums to 1).
    ``prior``: P(group) for the geography-only and prior fallbacks; omitted -> uniform over the groups.
    """

    name_table: str
    """A CSV or Parquet table of P(group | name), relative to the working directory."""
    area_table: str | None = None
    """A table of P(area | group); absent: names only."""
    prior: dict[str, float] | None = None
    """The population's group shares; absent: from the tables."""
    name_normalisation: Literal["surname", "exact"] = "surname"
    """How names are normalised before matching: `surname` (Census rules) or `exact` (trim and upper case only)."""


class ProxyFeatures(_Strict):
    """Proxy-feature detection: how strongly each model input predicts each sensitive attribute."""

    enabled: bool = True
    """Run the proxy-feature check."""
    columns: list[str] = []
    """The model inputs checked (e.g. `[zip5, age]`)."""
    cramers_v_threshold: float = Field(default=0.3, gt=0.0, le=1.0)
    """Cramér's V at or above which a categorical input is flagged."""
    correlation_ratio_threshold: float = Field(default=0.3, gt=0.0, le=1.0)
    """The correlation ratio at or above which a numeric input is flagged."""
    min_balanced_accuracy_lift: float = Field(default=0.05, ge=0.0, le=1.0)
    """Held-out balanced accuracy above the majority baseline (1/K) by at least this much confirms a proxy."""
    folds: int = Field(default=5, ge=2, le=20)
    """Cross-validation folds of the held-out check."""
    numeric_bins: int = Field(default=10, ge=2, le=100)
    """Bins a numeric input is cut into."""
    seed: int = Field(default=0, ge=0, le=2**63 - 1)
    """The seed of the folds."""


class ProxyConfig(_Strict):
    """The ``proxy:`` section: which method infers which attribute, from which columns, and how it is used.

    In ``probabilistic`` mode each person's group probabilities weight the audit; in ``most_likely`` mode each
    person is assigned the most likely group when its probability is at least ``confidence_cut``.
    """

    method: ProxyMethod = "bisg"
    """`bisg` (surname and ZIP), `bifsg` (first names too), `india` (SECC surname x census district via PIN) or `custom`
    (your tables)."""
    attribute: str | None = None
    """The attribute it produces (declare it in `sensitive_attributes`)."""
    mode: ProxyMode = "probabilistic"
    """`probabilistic`: each person counts in every group with weight P(group | name, place); `most_likely`: a hard
    assignment when max P >= `confidence_cut`."""
    confidence_cut: float = Field(default=0.8, ge=0.0, le=1.0)
    """`most_likely` mode: the smallest posterior assigned; people below it are audited as the unknown group (with
    `missing: unknown`) or left out."""
    columns: ProxyColumns = ProxyColumns()
    """The input columns the proxy reads (surname, first name, ZIP, PIN, state, area)."""
    labels: dict[str, str] = {}
    """Inferred group -> the value used in the audit (e.g. `{white: White, black: Black}`), so it matches a declared
    attribute's values."""
    custom: CustomTables | None = None
    """`method: custom`: your name and area tables and prior."""
    proxy_features: ProxyFeatures | None = None
    """Flag model inputs that predict the attribute (proxy features)."""
    calibrated: bool = True
    """The posteriors match the population's shares: the gate then judges attenuation-corrected gaps. False: results on
    the inferred attribute are judged as measured and can fail, never pass."""
    collected_at_column: str | None = None
    """The column holding when the declared attributes were collected (`attribute_max_age_days` applies)."""

    @model_validator(mode="after")
    def _method_has_its_inputs(self) -> ProxyConfig:
        c = self.columns
        if self.method in ("bisg", "bifsg") and c.pincode is not None:
            raise ValueError(f"proxy.columns.pincode is for method india; method {self.method} uses columns.zip")
        if self.method == "bifsg" and c.first_name is None:
            raise ValueError("method bifsg needs proxy.columns.first_name (the first-name column); or use bisg")
        if self.method == "india" and c.zip is not None:
            raise ValueError("method india uses proxy.columns.pincode and columns.state, not columns.zip")
        if self.method == "india" and c.pincode is None and c.state is None:
            raise ValueError("method india needs proxy.columns.state (and pincode for district-level geography)")
        if self.method == "custom" and self.custom is None:
            raise ValueError("method custom needs a proxy.custom section with name_table (and area_table)")
        if self.method != "custom" and self.custom is not None:
            raise ValueError(f"proxy.custom is only read by method custom; method is {self.method}")
        if self.custom is not None and self.custom.area_table is not None and c.area is None:
            raise ValueError("proxy.custom.area_table needs proxy.columns.area (the column holding the area key)")
        return self

    @property
    def attribute_name(self) -> str:
        """The sensitive attribute the proxy produces."""
        return self.attribute or DEFAULT_ATTRIBUTE[self.method]
