"""The report states the attenuation of proxy-weighted disparities and shows the corrected estimates."""

from __future__ import annotations

from report_docgen import synthetic_doc

from fairgate.report import build_view
from fairgate.report.format import fmt
from tasks.render.report import render_html

ATTENUATION = {
    "attenuated": True,
    "statement": "Proxy-weighted disparities shrink toward zero when the proxy misclassifies people.",
    "mode": "probabilistic",
    "groups": ["a", "b"],
    "n_people": 2000,
    "mixing_matrix": [[0.7, 0.3], [0.3, 0.7]],
    "prevalence": [0.5, 0.5],
    "condition_number": 2.5,
    "metrics": [
        {
            "metric": "demographic_parity_difference",
            "naive_value": 0.0612,
            "attenuation_factor": 0.4,
            "corrected": {"value": 0.153, "ci_low": 0.101, "ci_high": 0.205, "by_group": {}},
        },
        {"metric": "predictive_parity_difference", "naive_value": 0.02, "corrected": None, "reason": "not a rate"},
    ],
}


def test_attenuation_has_its_own_table_and_leaves_the_proxy_facts() -> None:
    doc = synthetic_doc({"race": ["a", "b"]}, seed=1)
    doc["proxy"] = {"method": "bisg", "attribute": "race", "attenuation": ATTENUATION}
    view = build_view(doc, min_cell_size=10)
    assert view.proxy_attenuation_statement.startswith("Proxy-weighted disparities shrink")
    first, second = view.proxy_attenuation
    assert (first.naive, first.corrected, first.factor) == ("0.061", "0.153 [0.101–0.205]", "0.400")
    assert second.corrected == fmt(None)  # not corrected: shown as undefined, never as 0
    assert second.note == "not a rate"
    assert not any(row.key.startswith("attenuation") for row in view.proxy)  # not flattened into the facts
    html = render_html(view)
    assert "Attenuation of proxy-weighted disparities" in html
    assert "0.153 [0.101–0.205]" in html


def test_no_attenuation_section_without_a_proxy() -> None:
    view = build_view(synthetic_doc({"race": ["a", "b"]}, seed=1), min_cell_size=10)
    assert view.proxy_attenuation == []
    assert "Attenuation of proxy-weighted disparities" not in render_html(view)
