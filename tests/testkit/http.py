"""Asking a pod over HTTP from this host, as a browser would."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

__all__ = ["answers", "get"]

# Only what the test asks for: no proxy from the environment between this host and the pods.
_HTTP = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def get(url: str) -> Any:
    with _HTTP.open(url, timeout=10) as r:
        return json.loads(r.read())


def answers(url: str) -> Any:
    try:
        return get(url)
    except OSError:
        return None
