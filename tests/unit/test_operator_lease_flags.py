"""kubetrain-operator's Lease timings: the flags reach the elector, and timings that cannot work
(a takeover before the leader has stepped down) are refused with one error line."""

from __future__ import annotations

import pytest

from kubetrain.operator import main


def test_the_defaults_are_client_gos() -> None:
    config = main.lease_config(main.parser().parse_args([]), "me")
    assert (config.lease_duration, config.renew_deadline, config.retry_period) == (15.0, 10.0, 2.0)


def test_the_flags_reach_the_lease_config() -> None:
    args = main.parser().parse_args(
        [
            "--leader-election-id=lead",
            "--leader-election-namespace=ns",
            "--leader-elect-lease-duration=8",
            "--leader-elect-renew-deadline=5",
            "--leader-elect-retry-period=1",
        ]
    )
    config = main.lease_config(args, "replica-a")
    assert (config.name, config.namespace, config.identity) == ("lead", "ns", "replica-a")
    assert (config.lease_duration, config.renew_deadline, config.retry_period) == (8.0, 5.0, 1.0)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["--leader-elect-lease-duration=5", "--leader-elect-renew-deadline=5"],
            "--leader-elect-lease-duration must be greater than --leader-elect-renew-deadline",
        ),
        (
            ["--leader-elect-renew-deadline=2", "--leader-elect-retry-period=2"],
            "--leader-elect-renew-deadline must be greater than 1.2 x --leader-elect-retry-period",
        ),
        (["--leader-elect-lease-duration=7.5"], "must be a whole number of seconds"),
        (["--leader-elect-retry-period=0"], "must be more than 0"),
    ],
)
def test_timings_that_cannot_work_are_refused(
    flags: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main.main(flags)
    assert exited.value.code == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    assert len(errors) == 1
    assert message in errors[0]
