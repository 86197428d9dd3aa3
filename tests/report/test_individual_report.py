"""The report's individual-fairness page: numbers from the document, suppression of small groups, glossary, PDF."""

from __future__ import annotations

import io
from typing import Any

import numpy as np
import polars as pl
import pytest
from pypdf import PdfReader

import fairgate
from fairgate.document import AuditDocument
from fairgate.engine.individual import IndividualInputs, assess_individual
from fairgate.report.build import build_view
from fairgate.report.suppress import Suppression
from tasks.render.report import html_to_pdf, render_charts, render_html

DATA = fairgate.__file__.rsplit("/", 2)[0] + "/../shared/data/compas/compas-scores-two-years.csv"
FEATURES = ["priors_count", "age", "juv_fel_count", "juv_misd_count", "juv_other_count"]


def _document(**sampling: int) -> dict[str, Any]:
    people = pl.read_csv(DATA).select(
        *FEATURES,
        pl.col("race"),
        pl.col("two_year_recid").cast(pl.Int64).alias("y_true"),
        pl.col("score_text").is_in(["Medium", "High"]).cast(pl.Int64).alias("y_pred"),
    )
    policy = fairgate.Policy.from_mapping(
        {
            "fairness_checker": {
                "sensitive_attributes": [{"name": "race"}],
                "metrics": [{"name": "demographic_parity_difference", "threshold": 0.5}],
                "statistics": {"n_bootstrap": 100},
                "individual_fairness": {
                    "features": FEATURES,
                    "min_consistency": 0.6,
                    "max_flip_rate": 0.05,
                    **sampling,
                },
            }
        }
    )
    decisions = people["y_pred"].to_numpy()
    flipped = np.where(np.arange(people.height) % 25 == 0, 1 - decisions, decisions)  # every 25th person: 4%
    inputs = IndividualInputs(
        features=people.select(FEATURES).to_numpy().astype(float),
        feature_names=FEATURES,
        decisions=decisions,
        attributes={"race": people["race"].to_numpy().astype(object)},
        counterfactual=flipped,
    )
    cube = fairgate.build_cube(people.select("race", "y_true", "y_pred"), policy)
    parts = [fairgate.compute_slicing(cube, s, policy) for s in fairgate.plan_slicings(cube, policy)]
    individual = assess_individual(inputs, policy)
    return fairgate.adjudicate(cube, parts, policy, individual=individual).to_dict()


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    return _document()


def test_page_shows_the_documents_numbers_and_hides_small_groups(document: dict[str, Any]) -> None:
    view = build_view(document, min_cell_size=20)
    page = view.individual
    assert page is not None
    assert page.consistency == f"{document['individual_fairness']['consistency']['value']:.3f}"
    rows = {r.group: r for r in page.consistency_rows}
    assert rows["Native American"].n == "suppressed"  # 18 people < min_cell_size 20
    assert rows["Native American"].value == ""
    # A group shows its value exactly when the document's suppression leaves it (the rule is the report's, not
    # this page's), and a shown value is the document's own number.
    suppression = Suppression.of_document(AuditDocument.model_validate(document), min_cell_size=20)
    groups = {g["group"]["race"]: g for g in document["individual_fairness"]["consistency"]["groups"]}
    for row in page.consistency_rows:
        hidden = suppression.hides(["race"], groups[row.group]["group"])
        assert (row.value == "") == hidden, row
        if not hidden:
            assert row.value == f"{groups[row.group]['value']:.3f}"
            assert row.n == f"{groups[row.group]['n']:,}"
    assert any(row.value != "" for row in page.consistency_rows)  # the check above ran on a shown row
    flips = {r.group: r for r in page.flip_rows}
    assert flips["Native American"].rate == ""
    assert page.flip_rate == f"{document['individual_fairness']['counterfactual']['flip_rate']:.3f}"
    terms = [g.term for g in view.glossary_metrics]
    assert "Consistency" in terms
    assert "Counterfactual flip rate" in terms


def test_no_page_without_features(document: dict[str, Any]) -> None:
    plain = {**document, "individual_fairness": {"theil_index": 0.1, "generalized_entropy_index": 0.1}}
    assert build_view(plain).individual is None


def test_pdf_has_the_page(document: dict[str, Any]) -> None:
    view = build_view(document)
    pdf = html_to_pdf(render_html(view, render_charts(view), full_tables=False))
    text = " ".join(page.extract_text() for page in PdfReader(io.BytesIO(pdf)).pages)
    assert "Individual fairness: similar people, similar decisions" in text
    assert "Counterfactual flips" in text
    assert "random sample" not in text  # everyone was queried: no estimate's words
    assert "estimated over everyone" not in text


def test_a_sampled_consistency_says_so_on_its_page() -> None:
    """sample_people below COMPAS's 7,214 people: the page and the PDF say the numbers are a sample's estimate."""
    sampled = _document(sample_people=3000, seed=2)
    assert sampled["individual_fairness"]["consistency"]["sampled"] == {
        "people_sampled": 3000,
        "people": 7214,
        "seed": 2,
    }
    view = build_view(sampled)
    assert view.individual is not None
    assert "estimated from a seeded random sample of 3,000 of 7,214 people (seed 2" in view.individual.setup
    pdf = html_to_pdf(render_html(view, render_charts(view), full_tables=False))
    text = " ".join(" ".join(page.extract_text().split()) for page in PdfReader(io.BytesIO(pdf)).pages)
    assert "estimated from a seeded random sample of 3,000 of 7,214 people" in text
    assert "estimated over everyone" in text
    assert "no (too few sampled people)" in text  # Asian: 14 sampled of 32
