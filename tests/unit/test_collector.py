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
        frozen = freeze_startup_objects()
        # Frozen objects still go when their last reference does (other threads of this process run
        # on), so the count can only have dropped since, never grown.
        assert 0 < gc.get_freeze_count() <= frozen
    finally:
        gc.unfreeze()  # this test process goes on making and dropping objects
    assert gc.get_freeze_count() == 0
