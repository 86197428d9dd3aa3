"""One message per bad input, as a user sees it: the installed command in a fresh process prints exactly one
``error:`` line for a refused input, exits 2, and no log line of Prefect's repeats it as an ERROR (a task run's
"Finished in state Failed", a flow run's crash report) or adds a traceback.

The cases are refused inside the flow (after Prefect's run has started: where the echoes came from) and
before it (the policy, the options), for each command that runs a flow: audit, compare, mitigate.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from pipeline_helpers import Inputs, rewrite_csv, run_fairgate

Case = Callable[[Inputs], tuple[list[str], str]]

# A log line at ERROR (Prefect's console format "hh:mm:ss.fff | ERROR | ...") or a traceback.
ERROR_LOG = re.compile(r"\|\s*ERROR\s*\||^ERROR\b|Traceback")


def labels_without_the_label_column(i: Inputs) -> tuple[list[str], str]:
    rewrite_csv(i.labels, "select id, two_year_recid as outcome from t")
    return i.args(), "two_year_recid"


def predictions_not_binary(i: Inputs) -> tuple[list[str], str]:
    rewrite_csv(i.predictions, "select id, score, y_pred * 3 as y_pred from t")
    return i.args(), "y_pred"


def score_out_of_range(i: Inputs) -> tuple[list[str], str]:
    rewrite_csv(i.predictions, "select id, score * 10 as score, y_pred from t")
    return i.args(), "score"


def policy_negative_seed(i: Inputs) -> tuple[list[str], str]:
    i.policy.write_text(i.policy.read_text().replace("n_bootstrap: 100", "n_bootstrap: 100, seed: -1"))
    return i.args(), "statistics.seed"


def compare_candidate_not_binary(i: Inputs) -> tuple[list[str], str]:
    candidate = i.folder / "candidate.csv"
    candidate.write_bytes(i.predictions.read_bytes())
    rewrite_csv(candidate, "select id, score, y_pred * 3 as y_pred from t")
    args = ["compare", "--policy", str(i.policy), "--baseline", str(i.predictions), "--candidate", str(candidate)]
    return [*args, "--labels", str(i.labels), "--attributes", str(i.attributes), "--out", str(i.out)], "y_pred"


def mitigate_training_without_the_label(i: Inputs) -> tuple[list[str], str]:
    training = i.folder / "training.csv"
    training.write_bytes(i.attributes.read_bytes())  # id and the attributes, but no label column
    args = ["mitigate", "--method", "reweighing", "--policy", str(i.policy), "--training", str(training)]
    return [*args, "--out", str(i.out)], "two_year_recid"


CASES: list[Case] = [
    labels_without_the_label_column,
    predictions_not_binary,
    score_out_of_range,
    policy_negative_seed,
    compare_candidate_not_binary,
    mitigate_training_without_the_label,
]


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=[c.__name__ for c in CASES])
def test_a_bad_input_is_one_error_line_and_no_error_log(case: Case, inputs: Inputs) -> None:
    args, fragment = case(inputs)
    done = run_fairgate(args, cwd=inputs.folder)
    stderr = done.stderr
    assert done.returncode == 2, stderr
    errors = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, stderr
    assert fragment in errors[0], stderr
    echoes = [line for line in stderr.splitlines() if ERROR_LOG.search(line)]
    assert not echoes, stderr
    message = errors[0].removeprefix("error:").strip()
    assert sum(message[:60] in line for line in stderr.splitlines()) == 1, stderr  # not repeated as a log line
    assert not inputs.out.exists() or not any(Path(inputs.out).iterdir())
