"""Every bad input of issue 3 -> exit code 2, a message naming the file and the column, nothing written."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from pipeline_helpers import Inputs, assert_refused
from pipeline_helpers import rewrite_csv as _rewrite
from typer.testing import CliRunner

from cli import app


def missing_file(i: Inputs) -> tuple[list[str], list[str]]:
    i.labels.unlink()
    return i.args(), ["labels", "does not exist", i.labels.name]


def empty_file(i: Inputs) -> tuple[list[str], list[str]]:
    i.attributes.write_text("")
    return i.args(), ["attributes", "empty", i.attributes.name]


def header_only(i: Inputs) -> tuple[list[str], list[str]]:
    i.labels.write_text("id,two_year_recid\n")
    return i.args(), [i.labels.name, "no rows"]


def broken_row(i: Inputs) -> tuple[list[str], list[str]]:
    lines = i.predictions.read_text().splitlines()
    lines[3000] = lines[3000] + ",0.5,extra"
    i.predictions.write_text("\n".join(lines) + "\n")
    return i.args(), [
        i.predictions.name,
        "not a well-formed CSV",
        "line 3001 has 5 fields, the header has 3",
        "broken row",
    ]


def duplicate_ids(i: Inputs) -> tuple[list[str], list[str]]:
    _rewrite(i.labels, "select * from t union all (select * from t where id in (3, 4, 8))")
    return i.args(), [i.labels.name, "'id'", "duplicate", "6 row(s)"]


def missing_column(i: Inputs) -> tuple[list[str], list[str]]:
    _rewrite(i.attributes, "select id, race, age_cat from t")
    return i.args(), [i.attributes.name, "'sex'", "is missing", "columns present"]


def label_two(i: Inputs) -> tuple[list[str], list[str]]:
    _rewrite(i.labels, "select id, case when id = 7 then 2 else two_year_recid end as two_year_recid from t")
    return i.args(), [i.labels.name, "'two_year_recid'", "1 row(s)", "'2'"]


def label_yes(i: Inputs) -> tuple[list[str], list[str]]:
    _rewrite(
        i.labels, "select id, case when id = 7 then 'yes' else two_year_recid::varchar end as two_year_recid from t"
    )
    return i.args(), [i.labels.name, "'two_year_recid'", "'yes'", "1 row(s)", "outside the allowed set"]


def nan_score(i: Inputs) -> tuple[list[str], list[str]]:
    _rewrite(
        i.predictions, "select id, case when id in (1, 3) then 'nan'::double else score end as score, y_pred from t"
    )
    return i.args(), [i.predictions.name, "'score'", "NaN", "2 row(s)"]


def score_above_one(i: Inputs) -> tuple[list[str], list[str]]:
    _rewrite(i.predictions, "select id, case when id = 5 then 1.7 else score end as score, y_pred from t")
    return i.args(), [i.predictions.name, "'score'", "1.7", "[0, 1]"]


def unknown_attribute_value(i: Inputs) -> tuple[list[str], list[str]]:
    _rewrite(i.attributes, "select id, race, case when id = 9 then 'Unknown' else sex end as sex, age_cat from t")
    return i.args(), [i.attributes.name, "'sex'", "'Unknown'", "1 row(s)"]


def policy_typo(i: Inputs) -> tuple[list[str], list[str]]:
    i.policy.write_text(i.policy.read_text().replace("min_group_size", "min_grup_size"))
    return i.args(), [i.policy.name, "min_grup_size", "unknown key"]


def sql_injection_column(i: Inputs) -> tuple[list[str], list[str]]:
    evil = 'two_year_recid\\"; drop table runs; --'
    i.policy.write_text(i.policy.read_text().replace("y_true: two_year_recid", f'y_true: "{evil}"'))
    return i.args(), [i.labels.name, "is missing", "drop table runs"]


CASES: list[Callable[[Inputs], tuple[list[str], list[str]]]] = [
    missing_file,
    empty_file,
    header_only,
    broken_row,
    duplicate_ids,
    missing_column,
    label_two,
    label_yes,
    nan_score,
    score_above_one,
    unknown_attribute_value,
    policy_typo,
    sql_injection_column,
]


@pytest.mark.parametrize("case", CASES, ids=[c.__name__ for c in CASES])
def test_bad_input_exits_2_with_a_clear_message_and_writes_nothing(
    case: Callable[[Inputs], tuple[list[str], list[str]]], runner: CliRunner, inputs: Inputs
) -> None:
    args, expected = case(inputs)
    before = sorted(p.name for p in inputs.folder.iterdir())
    result = runner.invoke(app, args)
    assert_refused(result, expected, inputs, before)
    assert result.stdout == ""
