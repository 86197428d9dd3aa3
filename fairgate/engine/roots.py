"""A root of a function bracketed by two points: Brent's method as ``scipy.optimize.brentq`` runs it.

The engine finds a few roots per audit (the studentized range's critical values and the t its tails invert), and
importing ``scipy.optimize`` for them cost a tenth of a second of the CI gate's start-up. :func:`brentq` takes the
same steps in the same floating-point operations as scipy's C code (Charles Harris's ``brentq.c``), so the same
root to the last bit (``tests/engine/test_scipy_equivalents.py`` compares them).
"""

from __future__ import annotations

import math
from collections.abc import Callable

#: scipy's default relative tolerance (4 machine epsilons) and iteration limit.
RTOL = 4 * 2.220446049250313e-16
MAXITER = 100


def brentq(f: Callable[[float], float], a: float, b: float, *, xtol: float, rtol: float = RTOL) -> float:
    """A root of ``f`` within [a, b] (``f(a)`` and ``f(b)`` of opposite signs), to ``xtol + rtol |root|``.

    Raises ValueError as scipy does: a bracket whose ends have the same sign, a function value that is NaN,
    or no convergence within 100 iterations.

    >>> round(brentq(lambda x: x * x - 2.0, 0.0, 2.0, xtol=1e-12), 12)
    1.414213562373
    """
    previous, current = float(a), float(b)
    f_previous, f_current = _value(f, previous), _value(f, current)
    if f_previous * f_current > 0:
        raise ValueError("f(a) and f(b) must have different signs")
    if f_previous == 0:
        return previous
    if f_current == 0:
        return current
    # ``current`` is the best estimate, ``other`` the bracket's other end; ``step`` and ``step_before`` the last
    # two steps taken (their sizes decide whether interpolation is converging fast enough to trust).
    other = f_other = step = step_before = 0.0
    for _ in range(MAXITER):
        if f_previous * f_current < 0:  # the root moved between previous and current: a new bracket
            other, f_other = previous, f_previous
            step = step_before = current - previous
        if abs(f_other) < abs(f_current):  # keep the smaller value as the estimate
            previous, current, other = current, other, current
            f_previous, f_current, f_other = f_current, f_other, f_current
        tolerance = (xtol + rtol * abs(current)) / 2
        half = (other - current) / 2
        if f_current == 0 or abs(half) < tolerance:
            return current
        step_before, step = _next_steps(
            (previous, current, other), (f_previous, f_current, f_other), (step_before, step), half, tolerance
        )
        previous, f_previous = current, f_current
        if abs(step) > tolerance:
            current += step
        else:
            current += tolerance if half > 0 else -tolerance
        f_current = _value(f, current)
    raise ValueError(f"failed to converge after {MAXITER} iterations, value is {current}")


def _next_steps(
    x: tuple[float, float, float],
    fx: tuple[float, float, float],
    steps: tuple[float, float],
    half: float,
    tolerance: float,
) -> tuple[float, float]:
    """The (step before, step) pair after choosing the next step: an interpolation when it is short, else bisection.

    ``x``: previous, current and the bracket's other end; ``fx`` the function there; ``steps`` the last two steps.
    """
    (previous, current, other), (f_previous, f_current, f_other) = x, fx
    step_before, step = steps
    if abs(step_before) > tolerance and abs(f_current) < abs(f_previous):
        if previous == other:  # secant
            trial = -f_current * (current - previous) / (f_current - f_previous)
        else:  # inverse quadratic
            slope_previous = (f_previous - f_current) / (previous - current)
            slope_other = (f_other - f_current) / (other - current)
            trial = (
                -f_current
                * (f_other * slope_other - f_previous * slope_previous)
                / (slope_other * slope_previous * (f_other - f_previous))
            )
        if 2 * abs(trial) < min(abs(step_before), 3 * abs(half) - tolerance):
            return step, trial
    return half, half


def _value(f: Callable[[float], float], x: float) -> float:
    value = float(f(x))
    if math.isnan(value):
        raise ValueError(f"the function value at x={x} is NaN; solver cannot continue.")
    return value
