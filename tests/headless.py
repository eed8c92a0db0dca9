"""Debian's Chromium, headless, driven by Selenium through Debian's chromedriver.

The browser starts with the flags that keep it from reaching out (no background
networking, component updates, sync or QUIC) in a new profile directory, and logs every
network request it makes (Chrome's performance log), so a test can prove a page fetched
nothing. ``.ci/run`` installs the ``chromium`` and ``chromium-driver`` packages; Selenium
is given both paths, so it never looks for or downloads a browser or a driver.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1400,1800",
)


@contextmanager
def chromium() -> Iterator[Any]:
    """A headless Chromium WebDriver in a fresh profile, quit afterwards."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for flag in (*FLAGS, f"--user-data-dir={profile}"):
            options.add_argument(flag)
        options.set_capability("goog:loggingPrefs", {"performance": "ALL"})
        driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
        try:
            yield driver
        finally:
            driver.quit()


def requested(driver: Any) -> list[str]:
    """Every URL the browser asked for since the last call (from the performance log)."""
    urls = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message.get("method") == "Network.requestWillBeSent":
            urls.append(message["params"]["request"]["url"])
    return urls
