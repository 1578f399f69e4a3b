import pytest

from driftrag.errors import BackendUnavailableError
from driftrag.store.health import BackendHealth


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_calls_pass_while_the_server_is_up() -> None:
    health = BackendHealth(5, clock=Clock())
    health.check()
    assert not health.known_down


def test_known_down_fails_at_once_and_lets_one_probe_through_per_interval() -> None:
    clock = Clock()
    health = BackendHealth(5, clock=clock)
    health.failed("Connection refused")
    assert health.known_down
    with pytest.raises(BackendUnavailableError, match=r"Neo4j is unreachable \(down for 0 s; next check in 5 s\)"):
        health.check()
    clock.now += 4.9
    with pytest.raises(BackendUnavailableError, match="Connection refused"):
        health.check()
    clock.now += 0.2
    health.check()  # the probe goes through
    with pytest.raises(BackendUnavailableError):
        health.check()  # and only one
    health.failed("Connection refused")  # the probe failed: the next one waits a whole interval
    clock.now += 4.0
    with pytest.raises(BackendUnavailableError, match="down for 9 s"):
        health.check()


def test_a_success_clears_the_state() -> None:
    clock = Clock()
    health = BackendHealth(5, clock=clock)
    health.failed("gone")
    clock.now += 6
    health.check()
    health.succeeded()
    assert not health.known_down
    health.check()
