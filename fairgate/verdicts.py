"""The audit's verdict words, what "passed" means, and the exit code each verdict gives: defined once, here.

- ``pass``: every judged result is within the policy under the gate's decision rule.
- ``fail``: the results show a disparity beyond the policy (evidence, under the decision rule).
- ``insufficient``: nothing could be judged (too few people or events in every result): no evidence either way.
  It is never a pass; whether it blocks (a non-zero exit) is the policy's ``ci_cd_gate.insufficient`` choice.

Every place that asks "did it pass" (the CLI, compare's promotion, registry write-back tags, events, monitoring)
asks :func:`passed`; every exit code of an audit comes from :func:`exit_code_for`.
"""

from __future__ import annotations

from typing import Literal, TypeAlias

Verdict: TypeAlias = Literal["pass", "fail", "insufficient"]
VERDICTS: tuple[Verdict, ...] = ("pass", "fail", "insufficient")
#: What ``ci_cd_gate.insufficient`` may say: ``block`` (exit 4, the default) or ``allow`` (exit 0, still not a pass).
InsufficientRule: TypeAlias = Literal["block", "allow"]

EXIT_PASS, EXIT_FAIL, EXIT_INSUFFICIENT = 0, 1, 4


def verdict_word(verdict: object) -> str:
    """The verdict as every machine-read place spells it: the audit document's own word, in lower case.

    The event's label and payload, the flow run's state message and the MLflow tags all use it.

    >>> verdict_word("FAIL"), verdict_word("insufficient")
    ('fail', 'insufficient')
    """
    return str(verdict).lower()


def passed(verdict: object) -> bool:
    """Whether a verdict (as a document or summary carries it, any case) is a pass; ``insufficient`` never is.

    >>> passed("pass"), passed("PASS"), passed("fail"), passed("insufficient"), passed(None)
    (True, True, False, False, False)
    """
    return str(verdict).lower() == "pass"


def insufficient_sentence(rule: str) -> str:
    """What an ``insufficient`` verdict means and what the policy makes of it (page 1, the CLI, the e-mail).

    >>> "exit code 0" in insufficient_sentence("allow"), "exit code 4" in insufficient_sentence("block")
    (True, True)
    """
    blocks = (
        "it blocks (exit code 4), as the policy's ci_cd_gate.insufficient: block says"
        if rule == "block"
        else "the policy's ci_cd_gate.insufficient: allow lets it through (exit code 0)"
    )
    return (
        "Nothing could be judged: every result rests on too few people or events to show either compliance or a "
        f"disparity. This is not evidence of unfairness, nor a pass; {blocks}. Collect more data per group (or "
        "lower intersectional_analysis.min_group_size / statistics.min_events, where that is justified)."
    )


def exit_code_for(verdict: str, *, gate_enabled: bool = True, insufficient: InsufficientRule = "block") -> int:
    """The exit code of an audit with this verdict: 0 pass, 1 fail, 4 insufficient (0 when the policy allows it).

    A disabled gate exits 0 whatever the verdict.

    >>> exit_code_for("fail"), exit_code_for("insufficient"), exit_code_for("insufficient", insufficient="allow")
    (1, 4, 0)
    """
    if not gate_enabled or passed(verdict):
        return EXIT_PASS
    if verdict == "insufficient":
        return EXIT_INSUFFICIENT if insufficient == "block" else EXIT_PASS
    return EXIT_FAIL
