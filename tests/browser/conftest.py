"""Keeps a screenshot of the page when a browser test fails (in the
artifacts directory, beside the screenshots the tests take on purpose)."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: Any, call: Any) -> Any:
    outcome = yield
    report = outcome.get_result()
    if report.when == "call" and report.failed:
        driver = item.funcargs.get("browser")
        shot = item.module.__dict__.get("screenshot")
        if driver is not None and shot is not None:
            try:
                shot(driver, f"FAILED-{item.name}")
            except Exception:  # noqa: BLE001 - a failing screenshot must not hide the failure
                pass
