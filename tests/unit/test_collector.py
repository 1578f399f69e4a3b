"""The collector pause restores the collector as it found it, also when the work fails."""

from __future__ import annotations

import gc

import pytest

from driftrag.collector import collector_paused, freeze_startup_objects


def test_the_collector_is_paused_inside_and_restored_after() -> None:
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
        with collector_paused():  # nested: the inner pause must not switch it back on
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_the_collector_comes_back_after_an_error() -> None:
    with pytest.raises(RuntimeError), collector_paused():
        raise RuntimeError("boom")
    assert gc.isenabled()


def test_startup_objects_are_frozen_out_of_the_collectors_reach() -> None:
    try:
        assert freeze_startup_objects() == gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()  # this test process goes on making and dropping objects
    assert gc.get_freeze_count() == 0
