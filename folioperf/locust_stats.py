"""Locust's own statistics (its web UI, HTML report and CSV files) counted as folioperf's terminal summary
counts: the totals — the web UI's RPS and failures, the Aggregated row — are of API calls alone. A transaction
is the sum of calls already counted, a script step or a scheduled latency no request at all; their rows stay,
apart from the totals. An API call's row is named by its path (`GET` `/accounts`): its type is the method
already, and `GET GET /accounts` said it twice.

Locust logs every request into one `RequestStats` per process (`log_request`, `log_error`); on a master the
workers' rows and totals are merged as they come, so counting this way in every process counts it so
everywhere."""

from __future__ import annotations

from typing import Any

from folioperf.metrics import ERROR, SCHEDULED, SCRIPT, TRANSACTION

NOT_CALLS = frozenset((TRANSACTION, SCHEDULED, SCRIPT, ERROR))


def row_name(method: str, name: str) -> str:
    """`GET /accounts` of type GET is `/accounts`; in a scenario `CICO · GET /accounts` is `CICO · /accounts`."""
    if method in NOT_CALLS:
        return name
    group, sep, call = name.rpartition(" · ")
    return f"{group}{sep}{call.removeprefix(method + ' ')}"


def count_calls_only(stats: Any) -> None:
    """Make `stats` (a Locust RequestStats) count as the module docstring says."""
    from locust.stats import StatsError  # here: `row_name` is read without Locust (which patches with gevent)

    def log_request(method: str, name: str, response_time: int, content_length: int) -> None:
        if method not in NOT_CALLS:
            stats.total.log(response_time, content_length)  # `total` is replaced when Locust resets its stats
        stats.entries[(row_name(method, name), method)].log(response_time, content_length)

    def log_error(method: str, name: str, error: Any) -> None:
        if method not in NOT_CALLS:
            stats.total.log_error(error)
        row = row_name(method, name)
        stats.entries[(row, method)].log_error(error)
        key = StatsError.create_key(method, row, error)
        entry = stats.errors.get(key)
        if entry is None:
            entry = stats.errors[key] = StatsError(method, row, error)
        entry.occurred()

    stats.log_request, stats.log_error = log_request, log_error
