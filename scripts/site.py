"""Build the static site: every paper's README, claims and annotated source, labml style.

    python scripts/site.py                  # build into site/ and check it
    python scripts/site.py --out /tmp/site  # build elsewhere

One page per paper (``papers/<slug>/index.html``): the README (results block regenerated from
``results/*.json``, math typeset as MathML, figures copied), the claims as a table, then the
paper's source files in reading order, each in two columns: docstrings and comment blocks
rendered as Markdown on the left, the code they explain on the right. Anchors: ``file-<name>``
for a file's section, ``<stem>-<qualname>`` for a def or class (``method-HSICTest.pvalue``),
``<stem>-L<n>`` for line n (``method-L42``).

Nothing is fetched at build or view time (no CDN, fonts or JavaScript). The site is built in a
temporary folder next to the target, then checked: a broken internal link, a missing anchor or
image, or math left as raw ``$...$`` text fails the build (one line per problem) and the
previous site stays in place; only a clean site is renamed into place.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import inspect
import io
import os
import re
import shutil
import sys
import tempfile
import time
import tokenize
from collections import Counter
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from types import ModuleType

import yaml
from jinja2 import Environment, FileSystemLoader, StrictUndefined
from latex2mathml.converter import convert as latex_to_mathml
from markdown_it import MarkdownIt
from markdown_it.token import Token
from markupsafe import Markup
from mdit_py_plugins.anchors import anchors_plugin
from mdit_py_plugins.dollarmath import dollarmath_plugin
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from shared.claims import (  # noqa: E402
    claim_label,
    claim_verdict,
    claims_summary,
    summary_tone,
    verdict_tone,
)
from shared.findings import paper_findings  # noqa: E402

CATALOG = REPO_ROOT / "configs" / "catalog.yaml"
ASSETS = Path(__file__).resolve().parent / "site_assets"
DEFAULT_OUT = REPO_ROOT / "site"
PYGMENTS_STYLE = "default"
RESULTS_MARKERS = ("<!-- results:begin -->", "<!-- results:end -->")
# README sections whose code spans become links to the definitions they name.
LINKED_SECTIONS = ("Reading order", "Symbols", "Equations to code")
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp")
EXTERNAL = ("http://", "https://", "mailto:", "data:")
GOOGLE_SECTION = re.compile(r"^(Args|Arguments|Returns|Yields|Raises|Attributes):\s*$")
GOOGLE_ENTRY = re.compile(r"^(\*{0,2}[A-Za-z_]\w*(?:, \*{0,2}[A-Za-z_]\w*)*)((?: \([^)]*\))?:\s)")
SPHINX_ROLE = re.compile(r":(?:class|func|meth|attr|mod|data|exc|obj):(?=`)")
RULER = re.compile(r"^\s*([-=#*~_])\1{3,}\s*$")  # decorative comment lines: ----, ====
# A section divider that carries its title: "# ------------ rollout" (or "---- name ----").
DIVIDER = re.compile(r"^\s*([-=#*~_])\1{3,}\s+(?P<title>.*?\S)(?:\s+\1{4,})?\s*$")
CALL_SUFFIX = re.compile(r"\(.*\)$")  # `AdamFamily(variant=...)` names AdamFamily
# Text the checker takes for math that did not render: $$, \(, \[ or $x...$ within one block.
RAW_MATH = re.compile(r"\$\$|\\\(|\\\[|\$[^$\s][^$]*\$")
# Standard LaTeX that latex2mathml 3.81 does not know, spelled in a form it does.
LATEX_ALIASES = {re.compile(r"\\arg(?![A-Za-z])"): r"\\operatorname{arg}"}
UNKNOWN_COMMAND = re.compile(r">\\[A-Za-z]+<")  # latex2mathml passes unknown \commands through
SKIPPED_TAGS = {"code", "pre", "script", "style"}  # raw-math check does not look inside these
INLINE_TAGS = {"a", "em", "strong", "span", "b", "i", "sub", "sup", "small", "code", "math"}


class SiteError(Exception):
    """A build problem; the message names the offending file."""


def _load_render_tables() -> ModuleType:
    """``scripts/render_tables.py``, which owns the README's results block."""
    spec = importlib.util.spec_from_file_location(
        "render_tables", REPO_ROOT / "scripts" / "render_tables.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ---------------------------------------------------------------------------------------------
# Markdown and math


class Markdown:
    """CommonMark + tables + ``$...$`` / ``$$...$$`` math typeset by latex2mathml.

    The source being rendered is kept on the instance so that a LaTeX expression latex2mathml
    cannot convert fails the build naming its file; ``math_count`` feeds the summary line.
    """

    def __init__(self, heading_ids: bool = False, raw_html: bool = True) -> None:
        # Docstrings and comments are rendered with raw_html=False: a "<style>" or "a <b" in
        # them is text, where passed through as HTML it would swallow the rest of the page.
        self.md = MarkdownIt("commonmark", {"html": raw_html}).enable("table")
        dollarmath_plugin(self.md, allow_digits=False, renderer=self._math)
        if heading_ids:
            anchors_plugin(self.md, min_level=1, max_level=3)
        self.source = ""
        self.math_count = 0

    def _math(self, tex: str, options: dict) -> str:
        display = "block" if options.get("display_mode") else "inline"
        spelled = tex
        for pattern, replacement in LATEX_ALIASES.items():
            spelled = pattern.sub(replacement, spelled)
        try:
            mathml = latex_to_mathml(spelled, display=display)
        except Exception as error:  # latex2mathml raises many unrelated exception types
            raise SiteError(f"{self.source}: cannot convert math ${tex}$ ({error!r})") from error
        if UNKNOWN_COMMAND.search(mathml):
            raise SiteError(f"{self.source}: cannot convert math ${tex}$ (unknown command)")
        self.math_count += 1
        return mathml

    def parse(self, text: str, source: str) -> list[Token]:
        self.source = source
        return self.md.parse(text)

    def render_tokens(self, tokens: list[Token], source: str) -> str:
        self.source = source
        return self.md.renderer.render(tokens, self.md.options, {})

    def render(self, text: str, source: str) -> str:
        return self.render_tokens(self.parse(text, source), source)


def docstring_markdown(doc: str) -> str:
    """A docstring as Markdown: Google-style ``Args:`` blocks become bulleted lists (argument
    names as code), Sphinx roles (``:class:`X```) plain code spans."""
    out, lines, i = [], inspect.cleandoc(doc).splitlines(), 0
    while i < len(lines):
        match = GOOGLE_SECTION.match(lines[i])
        i += 1
        if not match:
            out.append(lines[i - 1])
            continue
        out += ["", f"**{match.group(1)}:**", ""]
        base, bullets = None, 0
        while i < len(lines) and (not lines[i].strip() or lines[i].startswith(" ")):
            line, i = lines[i], i + 1
            if line.strip():
                indent = len(line) - len(line.lstrip())
                base = base or indent
                starts_entry = indent == base and (GOOGLE_ENTRY.match(line.strip()) or not bullets)
                entry = GOOGLE_ENTRY.sub(r"`\1`\2", line.strip(), count=1)
                out.append(f"- {entry}" if starts_entry else f"  {line.strip()}")
                bullets += bool(starts_entry)
        out.append("")
    return SPHINX_ROLE.sub("", "\n".join(out))


def comment_markdown(comments: list[str]) -> str:
    """A run of ``#`` comment lines as Markdown: the ``# `` prefix and ruler lines removed; a
    section divider's title (``# ---- rollout``, or a line boxed between two rulers) becomes a
    heading, so the notes column reads it as the section it opens, not as a row of dashes."""
    text = [re.sub(r"^\s*#(?: |$)?", "", line, count=1) for line in comments]
    out = []
    for i, line in enumerate(text):
        if RULER.match(line):
            continue
        divider = DIVIDER.match(line)
        boxed = 0 < i < len(text) - 1 and RULER.match(text[i - 1]) and RULER.match(text[i + 1])
        if divider or boxed:
            title = divider["title"] if divider else line.strip()
            out.append(f"#### {title}\n")
        else:
            out.append(line)
    return "\n".join(out).strip("\n")


# ---------------------------------------------------------------------------------------------
# Source files: split into (note, code) sections


@dataclass
class Section:
    """One row of a file's page: Markdown for the left column, line numbers for the right."""

    note: str
    lines: list[int]


@dataclass
class SourceFile:
    name: str  # e.g. "method.py"
    text: str
    sections: list[Section]
    symbols: dict[str, int]  # qualname ("HSICTest.pvalue") -> line of its def, class or field
    defs: set[str]  # the qualnames of symbols that are defs or classes
    origin: str  # names the file in errors, e.g. "papers/etcd/method.py"

    @property
    def stem(self) -> str:
        return Path(self.name).stem

    @property
    def file_id(self) -> str:
        return f"file-{self.name}"

    def def_id(self, qualname: str) -> str:
        return f"{self.stem}-{qualname}"

    def line_id(self, line: int) -> str:
        return f"{self.stem}-L{line}"


def _full_line_comments(text: str, name: str) -> dict[int, str]:
    """Line number -> comment, for comments that fill their line (inline comments excluded)."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError) as error:
        raise SiteError(f"{name}: cannot tokenize ({error})") from error
    return {
        tok.start[0]: tok.string
        for tok in tokens
        if tok.type == tokenize.COMMENT and not tok.line[: tok.start[1]].strip()
    }


def _docstring_lines(node: ast.AST, lines: list[str]) -> range | None:
    """The lines of ``node``'s docstring when it stands on lines of its own, else None."""
    body = getattr(node, "body", None)
    if not body or not isinstance(body[0], ast.Expr):
        return None
    value = body[0].value
    if not (isinstance(value, ast.Constant) and isinstance(value.value, str)):
        return None
    before = lines[value.lineno - 1][: value.col_offset]
    after = lines[value.end_lineno - 1][value.end_col_offset :]
    if before.strip() or (after.strip() and not after.strip().startswith("#")):
        return None
    return range(value.lineno, value.end_lineno + 1)


def _definitions(tree: ast.Module) -> list[tuple[str, ast.AST]]:
    """Every def and class, nested ones included, with its dotted qualname, in source order."""
    found: list[tuple[str, ast.AST]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                found.append((prefix + child.name, child))
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(tree, "")
    return found


def _assigned_names(statement: ast.stmt, owner: str | None = None) -> list[str]:
    """Names bound by an assignment statement (``owner``: only ``owner.x = ...`` targets)."""
    if isinstance(statement, ast.Assign):
        targets = statement.targets
    elif isinstance(statement, ast.AnnAssign):
        targets = [statement.target]
    else:
        return []
    names = []
    for target in targets:
        for node in target.elts if isinstance(target, ast.Tuple) else [target]:
            if owner is None and isinstance(node, ast.Name):
                names.append(node.id)
            elif owner and isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                names += [node.attr] if node.value.id == owner else []
    return names


def _symbols(tree: ast.Module, definitions: list[tuple[str, ast.AST]]) -> dict[str, int]:
    """Qualname -> line for every def and class, then for what else a README may name: module
    constants and type aliases (capitalised names), class fields and the ``self.x`` set in
    methods. The first definition of a name wins (e.g. if/else branches)."""
    symbols: dict[str, int] = {}
    for qualname, node in definitions:
        symbols.setdefault(qualname, node.lineno)
    for statement in tree.body:
        for name in _assigned_names(statement):
            if name[0].isupper():
                symbols.setdefault(name, statement.lineno)
    for qualname, node in definitions:
        if not isinstance(node, ast.ClassDef):
            continue
        for statement in node.body:
            for name in _assigned_names(statement):
                symbols.setdefault(f"{qualname}.{name}", statement.lineno)
            if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
                for inner in ast.walk(statement):
                    for name in _assigned_names(inner, owner="self"):
                        symbols.setdefault(f"{qualname}.{name}", inner.lineno)
    return symbols


def split_source(text: str, name: str, origin: str = "") -> SourceFile:
    """Cut a Python file into sections: the module docstring is the first note; a run of
    full-line comments starts a section whose code is what follows up to the next run; a
    def/class docstring is the note beside its ``def``/``class`` line (decorators included)
    and is removed from the code. A note with no code of its own joins the next section's.
    ``origin`` (default ``name``) names the file in errors."""
    origin = origin or name
    lines = text.splitlines()
    try:
        tree = ast.parse(text, filename=origin)
    except SyntaxError as error:
        raise SiteError(f"{origin}: cannot parse ({error})") from error
    notes: dict[int, list[str]] = {1: []}
    hidden: set[int] = set()

    comments = _full_line_comments(text, origin)
    for line in sorted(comments):
        if line - 1 not in comments:  # a run starts here
            run = [line]
            while run[-1] + 1 in comments:
                run.append(run[-1] + 1)
            notes.setdefault(line, []).append(comment_markdown([comments[n] for n in run]))
            hidden.update(run)

    module_doc = _docstring_lines(tree, lines)
    if module_doc is not None:
        notes[1].insert(0, docstring_markdown(ast.get_docstring(tree, clean=False)))
        hidden.update(module_doc)
    definitions = _definitions(tree)
    for _, node in definitions:
        doc_lines = _docstring_lines(node, lines)
        if doc_lines is not None:
            start = min([node.lineno] + [d.lineno for d in node.decorator_list])
            notes.setdefault(start, []).append(
                docstring_markdown(ast.get_docstring(node, clean=False))
            )
            hidden.update(doc_lines)

    sections: list[Section] = []
    starts = sorted(notes)
    for start, end in zip(starts, [*starts[1:], len(lines) + 1], strict=True):
        note = "\n\n".join(notes[start])
        code = [n for n in range(start, end) if n not in hidden]
        if sections and not any(lines[n - 1].strip() for n in sections[-1].lines):
            previous = sections.pop()
            note = "\n\n".join(part for part in (previous.note, note) if part)
            code = previous.lines + code
        sections.append(Section(note, code))
    for section in sections:  # no blank lines at a section's edges
        while section.lines and not lines[section.lines[0] - 1].strip():
            section.lines.pop(0)
        while section.lines and not lines[section.lines[-1] - 1].strip():
            section.lines.pop()
    symbols = _symbols(tree, definitions)
    defs = {qualname for qualname, _ in definitions}
    return SourceFile(name, text, sections, symbols, defs, origin)


def render_source(source: SourceFile, markdown: Markdown) -> str:
    """A file as rows of (rendered note, highlighted code with line and def anchors)."""
    lexer = PythonLexer(stripnl=False, ensurenl=True)
    code = highlight(source.text, lexer, HtmlFormatter(nowrap=True)).split("\n")
    anchors: dict[int, list[str]] = {}
    for name, line in source.symbols.items():
        anchors.setdefault(line, []).append(name)
    rows = []
    for section in source.sections:
        note = markdown.render(section.note, source.origin) if section.note else ""
        out = []
        for n in section.lines:
            line_id = source.line_id(n)
            anchor = "".join(
                f'<span class="src-def" id="{source.def_id(name)}"></span>'
                for name in anchors.get(n, [])
            )
            out.append(
                f'<span class="src-line" id="{line_id}"><a class="src-no" href="#{line_id}">{n}</a>'
                f"{anchor}{code[n - 1]}</span>"
            )
        pre = f'<div class="code"><pre>{"".join(out)}</pre></div>' if out else ""
        rows.append(f'<div class="row"><div class="note">{note}</div>{pre}</div>')
    return "\n".join(rows)


# ---------------------------------------------------------------------------------------------
# One paper


@dataclass
class Paper:
    """A catalogued paper and what its page needs."""

    entry: dict
    folder: Path
    files: list[SourceFile] = field(default_factory=list)

    @property
    def slug(self) -> str:
        return self.entry["slug"]

    def symbol_anchor(self, span: str) -> str | None:
        """The anchor of the def, class or file a code span names, or None. Accepted forms:
        ``qualname``, ``module.qualname``, ``file.py``, each optionally followed by ``(...)``;
        a bare qualname defined in several files goes to the first in reading order; a bare
        name that ends exactly one def's qualname (a method's name) goes to that def."""
        name = CALL_SUFFIX.sub("", span.strip())
        by_module = {f.stem: f for f in self.files}
        for source in self.files:
            if name == source.name:
                return source.file_id
        module, _, rest = name.partition(".")
        if rest and module in by_module and rest in by_module[module].symbols:
            return by_module[module].def_id(rest)
        for source in self.files:
            if name in source.symbols:
                return source.def_id(name)
        tails = [
            source.def_id(qualname)
            for source in self.files
            for qualname in source.defs
            if qualname.endswith(f".{name}")
        ]
        return tails[0] if len(tails) == 1 else None


def reading_order(readme: str, folder: Path) -> list[Path]:
    """The .py files linked from ``## Reading order`` in order, then the rest alphabetically."""
    match = re.search(r"^## Reading order\s*$(.*?)(?=^## |\Z)", readme, re.M | re.S)
    linked = re.findall(r"\]\(([^)\s#]+\.py)\)", match.group(1)) if match else []
    files = sorted(p for p in folder.glob("*.py") if p.name != "__init__.py")
    ordered = []
    for href in linked:
        path = (folder / href).resolve()
        if path in files and path not in ordered:
            ordered.append(path)
    return ordered + [p for p in files if p not in ordered]


def regenerate_results(readme: str, slug: str, tables: ModuleType) -> str:
    """The README with its results block rebuilt from ``results/toy.json`` / ``heldout.json``,
    and its "Real data" block from ``results/real.json`` (papers with a real rung)."""
    blocks = []
    result = tables.load_result(slug, "toy.json")
    if result is not None:
        body = tables.results_block(result, tables.load_result(slug, "heldout.json"))
        blocks.append((RESULTS_MARKERS, body))
    real = tables.load_result(slug, "real.json")
    if real is not None:
        blocks.append((tables.REAL_BLOCK, tables.real_block(real)))
    for (begin, end), body in blocks:
        pattern = re.compile(re.escape(begin) + ".*?" + re.escape(end), re.S)
        readme = pattern.sub(lambda _, b=begin, e=end, t=body: f"{b}\n{t}\n{e}", readme, count=1)
    return readme


class ReadmeLinks:
    """Rewrites a README's links and images for the site, which mirrors the repository's
    layout (a paper page sits at ``papers/<slug>/index.html``, its figures where they are).

    The paper's own .py files go to their section on the page, READMEs to the pages that
    render them, images are copied; other repository files are not in the site, so their links
    become plain text. http(s) links stay as they are."""

    def __init__(self, paper: Paper, site: Path, slugs: set[str]) -> None:
        self.paper, self.site, self.slugs = paper, site, slugs
        self.readme = paper.folder / "README.md"

    def href(self, href: str) -> str | None:
        if href.startswith(EXTERNAL) or href.startswith("#"):
            return href
        target = (self.paper.folder / href.split("#", 1)[0]).resolve()
        if target.parent == self.paper.folder and target.suffix == ".py":
            match = [f for f in self.paper.files if f.name == target.name]
            return f"#{match[0].file_id}" if match else None
        if target == REPO_ROOT / "README.md":
            return "../../index.html"
        if target.name == "README.md" and target.parent.name in self.slugs:
            return f"../{target.parent.name}/index.html"
        if target.suffix.lower() in IMAGE_SUFFIXES and target.is_file():
            return self.copy(target)
        return None

    def copy(self, target: Path) -> str:
        """Copy a repository file to the same place in the site; its href from the page."""
        target = target.resolve()
        if not target.is_file():
            raise SiteError(f"{self.readme}: image {target} not found")
        if not target.is_relative_to(REPO_ROOT):
            raise SiteError(f"{self.readme}: image {target} is outside the repository")
        dest = self.site / target.relative_to(REPO_ROOT)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(target, dest)
        return Path(os.path.relpath(target, self.paper.folder)).as_posix()

    def rewrite(self, tokens: list[Token]) -> None:
        """Links and images rewritten in place; code spans of LINKED_SECTIONS linked."""
        section = ""
        for i, token in enumerate(tokens):
            if i > 0 and token.type == "inline" and tokens[i - 1].type == "heading_open":
                if tokens[i - 1].tag == "h2":
                    section = token.content.strip()
            if token.type == "inline" and token.children:
                token.children = self._inline(token.children, section in LINKED_SECTIONS)

    def _inline(self, children: list[Token], link_code: bool) -> list[Token]:
        out: list[Token] = []
        open_links: list[bool] = []  # per open link: was its link_open dropped?
        for child in children:
            if child.type == "link_open":
                href = self.href(str(child.attrGet("href")))
                open_links.append(href is None)
                if href is None:
                    continue
                child.attrSet("href", href)
            elif child.type == "link_close" and open_links.pop():
                continue
            elif child.type == "image" and not str(child.attrGet("src")).startswith(EXTERNAL):
                child.attrSet("src", self.copy(self.paper.folder / child.attrGet("src")))
            elif child.type == "code_inline" and link_code and not open_links:
                anchor = self.paper.symbol_anchor(child.content)
                if anchor is not None:
                    out += [
                        Token("link_open", "a", 1, attrs={"href": f"#{anchor}"}),
                        child,
                        Token("link_close", "a", -1),
                    ]
                    continue
            out.append(child)
        return out


def heading_nav(tokens: list[Token]) -> list[tuple[str, str]]:
    """(id, title) of the README's ``##`` headings, for the page's navigation bar."""
    return [
        (str(tok.attrGet("id")), tokens[i + 1].content)
        for i, tok in enumerate(tokens)
        if tok.type == "heading_open" and tok.tag == "h2"
    ]


def _number(value: object) -> str:
    return f"{value:.4g}" if isinstance(value, int | float) else str(value)


def claims_rows(result: dict | None, heldout: dict | None) -> list[list[str]]:
    """Per claim: name, role, statement, threshold, measured and verdict on the claim seeds,
    measured and verdict on the held-out seeds."""
    held = {c["name"]: c for c in heldout["claims"]} if heldout else {}
    rows = []
    for claim in result["claims"] if result else []:
        other = held.get(claim["name"])
        rows.append(
            [claim_label(claim["name"], claim["role"])]
            + [claim["role"], claim["statement"], _number(claim.get("threshold"))]
            + [_number(claim["measured"]), claim_verdict(claim)]
            + [_number(other["measured"]) if other else "-", claim_verdict(other)]
        )
    return rows


def real_claims_rows(real: dict | None, diagnoses: list[dict] = ()) -> list[list[str]]:
    """Per real-data claim: name, role, statement, threshold, measured, verdict and, for a
    claim that failed, its diagnosis word (``claims.REAL_DIAGNOSES``; "-" otherwise)."""
    words = {name: d["word"] for d in diagnoses for name in d["claims"]}
    return [
        [claim_label(c["name"], c["role"]), c["role"], c["statement"], _number(c.get("threshold"))]
        + [_number(c["measured"]), claim_verdict(c), words.get(c["name"], "-")]
        for c in (real["claims"] if real else [])
    ]


def real_assets(real: dict | None) -> str:
    """The assets a real-data results file read, as 'name (package version)'."""
    assets = (real or {}).get("assets", [])
    return ", ".join(f"{a['name']} ({a['package']} {a['version']})" for a in assets)


def seeds_verdict(result: dict | None) -> dict[str, str]:
    """A results file's claims counted in the shared words (``3 PASS``, ``2 PASS, 1 FAIL``)
    and the tone that colours them; ``not run`` without a file."""
    if result is None:
        return {"words": "not run", "tone": ""}
    return {"words": claims_summary(result["claims"]), "tone": summary_tone(result["claims"])}


# ---------------------------------------------------------------------------------------------
# The site


@dataclass
class Stats:
    pages: int = 0
    images: int = 0
    math: int = 0


class SiteBuilder:
    """Writes the pages, the stylesheet and the figures into one folder."""

    def __init__(self, site: Path) -> None:
        self.site = site
        self.tables = _load_render_tables()
        self.catalog = yaml.safe_load(CATALOG.read_text())["papers"]
        self.env = Environment(
            loader=FileSystemLoader(ASSETS), autoescape=True, undefined=StrictUndefined
        )
        self.env.filters["tone"] = verdict_tone  # a verdict word's colour class (ok, bad, info)
        self.readme_md, self.note_md = Markdown(heading_ids=True), Markdown(raw_html=False)

    def build(self) -> Stats:
        (self.site / "assets").mkdir(parents=True)
        pygments_css = HtmlFormatter(style=PYGMENTS_STYLE).get_style_defs(".code")
        css = f"{(ASSETS / 'style.css').read_text()}\n/* Pygments */\n{pygments_css}\n"
        (self.site / "assets" / "style.css").write_text(css)
        rows = [self.paper_page(entry) for entry in self.catalog]
        home = self.env.get_template("index.html").render(root="", rows=rows)
        (self.site / "index.html").write_text(home)
        self.findings_page()
        return Stats(
            pages=len(rows) + 2,
            images=sum(1 for p in self.site.rglob("*") if p.suffix.lower() in IMAGE_SUFFIXES),
            math=self.readme_md.math_count + self.note_md.math_count,
        )

    def findings_page(self) -> None:
        """``findings.html``: what holds on real data, what fails and why, from the same rows as
        the root README's findings table (``render_tables.findings_rows``)."""
        rows = [
            {**row, "href": f"papers/{row['slug']}/index.html" if row["slug"] else ""}
            for row in self.tables.findings_rows()
        ]
        page = self.env.get_template("findings.html").render(
            root="", rows=rows, legend=list(self.tables.DIAGNOSIS_MEANING.items())
        )
        (self.site / "findings.html").write_text(page)

    def paper_page(self, entry: dict) -> dict:
        """Write ``papers/<slug>/index.html``; the paper's row of the home page."""
        paper = Paper(entry, REPO_ROOT / "papers" / entry["slug"])
        readme_path = paper.folder / "README.md"
        if not readme_path.is_file():
            raise SiteError(f"{readme_path}: missing (catalogued in {CATALOG})")
        readme = regenerate_results(readme_path.read_text(), paper.slug, self.tables)
        for path in reading_order(readme, paper.folder):
            origin = str(path.relative_to(REPO_ROOT))
            paper.files.append(split_source(path.read_text(), path.name, origin))
        links = ReadmeLinks(paper, self.site, {e["slug"] for e in self.catalog})
        tokens = self.readme_md.parse(readme, str(readme_path))
        links.rewrite(tokens)
        result = self.tables.load_result(paper.slug, "toy.json")
        heldout = self.tables.load_result(paper.slug, "heldout.json")
        real = self.tables.load_result(paper.slug, "real.json")
        files = [
            {"name": f.name, "id": f.file_id, "html": Markup(render_source(f, self.note_md))}
            for f in paper.files
        ]
        page = self.env.get_template("paper.html").render(
            root="../../",
            paper=entry,
            readme=Markup(self.readme_md.render_tokens(tokens, str(readme_path))),
            nav=heading_nav(tokens),
            claims=claims_rows(result, heldout),
            real_claims=real_claims_rows(
                real, paper_findings(paper.slug)["diagnoses"] if real else []
            ),
            real_assets=", ".join(
                f"{a['name']} ({a['package']} {a['version']})"
                for a in (real or {}).get("assets", [])
            ),
            files=files,
        )
        out = self.site / "papers" / paper.slug / "index.html"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(page)
        figure = paper.folder / "results" / "toy.png"
        thumbnail = f"papers/{paper.slug}/{links.copy(figure)}" if figure.is_file() else None
        return {
            "paper": entry,
            "href": f"papers/{paper.slug}/index.html",
            "claim_seeds": seeds_verdict(result),
            "heldout_seeds": seeds_verdict(heldout),
            "real_data": self.tables.real_status(paper.slug),
            "real_verdict": seeds_verdict(real) if real else None,
            "thumbnail": thumbnail,
        }


def build_site(site: Path) -> Stats:
    """Write every page, the stylesheet and the figures into ``site``."""
    return SiteBuilder(site).build()


# ---------------------------------------------------------------------------------------------
# The check


class PageScan(HTMLParser):
    """Ids, link targets, image sources and raw-math text of one HTML page."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: list[str] = []
        self.hrefs: list[str] = []
        self.images: list[str] = []
        self.raw_math: list[str] = []
        self._skip = 0  # depth inside code / pre / script / style
        self._text: list[str] = []  # visible text of the current block

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        if attributes.get("id"):
            self.ids.append(str(attributes["id"]))
        if tag in ("a", "link") and attributes.get("href"):
            self.hrefs.append(str(attributes["href"]))
        if tag == "img":
            self.images.append(str(attributes.get("src") or ""))
        if tag not in INLINE_TAGS:
            self._flush()
        if tag in SKIPPED_TAGS:
            self._skip += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in SKIPPED_TAGS and self._skip:
            self._skip -= 1
        if tag not in INLINE_TAGS:
            self._flush()

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self._text.append(data)

    def _flush(self) -> None:
        text, self._text = "".join(self._text), []
        self.raw_math += [m.group(0) for m in RAW_MATH.finditer(text)]

    def close(self) -> None:
        super().close()
        self._flush()


def check_site(site: Path) -> list[str]:
    """One line per broken internal link, missing anchor, missing image, duplicate id or raw
    math in the site; external links (http, https, mailto) are not checked."""
    scans: dict[Path, PageScan] = {}
    for page in sorted(site.rglob("*.html")):
        scan = PageScan()
        scan.feed(page.read_text())
        scan.close()
        scans[page.resolve()] = scan
    ids = {page: set(scan.ids) for page, scan in scans.items()}
    problems = []
    for page, scan in scans.items():
        name = page.relative_to(site.resolve()).as_posix()
        duplicates = sorted(i for i, count in Counter(scan.ids).items() if count > 1)
        problems += [f"{name}: duplicate id {i!r}" for i in duplicates]
        problems += [f"{name}: raw math {text!r}" for text in scan.raw_math]
        for src in scan.images:
            if src.startswith(EXTERNAL) or not (page.parent / src).is_file():
                problems.append(f"{name}: missing image {src!r}")
        for href in scan.hrefs:
            if href.startswith(EXTERNAL):
                continue
            path, _, fragment = href.partition("#")
            target = (page.parent / path).resolve() if path else page
            if target.is_dir():
                target = target / "index.html"
            if not target.is_file():
                problems.append(f"{name}: broken link {href!r}")
            elif fragment and fragment not in ids.get(target, set()):
                problems.append(f"{name}: missing anchor #{fragment} in {href!r}")
    return problems


def _replace(built: Path, out: Path) -> None:
    """Move the checked site into place, replacing an earlier build (never another folder)."""
    if out.exists():
        if any(out.iterdir()) and not (out / "assets" / "style.css").is_file():
            raise SiteError(f"{out}: exists and is not a site built by this script")
        old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
        out.rename(old / out.name)
        built.rename(out)
        shutil.rmtree(old)
    else:
        built.rename(out)


def build_checked(out: Path) -> tuple[Stats | None, list[str]]:
    """Build into a temporary folder beside ``out``, check it, and rename it into place only
    when both pass; the problems found otherwise (and ``out`` untouched)."""
    out = out.resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    built = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        stats = build_site(built)
        problems = check_site(built)
        if problems:
            return None, problems
        built.chmod(0o755)  # mkdtemp makes it private
        _replace(built, out)
        return stats, []
    finally:
        if built.exists():
            shutil.rmtree(built)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="site folder (site/)")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    try:
        stats, problems = build_checked(args.out)
    except SiteError as error:
        print(f"site build failed: {error}")
        return 1
    if problems:
        print(*problems, sep="\n")
        print(f"site check failed: {len(problems)} problem(s); {args.out} left unchanged")
        return 1
    print(
        f"{args.out}: {stats.pages} pages, {stats.images} images, {stats.math} math expressions,"
        f" {time.perf_counter() - start:.1f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
