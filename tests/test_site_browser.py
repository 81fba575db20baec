"""The built site in a real browser: headless Debian chromium, driven through its chromedriver.

The link checker in ``scripts/site.py`` reads the HTML; this test looks at what a student sees:
every image decoded, the math typeset as MathML boxes with a size (not left as TeX), and a
console without errors, on the home page and three paper pages (one with math in its
docstrings). It skips, saying why, where chromium, chromedriver or selenium is missing
(``.ci/run`` installs Debian's ``chromium`` and ``chromium-driver``).
"""

from __future__ import annotations

import shutil

import pytest

PAGES = (
    "index.html",
    "papers/adamcb/index.html",
    "papers/em_llm/index.html",
    "papers/etcd/index.html",
    "findings.html",
)
MATH_PAGE = "papers/adamcb/index.html"  # its docstrings carry $...$ math
WINDOW = (1280, 900)
LOAD_TIMEOUT_S = 120  # generous: the test shares two cores with pytest's other worker

# Images that did not decode, typeset math boxes, and raw TeX left in text outside code.
BROKEN_IMAGES_JS = """
return Array.from(document.images)
  .filter(img => !(img.complete && img.naturalWidth > 0))
  .map(img => img.getAttribute('src'));
"""
MATH_BOXES_JS = """
const boxes = Array.from(document.querySelectorAll('math'));
return [boxes.length, boxes.filter(m => m.getBoundingClientRect().width > 0).length];
"""
RAW_TEX_JS = r"""
const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
const raw = [];
for (let node = walker.nextNode(); node; node = walker.nextNode()) {
  if (node.parentElement.closest('pre, code, math, script, style')) continue;
  const text = node.textContent;
  if (/\$[^$\s][^$]*\$|\\\(|\\\[/.test(text)) raw.push(text.trim().slice(0, 80));
}
return raw;
"""


def _chromium() -> tuple[str, str]:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if browser is None or driver is None:
        pytest.skip("no chromium + chromedriver (Debian: apt-get install chromium chromium-driver)")
    return browser, driver


@pytest.fixture(scope="module")
def browser():
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium (the docs extra)")
    binary, driver_path = _chromium()
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(flag)
    options.add_argument(f"--window-size={WINDOW[0]},{WINDOW[1]}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(driver_path))
    yield driver
    driver.quit()


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES)
def test_page_renders_in_chromium(built_site, browser, page):
    path = built_site / page  # the session's one build (conftest)
    assert path.is_file(), f"the site has no {page}"
    browser.get(path.as_uri())
    # get() can return before a large page (em_llm's) finishes loading on a busy machine: wait
    # for it (a readiness wait, not a speed check), then look.
    ui = pytest.importorskip("selenium.webdriver.support.ui")
    ui.WebDriverWait(browser, LOAD_TIMEOUT_S).until(
        lambda driver: driver.execute_script("return document.readyState") == "complete"
    )
    assert browser.execute_script(BROKEN_IMAGES_JS) == [], f"{page}: images did not load"
    assert browser.execute_script(RAW_TEX_JS) == [], f"{page}: TeX left untypeset"
    total, sized = browser.execute_script(MATH_BOXES_JS)
    assert sized == total, f"{page}: {total - sized} of {total} math elements have no size"
    if page == MATH_PAGE:
        assert total > 0, f"{page}: its docstrings' math produced no <math> elements"
    errors = [e["message"] for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert errors == [], f"{page}: console errors {errors}"


@pytest.mark.slow
def test_checks_catch_a_broken_page(browser, tmp_path):
    """The negative control: each check above fires on a page built to fail it."""
    page = tmp_path / "broken.html"
    page.write_text(
        "<!doctype html><html><body><p>raw $x^2$ left</p><img src='missing.png'>"
        "<math><mi>x</mi></math><script>console.error('boom')</script></body></html>"
    )
    browser.get(page.as_uri())
    assert browser.execute_script(BROKEN_IMAGES_JS) == ["missing.png"]
    assert browser.execute_script(RAW_TEX_JS) == ["raw $x^2$ left"]
    errors = [e["message"] for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert any("boom" in e for e in errors) and any("missing.png" in e for e in errors)
