"""The cyclic collector around long-lived objects: paused while they are made, then frozen before it resumes."""

from __future__ import annotations

import gc

from fairgate.engine.collection import collection_paused, long_lived


def test_long_lived_objects_are_frozen_before_the_collector_resumes() -> None:
    passes: list[int] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            passes.append(info["generation"])

    assert gc.isenabled()
    frozen_before = gc.get_freeze_count()
    gc.callbacks.append(count)
    try:
        with long_lived():
            assert not gc.isenabled()
            made = [[i] for i in range(200_000)]  # far beyond the youngest generation's threshold
        assert gc.isenabled()
        assert gc.get_freeze_count() >= frozen_before + len(made)  # out of the generations a pass walks
        [[i] for i in range(10)]  # allocations after the block: a pass would start here if gen 0 were full
        assert passes == []  # no pass walked the block's objects, during or after it
    finally:
        gc.callbacks.remove(count)
        gc.unfreeze()  # the test process keeps its usual generations


def test_a_block_that_fails_resumes_the_collector_without_freezing() -> None:
    frozen_before = gc.get_freeze_count()
    try:
        with long_lived():
            raise ValueError("refused")
    except ValueError:
        pass
    assert gc.isenabled()
    assert gc.get_freeze_count() == frozen_before


def test_nested_pauses_resume_once() -> None:
    with collection_paused():
        with collection_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
