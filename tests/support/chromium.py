"""Debian's Chromium under selenium for the console's browser tests (one window size, headless)."""

from __future__ import annotations

import shutil
from contextlib import contextmanager
from typing import Iterator

CHROMIUM, DRIVER = shutil.which("chromium"), shutil.which("chromedriver")


@contextmanager
def chromium() -> Iterator["object"]:
    """A headless Chromium driver, 1400x1000, quit on exit."""
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1000"):
        options.add_argument(argument)
    driver = webdriver.Chrome(options=options, service=Service(DRIVER))
    try:
        yield driver
    finally:
        driver.quit()
