"""The static site (scripts/site.py): source splitting, math, the link checker, a full build."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

from shared.config import REPO_ROOT, real_papers

SOURCE = '''"""Module docstring with $x$."""

import os

# A comment run
# on two lines.
X = 1  # an inline comment stays in the code


@staticmethod
def f(a):
    """Docstring of f."""
    return a


class C:
    """Class docstring."""

    size: int = 3

    def m(self):
        """Method docstring."""
        self.cache = {}
        return 1

    def n(self):
        return 2
'''


@pytest.fixture(scope="module")
def site():
    spec = importlib.util.spec_from_file_location("site_builder", REPO_ROOT / "scripts" / "site.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while it executes
    spec.loader.exec_module(module)
    return module


def _code_columns(html: str) -> str:
    return "".join(re.findall(r"<pre>(.*?)</pre>", html, re.S))


def test_claims_read_in_the_shared_verdict_words_and_colours(site):
    """Issue 52: the site prints the words of reproduce.py and the README, coloured by their
    tone (a control that fails as it must is good news, a diagnostic is neither)."""
    claim = {"name": "c", "role": "claim", "statement": "s", "measured": 0.5, "threshold": 1.0}
    toy = {
        "claims": [
            {**claim, "holds": True, "passed": True},
            {**claim, "name": "n", "role": "negative_control", "holds": False, "passed": True},
            {**claim, "name": "d", "role": "diagnostic", "holds": False, "passed": True},
        ]
    }
    rows = site.claims_rows(toy, None)
    assert [row[5] for row in rows] == ["PASS", "fails, as a control must", "info: does not hold"]
    assert [row[7] for row in rows] == ["not run"] * 3
    assert site.seeds_verdict(toy) == {"words": "1 PASS", "tone": "ok"}
    broken = {"claims": [{**toy["claims"][1], "holds": True, "passed": False}]}
    assert site.seeds_verdict(broken) == {
        "words": "no claim evaluated · control broken",
        "tone": "bad",
    }
    builder = site.SiteBuilder(Path("/nonexistent"))  # its template environment; writes nothing
    cell = builder.env.from_string('<td class="verdict {{ w | tone }}">{{ w }}</td>')
    assert cell.render(w="fails, as a control must") == (
        '<td class="verdict ok">fails, as a control must</td>'
    )
    assert 'class="verdict info"' in cell.render(w="info: does not hold")


def test_split_source_puts_notes_beside_their_code(site):
    source = site.split_source(SOURCE, "demo.py")
    notes = [s.note for s in source.sections]
    assert notes == [
        "Module docstring with $x$.",
        "A comment run\non two lines.",
        "Docstring of f.",
        "Class docstring.",
        "Method docstring.",
    ]
    lines = [s.lines for s in source.sections]
    assert lines[0] == [3]  # the docstring is left, not right
    assert lines[1] == [7]  # the code after the comment run, up to the next note
    assert lines[2] == [10, 11, 13]  # decorator and def beside the docstring, which is removed
    assert lines[4][0] == 21 and 22 not in lines[4] and 26 in lines[4]  # n joins m's section
    assert source.symbols == {
        "f": 11,
        "C": 16,
        "C.m": 21,
        "C.n": 26,
        "X": 7,
        "C.size": 19,
        "C.cache": 23,
    }


def test_section_dividers_become_headings_not_rows_of_dashes(site):
    # Issue 43, item 7: "# ---- rollout" rendered as a row of dashes in the notes column.
    assert site.comment_markdown(["# ------------------------------------ rollout"]) == (
        "#### rollout"
    )
    assert site.comment_markdown(["# ---- update (Sec. 3) ----"]) == "#### update (Sec. 3)"
    boxed = ["# " + "-" * 40, "# Source files", "# " + "-" * 40, "# split into sections"]
    assert site.comment_markdown(boxed) == "#### Source files\n\nsplit into sections"
    assert site.comment_markdown(["# a note", "# on two lines"]) == "a note\non two lines"
    html = site.Markdown().render(site.comment_markdown(["# ---- rollout"]), "demo.py")
    assert "<h4>rollout</h4>" in html and "----" not in html


def test_render_source_anchors_every_line_and_def(site):
    source = site.split_source(SOURCE, "demo.py")
    html = site.render_source(source, site.Markdown())
    code = _code_columns(html)
    assert "an inline comment stays in the code" in code
    assert "Docstring of f" not in code and "A comment run" not in code
    assert "Docstring of f." in html
    for line in (3, 7, 10, 11, 13, 21, 26):
        assert f'id="demo-L{line}"' in html and f'href="#demo-L{line}"' in html
    def_line = re.search(r'<span class="src-line" id="demo-L21">.*?</span>', html).group(0)
    assert 'id="demo-C.m"' in def_line
    assert "<math" in html  # the module docstring's $x$


def test_notes_show_angle_brackets_as_text(site):
    source = site.split_source(
        'def f():\n    """A base_<style> row; x <b> y."""\n    return 1\n', "demo.py"
    )
    html = site.render_source(source, site.Markdown(raw_html=False))
    assert "base_&lt;style&gt; row" in html and "<style>" not in html and "<b>" not in html


def test_math_renders_to_mathml(site):
    html = site.Markdown().render("Square: $x^2$, and\n\n$$\n\\arg\\max_a f(a)\n$$\n", "demo.py")
    assert html.count("<math") == 2 and "<msup>" in html and "$" not in html
    assert 'display="block"' in html


@pytest.mark.parametrize("tex", ["x^", r"\notacommand x"])
def test_unconvertible_math_names_file_and_expression(site, tex):
    expected = re.escape(f"papers/demo/method.py: cannot convert math ${tex}$")
    with pytest.raises(site.SiteError, match=expected):
        site.Markdown().render(f"before ${tex}$ after", "papers/demo/method.py")


def test_docstring_args_become_a_list(site):
    doc = """Do it.

    Args:
        n: how many,
            at most 3.
        k (int): size.
    """
    markdown = site.docstring_markdown(doc)
    assert "**Args:**" in markdown
    assert "- `n`: how many,\n  at most 3." in markdown and "- `k` (int): size." in markdown


def _write(path: Path, body: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"<!doctype html><html><body>{body}</body></html>")


def test_checker_flags_broken_links_anchors_images_and_raw_math(site, tmp_path):
    _write(tmp_path / "b.html", '<h2 id="here">B</h2><img src="fig.png" alt="">')
    (tmp_path / "fig.png").write_bytes(b"png")
    _write(
        tmp_path / "a.html",
        '<p><a href="b.html#here">ok</a> <a href="b.html">ok</a> <a href="#top" id="top">ok</a>'
        ' <a href="https://example.org/x#y">external</a> costs $5</p>'
        "<p><code>$a$ and $$b$$</code></p><pre>\\(c\\)</pre>",
    )
    assert site.check_site(tmp_path) == []

    _write(
        tmp_path / "bad.html",
        '<p><a href="missing.html">x</a> <a href="b.html#nowhere">y</a> <a href="#gone">z</a></p>'
        '<img src="missing.png" alt=""><p>raw $a$ here</p><p>and $$b$$ and \\(c\\)</p>',
    )
    assert sorted(site.check_site(tmp_path)) == sorted(
        [
            "bad.html: broken link 'missing.html'",
            "bad.html: missing anchor #nowhere in 'b.html#nowhere'",
            "bad.html: missing anchor #gone in '#gone'",
            "bad.html: missing image 'missing.png'",
            "bad.html: raw math '$a$'",
            "bad.html: raw math '$$'",
            "bad.html: raw math '$$'",
            "bad.html: raw math '\\\\('",
        ]
    )


def test_symbol_anchor_accepts_the_readme_spellings(site, tmp_path):
    paper = site.Paper({"slug": "demo"}, tmp_path)
    paper.files = [
        site.split_source(SOURCE, "method.py"),
        site.split_source("def g(): pass", "train.py"),
    ]
    assert paper.symbol_anchor("f") == "method-f"
    assert paper.symbol_anchor("method.C.m") == "method-C.m"
    assert paper.symbol_anchor("C(size=4)") == "method-C"
    assert paper.symbol_anchor("n") == "method-C.n"  # a method's bare name, when unique
    assert paper.symbol_anchor("train.g") == "train-g"
    assert paper.symbol_anchor("train.py") == "file-train.py"
    assert paper.symbol_anchor("shared.loop.fit") is None
    assert paper.symbol_anchor("size") is None  # bare field names stay plain


def test_failed_check_keeps_the_previous_site(site, tmp_path, monkeypatch):
    out = tmp_path / "site"
    _write(out / "index.html", "old")
    (out / "assets").mkdir()
    (out / "assets" / "style.css").write_text("")

    def broken_build(folder: Path):
        _write(folder / "index.html", '<a href="nowhere.html">x</a>')
        return site.Stats()

    monkeypatch.setattr(site, "build_site", broken_build)
    stats, problems = site.build_checked(out)
    assert stats is None and problems == ["index.html: broken link 'nowhere.html'"]
    assert "old" in (out / "index.html").read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site"]  # no temporary folder left


def test_full_site_builds_and_checks(built_site):
    out = built_site  # built and checked by scripts/site.py, once per session (conftest)
    assert sorted(p.name for p in out.parent.iterdir()) == ["site"]  # no temporary folder left
    pages = sorted((out / "papers").glob("*/index.html"))
    assert len(pages) == 19 and len(list(out.rglob("*.html"))) == 21  # + home, findings
    assert any("<math" in page.read_text() for page in pages)
    assert (out / "assets" / "style.css").is_file()

    # Home -> paper page -> the line that computes an equation: two clicks.
    home = (out / "index.html").read_text()
    assert 'href="papers/adamcb/index.html"' in home and 'href="findings.html"' in home

    # The findings page: one row per real paper at least, each linking to its paper page.
    findings = (out / "findings.html").read_text()
    for slug in real_papers():
        assert f'href="papers/{slug}/index.html"' in findings, slug
    adamcb = (out / "papers" / "adamcb" / "index.html").read_text()
    table = re.search(r'id="equations-to-code".*?</table>', adamcb, re.S).group(0)
    assert '<a href="#method-exp3m_probabilities"><code>method.exp3m_probabilities</code></a>' in (
        table
    )
    assert re.search(
        r'id="method-L\d+"><a [^>]*>\d+</a><span class="src-def" '
        r'id="method-exp3m_probabilities">',
        adamcb,
    )
    assert 'id="file-method.py"' in adamcb and '<img src="results/toy.png"' in adamcb
