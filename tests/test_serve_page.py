"""The search page in a real browser: Debian's headless Chromium driven by Selenium and chromedriver."""

from pathlib import Path

import pytest

from sbert import SentenceEncoder
from sbert.search.index import build_index
from tests.browser import CHROMIUM, DRIVER, headless_chromium
from tests.conftest import SHARED_DATA
from tests.serve_helpers import serve_in_thread

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install 'sbert[dev]')")
if not CHROMIUM.exists() or not Path(DRIVER).exists():
    pytest.skip(
        "Debian's chromium and chromium-driver are not installed (.ci/run installs them)", allow_module_level=True
    )

from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support import expected_conditions  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

MODEL = "all-MiniLM-L6-v2"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    base = tmp_path_factory.mktemp("page")
    lines = (SHARED_DATA / "stsbenchmark" / "sts-dev.csv").read_text(encoding="utf-8").splitlines()
    corpus = [*list(dict.fromkeys(line.split("\t")[5] for line in lines))[:200], "<b>a tag</b> is shown as text"]
    model = SentenceEncoder.load(MODEL, device="cpu")
    build_index(model.encode(corpus), corpus, base / "index", "flat", MODEL, model.weights_digest())
    srv = serve_in_thread("--model", MODEL, "--index", str(base / "index"))
    yield srv, corpus
    assert srv.stop()


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    driver = headless_chromium(tmp_path_factory.mktemp("chrome"))
    yield driver
    driver.quit()


@pytest.mark.e2e  # long (make test's 6-minute budget); CI runs it in the e2e step
def test_typing_a_query_lists_the_hits(server, browser):
    srv, corpus = server
    browser.get(srv.url + "/")
    WebDriverWait(browser, 30).until(
        expected_conditions.text_to_be_present_in_element((By.ID, "status"), "texts indexed")
    )
    assert "201 texts indexed" in browser.find_element(By.ID, "status").text
    browser.find_element(By.ID, "query").send_keys(corpus[3])
    browser.find_element(By.ID, "search-button").click()
    hits = WebDriverWait(browser, 30).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#hits li"))
    assert len(hits) == 5 and hits[0].text.endswith(corpus[3]) and hits[0].text.startswith("1.000")
    browser.find_element(By.ID, "query").clear()
    browser.find_element(By.ID, "query").send_keys("a tag is shown")
    browser.find_element(By.ID, "search-button").click()
    WebDriverWait(browser, 30).until(expected_conditions.text_to_be_present_in_element((By.ID, "hits"), "<b>a tag</b>"))
    assert not browser.find_elements(By.CSS_SELECTOR, "#hits b")  # corpus text is shown, never parsed as HTML


def test_pasted_text_finds_similar_pairs(server, browser):
    srv, _ = server
    browser.get(srv.url + "/")
    pasted = (
        "A man is playing a guitar.\nThe stock market fell today.\nSomeone plays the guitar.\nShares dropped sharply."
    )
    browser.find_element(By.ID, "pasted").send_keys(pasted)
    browser.find_element(By.ID, "mine-button").click()
    pairs = WebDriverWait(browser, 30).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#pairs li"))
    top_two = " ".join(p.text for p in pairs[:2])
    assert "guitar" in pairs[0].text or "guitar" in pairs[1].text
    assert "A man is playing a guitar." in top_two and "Someone plays the guitar." in top_two


def test_errors_show_on_the_page(server, browser):
    srv, _ = server
    browser.get(srv.url + "/")
    browser.find_element(By.ID, "pasted").send_keys("only one line")
    browser.find_element(By.ID, "mine-button").click()
    assert "at least two" in browser.find_element(By.ID, "mine-error").text
