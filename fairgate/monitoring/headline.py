"""A monitoring night's headline: the windows' verdict, the drift detector's news and the episodes still open.

Three separate questions, never folded into one word: do tonight's windows fail the policy (the audit's gate on
each window's rows), did the detector raise a new alert tonight, and which drift episodes are still open (alerted on
an earlier night, not cleared since). A night whose windows fail never reads "no drift" alone, and an episode
stays in the headline every night until it clears. The exit code follows from it (:func:`exit_code`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from fairgate.engine.metric_labels import metric_label
from fairgate.verdicts import EXIT_FAIL, EXIT_PASS, InsufficientRule, exit_code_for

ExitOn = Literal["any", "alerts"]
EXIT_ON: tuple[str, ...] = ("any", "alerts")
MAX_ONGOING_NAMED = 3
WINDOW_WORDS = {"since_deployment": "since deployment"}


def window_words(window: str) -> str:
    """A window as words: "7 days", or "since deployment"."""
    return WINDOW_WORDS.get(window, f"{window} days")


def headline(
    windows: Sequence[Mapping[str, Any]],
    alerts: Sequence[Mapping[str, Any]],
    episodes: Sequence[Mapping[str, Any]],
    *,
    watching: bool,
    gate_enabled: bool = True,
    estimates: str | None = None,
) -> dict[str, Any]:
    """The night's headline, the one line the CLI, the e-mail and page 1 print (``text``), and its parts.

    ``windows`` (fail, pass, insufficient), ``drift`` (new_alert, no_new_alert, off), the open episodes' names
    (``ongoing``) and the report's ``badge`` word. A window marked ``estimated`` sums periods without labels yet;
    ``estimates`` (:func:`estimates_note`) says whether its estimated results count.
    """
    verdicts = [str(w.get("verdict")) for w in windows if w.get("verdict")]
    # A window summing the same periods as an earlier one holds the same numbers: counted once, under the first.
    failing = [w for w in windows if w.get("verdict") == "fail" and not w.get("same_as")]
    aliases: dict[str, list[str]] = {}
    for w in windows:
        if w.get("same_as"):
            same = {"window": w["same_as"], "estimated": w.get("estimated")}
            aliases.setdefault(window_key(same), []).append(window_words(str(w["window"])))
    state = "fail" if failing else ("pass" if "pass" in verdicts else "insufficient")
    n_failed = sum(int(w.get("n_failed") or 0) for w in failing)
    drift = "off" if not watching else ("new_alert" if alerts else "no_new_alert")
    ongoing = [episode_text(e) for e in episodes]
    undecided = sum(int(w.get("n_inconclusive") or 0) for w in windows if not w.get("same_as"))
    parts = [f"Windows: {_windows_text(state, failing, n_failed, gate_enabled, aliases, undecided)}"]
    if estimates:
        parts.append(f"Estimates: {estimates}")
    parts.append(f"Drift: {_drift_text(drift, alerts)}")
    if ongoing:
        named = "; ".join(ongoing[:MAX_ONGOING_NAMED])
        more = len(ongoing) - MAX_ONGOING_NAMED
        parts.append(f"Ongoing: {named}" + (f"; and {more} more" if more > 0 else ""))
    elif watching:
        parts.append("Ongoing: none")
    return {
        "windows": state,
        "n_failed": n_failed,
        "drift": drift,
        "n_alerts": len(alerts),
        "ongoing": ongoing,
        "badge": _badge(state if gate_enabled else "pass", drift, bool(ongoing)),
        "text": " · ".join(parts),
    }


def exit_code(
    head: Mapping[str, Any], exit_on: str, *, gate_enabled: bool = True, insufficient: InsufficientRule = "block"
) -> int:
    """The night's exit code: 1 on a new drift alert or failing windows, 4 on windows that judged nothing.

    4 only under the policy's ``ci_cd_gate.insufficient: block`` (the default; allow: 0); else 0.
    The windows' verdict gives the exit code an audit of it would give (``verdicts.exit_code_for``: the same rule,
    with the policy's gate and insufficient choice), unless ``exit_on`` is "alerts". An open episode alone does
    not: it alerted on its own night. A new alert exits 1 whatever the windows say.

    >>> head = {"drift": "no_new_alert", "windows": "insufficient"}
    >>> exit_code(head, "any"), exit_code(head, "any", insufficient="allow"), exit_code(head, "alerts")
    (4, 0, 0)
    """
    if head["drift"] == "new_alert":
        return EXIT_FAIL
    if exit_on != "any":
        return EXIT_PASS
    return exit_code_for(str(head["windows"]), gate_enabled=gate_enabled, insufficient=insufficient)


UNLABELLED = " without labels yet"


def window_key(window: Mapping[str, Any]) -> str:
    """A window's name among the night's: its label, set apart when it sums periods without labels yet."""
    return f"{window['window']}{UNLABELLED}" if window.get("estimated") else str(window["window"])


def estimates_note(estimated_windows: Sequence[Mapping[str, Any]], judged: bool) -> str | None:
    """How the night's estimated results count, in words; None when there are none.

    >>> note = estimates_note([{"results": [{"estimated": True, "value": 0.1}, {"estimated": True}]}], False)
    >>> note.split(", shown")[0]
    '1 label-dependent result estimated from the scores (rows without labels yet; 1 could not be)'
    """
    results = [r for w in estimated_windows for r in w.get("results", []) if r.get("estimated")]
    if not results:
        return None
    valued = sum(r.get("value") is not None for r in results)
    noun = "result" if valued == 1 else "results"
    missing = f"; {len(results) - valued} could not be" if valued < len(results) else ""
    counts = (
        "counted in the windows' verdict (labels.estimated_results: judge)" if judged else "shown apart, not counted"
    )
    return f"{valued} label-dependent {noun} estimated from the scores (rows without labels yet{missing}), {counts}"


def episode_text(episode: Mapping[str, Any]) -> str:
    """An open episode in words: metric on slicing, group (rate), direction, since its alert's night."""
    verb = "up" if episode.get("direction") == "up" else "down"
    component = str(episode.get("component") or "").replace("_", " ")
    rate = f", {component}" if component else ""
    return (
        f"{metric_label(str(episode['metric'])).lower()} by {episode['slicing']} ({episode['group']}{rate} {verb}) "
        f"since {episode['since']}"
    )


