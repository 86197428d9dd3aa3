"""The general mechanism (user tables by config) and the policy's proxy section."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

import fairgate
from fairgate import proxy as fp
from fairgate.errors import DataError, PolicyError
from fairgate.policy.proxy import ProxyConfig
from tasks.inputs import proxy as tp


def write_tables(folder: Path) -> tuple[Path, Path]:
    names = folder / "p_group_given_name.csv"
    names.write_text("name,alpha,beta\nSmith,0.8,0.2\nO'Neil,0.3,0.7\n")
    areas = folder / "p_area_given_group.csv"
    # Area keys keep their zeros: read as text.
    areas.write_text("area,alpha,beta\n007,0.1,0.6\n008,0.9,0.4\n")
    return names, areas


def test_custom_tables_posterior_by_hand(tmp_path: Path) -> None:
    names, areas = write_tables(tmp_path)
    config = ProxyConfig.model_validate(
        {
            "method": "custom",
            "attribute": "grp",
            "columns": {"surname": "name", "area": "area"},
            "custom": {"name_table": str(names), "area_table": str(areas), "prior": {"alpha": 3, "beta": 1}},
        }
    )
    people = pl.DataFrame({"name": ["smith", "ONeil", "Nobody", "Nobody"], "area": ["007", "008", "007", "999"]})
    posterior, tables = tp.infer_posterior(people, config)
    assert tables.groups == ("alpha", "beta")
    wide = fp.wide_posterior(posterior, tables.groups)
    smith = 0.8 * 0.1 / (0.8 * 0.1 + 0.2 * 0.6)
    oneil = 0.3 * 0.9 / (0.3 * 0.9 + 0.7 * 0.4)
    geography = 0.75 * 0.1 / (0.75 * 0.1 + 0.25 * 0.6)
    assert wide["alpha"].to_list() == pytest.approx([smith, oneil, geography, 0.75])
    assert wide["fallback"].to_list() == ["surname_geography", "surname_geography", "geography_only", "prior"]


def test_custom_tables_must_share_groups(tmp_path: Path) -> None:
    names, _ = write_tables(tmp_path)
    areas = tmp_path / "bad_areas.csv"
    areas.write_text("area,alpha,gamma\n007,1,1\n")
    config = ProxyConfig.model_validate(
        {
            "method": "custom",
            "columns": {"surname": "name", "area": "area"},
            "custom": {"name_table": str(names), "area_table": str(areas)},
        }
    )
    with pytest.raises(DataError, match="beta"):
        tp.infer_posterior(pl.DataFrame({"name": ["Smith"], "area": ["007"]}), config)


def test_custom_table_path_must_exist() -> None:
    config = ProxyConfig.model_validate(
        {"method": "custom", "columns": {"surname": "name"}, "custom": {"name_table": "no/such/table.csv"}}
    )
    with pytest.raises(PolicyError, match="does not exist"):
        tp.infer_posterior(pl.DataFrame({"name": ["Smith"]}), config)


@pytest.mark.parametrize(
    ("proxy", "message"),
    [
        ("{method: bifsg, columns: {surname: s}}", "first_name"),
        ("{method: india, columns: {surname: s, zip: z}}", "pincode"),
        ("{method: custom}", "proxy.custom"),
        ("{method: bisg, mode: sometimes}", "mode"),
        ("{method: bisg, confidence_cut: 1.5}", "confidence_cut"),
        ("{method: bisg, colums: {}}", "unknown key"),
        ("{method: bisg, proxy_features: {cramers_v_threshold: 0}}", "cramers_v_threshold"),
    ],
)
def test_bad_proxy_sections_are_policy_errors(proxy: str, message: str) -> None:
    text = f"""
fairness_checker:
  sensitive_attributes: [{{name: race}}]
  metrics: [{{name: demographic_parity_difference, threshold: 0.1}}]
  proxy: {proxy}
"""
    with pytest.raises(PolicyError, match=message):
        fairgate.Policy.from_yaml(text, source="policy.yaml")


def test_default_attribute_names() -> None:
    assert ProxyConfig(method="bisg").attribute_name == "race"
    assert ProxyConfig.model_validate({"method": "india", "columns": {"state": "st"}}).attribute_name == (
        "caste_category"
    )
    assert ProxyConfig(method="bisg", attribute="ethnicity").attribute_name == "ethnicity"
