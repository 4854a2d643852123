"""Debian's headless Chromium for the page tests, or a skip saying what is missing (.ci/run installs it)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

CHROMIUM, DRIVER = Path("/usr/bin/chromium"), shutil.which("chromedriver") or "/usr/bin/chromedriver"


def headless_chromium(profile: Path) -> Any:
    """A Selenium driver on headless Chromium with a fresh profile in `profile` (the caller quits it)."""
    if not CHROMIUM.exists() or not Path(DRIVER).exists():
        pytest.skip("Debian's chromium and chromium-driver are not installed (.ci/run installs them)")
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install 'sbert[dev]')")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    # Without the background-networking flags Chromium keeps dialling Google on this closed network.
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic",
                 "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 f"--user-data-dir={profile}"):  # fmt: skip
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(DRIVER), options=options)


def loaded_thumbnails(driver: Any) -> list[Any] | None:
    """The hits' thumbnails once every one has loaded (None until then: a WebDriverWait condition)."""
    from selenium.webdriver.common.by import By

    images = driver.find_elements(By.CSS_SELECTOR, "#hits img.thumb")
    ready = [i for i in images if driver.execute_script("return arguments[0].complete && arguments[0].naturalWidth", i)]
    return ready if images and len(ready) == len(images) else None


def searched_thumbnails(driver: Any, url: str, query: str) -> tuple[list[Any], list[str]]:
    """Type `query` into the search page at `url`; its hits' loaded thumbnails and the hits' texts."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(url + "/")
    driver.find_element(By.ID, "query").send_keys(query)
    driver.find_element(By.ID, "search-button").click()
    thumbs = WebDriverWait(driver, 30).until(loaded_thumbnails)
    return thumbs, [li.text for li in driver.find_elements(By.CSS_SELECTOR, "#hits li")]