def _windows_text(
    state: str,
    failing: Sequence[Mapping[str, Any]],
    n_failed: int,
    gate_enabled: bool,
    aliases: dict[str, list[str]],
    undecided: int,
) -> str:
    if state == "pass":
        return f"pass ({undecided} inconclusive)" if undecided else "pass"
    if state == "insufficient":
        return "insufficient data (nothing could be judged)"

    def name(window: Mapping[str, Any]) -> str:
        words = " = ".join([window_words(str(window["window"])), *aliases.get(window_key(window), [])])
        return f"{words}{UNLABELLED}" if window.get("estimated") else words

    where = ", ".join(f"{int(w.get('n_failed') or 0)} in {name(w)}" for w in failing)
    noun = "result" if n_failed == 1 else "results"
    gate = "" if gate_enabled else "; the policy's gate is disabled"
    return f"FAIL ({n_failed} {noun}: {where}{gate})"


def _drift_text(drift: str, alerts: Sequence[Mapping[str, Any]]) -> str:
    if drift == "off":
        return "not watched (no alert rules, or no baseline)"
    if drift == "no_new_alert":
        return "no new alert"
    names = sorted({f"{metric_label(str(a['metric'])).lower()} by {a['slicing']} ({a['group']})" for a in alerts})
    return f"{len(alerts)} new alert{'s' if len(alerts) != 1 else ''} ({'; '.join(names)})"


def _badge(windows: str, drift: str, ongoing: bool) -> str:
    """The badge word: never a green all-clear while a window fails or an episode is open."""
    words = []
    if windows == "fail":
        words.append("FAIL")
    if drift == "new_alert":
        words.append("DRIFT")
    elif ongoing:
        words.append("DRIFT ONGOING")
    if words:
        return " · ".join(words)
    return "PASS" if windows == "pass" else "NO EVIDENCE"
