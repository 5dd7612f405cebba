"""Sphinx extension: read nbdev's processed notebooks (`_proc/`, written for Quarto) as MyST notebooks.

nbdev's `proc_nbs` prepares every notebook for Quarto: a raw YAML front-matter cell, `#| echo: false`
style cell options, `::: {.callout-note}` blocks, Pandoc citations `[@key]`, and links to API names as
absolute URLs of the published Quarto site. This extension translates those constructs on the fly
(Sphinx `source-read` event) so that Sphinx + myst-nb render the *same* processed notebooks: no page
content is written twice, only the Quarto dialect is mapped onto the MyST one.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

# ---------------------------------------------------------------- front matter and cell options
_FM_RE = re.compile(r"^\s*---\s*\n(.*?)\n---\s*$", re.S)
_OPT_RE = re.compile(r"^#\|\s*([\w-]+)\s*:\s*(.*?)\s*$")


def front_matter(nb: dict) -> dict:
    "The YAML front matter of a processed notebook (nbdev writes it as the first raw cell)."
    for cell in nb.get("cells", []):
        if cell["cell_type"] == "raw":
            m = _FM_RE.match("".join(cell["source"]))
            if m: return yaml.safe_load(m.group(1)) or {}
    return {}


def _cell_options(src: str):
    "Split Quarto cell options (`#| key: value` lines at the top) from the code."
    lines, opts = src.split("\n"), {}
    while lines and (m := _OPT_RE.match(lines[0])):
        opts[m.group(1)] = m.group(2).strip().lower(); lines.pop(0)
    return opts, "\n".join(lines)


def _tags_for(opts: dict) -> list[str]:
    "myst-nb cell tags equivalent to Quarto's echo/output/include options."
    tags = []
    if opts.get("include") == "false": tags.append("remove-cell")
    if opts.get("echo") == "false": tags.append("remove-input")
    if opts.get("output") == "false": tags.append("remove-output")
    if opts.get("code-fold") in ("true", "show"): tags.append("hide-input")
    return tags


# ---------------------------------------------------------------- markdown: callouts, citations, links
_CALLOUT_OPEN = re.compile(r"^(:{3,})\s*\{?\s*\.?callout-(note|tip|warning|important|caution)([^}\n]*)\}?\s*$")
_TITLE_ATTR = re.compile(r'title\s*=\s*"([^"]*)"')
_REFS_DIV = re.compile(r"^:{3,}\s*\{#refs\}\s*\n:{3,}\s*$", re.M)
_CITE_GROUP = re.compile(r"\[(-?@[\w:.-]+(?:\s*;\s*-?@[\w:.-]+)*)\]")
_CITE_TEXT = re.compile(r"(?<![\w@\[`])@([A-Za-z][\w:-]*\d{4}[\w-]*)")
_EQ_LABEL = re.compile(r"\$\$\s*\{#(eq-[\w-]+)\}")
_EQ_REF = re.compile(r"@(eq-[\w-]+)")
_WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
_SHOWDOC_ATTRS = re.compile(r"\)\{target=\"_blank\"[^}]*\}")  # nbdev: [source](URL){target="_blank" style=...}


def callouts_to_admonitions(md: str) -> str:
    "Quarto `::: {.callout-KIND}` (optional `## Title` first line or title=\"...\") -> MyST admonition."
    out, lines, i = [], md.split("\n"), 0
    while i < len(lines):
        m = _CALLOUT_OPEN.match(lines[i])
        if not m: out.append(lines[i]); i += 1; continue
        fence, kind, attrs = m.group(1), m.group(2), m.group(3)
        j = i + 1
        while j < len(lines) and lines[j].strip() != fence: j += 1
        body = lines[i + 1:j]
        title = (_TITLE_ATTR.search(attrs) or [None, None])[1]
        if title is None and body and body[0].startswith("#"):
            title, body = body[0].lstrip("#").strip(), body[1:]
        if title: out += [f"{fence}{{admonition}} {title}", f":class: {kind}", *body, fence]
        else: out += [f"{fence}{{{kind}}}", *body, fence]
        i = j + 1
    return "\n".join(out)


def citations_to_roles(md: str) -> str:
    "Pandoc citations: `[@a; @b]` -> {cite:p}`a,b`, narrative `@a` -> {cite:t}`a` (equation refs excluded)."
    def group(m):
        keys = [k.strip().lstrip("-@") for k in m.group(1).split(";")]
        return "{cite:p}`" + ",".join(keys) + "`"
    md = _CITE_GROUP.sub(group, md)
    return _CITE_TEXT.sub(lambda m: "{cite:t}`" + m.group(1) + "`", md)


def _outside_code(md: str, fn) -> str:
    "Apply `fn` to the markdown outside fenced code blocks and inline code spans."
    parts = re.split(r"(```.*?```|`[^`\n]*`)", md, flags=re.S)
    return "".join(p if i % 2 else fn(p) for i, p in enumerate(parts))


class Translator:
    "Maps one processed notebook (JSON text) from nbdev's Quarto dialect to MyST; `pages` = {output-file stem: docname}."
    def __init__(self, site_url: str, pages: dict[str, str], api: set[str] = frozenset()):
        self.site_url, self.pages, self.api = site_url.rstrip("/") + "/", pages, api

    def local_links(self, md: str, docname: str) -> str:
        "Links to notebooks and into the Quarto site (nbdev's API links) -> relative links to this site's pages."
        up = "../" * docname.count("/")
        def api_anchor(anchor):
            "nbdev's `#name` -> our `#api-name`; `Class.attr` without its own entry -> the class's entry."
            name = (anchor or "#")[1:].lower()
            while name and name not in self.api: name = name.rpartition(".")[0]
            return "#api-" + re.sub(r"[^a-z0-9]+", "-", name).strip("-") if name else ""
        def site(m):
            target = self.pages.get(m.group(1))
            return m.group(0) if target is None else up + target + ".html" + api_anchor(m.group(2))
        md = re.sub(re.escape(self.site_url) + r"([\w-]+)\.html(#[\w.-]+)?", site, md)
        return re.sub(r"\]\((?![a-z]+:)([\w./-]+)\.ipynb(#[\w.-]*)?\)", lambda m: f"]({m.group(1)}.html{m.group(2) or ''})", md)

    def markdown(self, md: str, docname: str) -> str:
        md = self.local_links(md, docname)
        md = _REFS_DIV.sub("```{bibliography}\n```", md)
        md = callouts_to_admonitions(md)
        md = _EQ_LABEL.sub(lambda m: "$$ (" + m.group(1) + ")", md)
        md = _outside_code(md, lambda s: citations_to_roles(_EQ_REF.sub(r"{eq}`\1`", s)))
        return md

    def showdoc(self, md: str, docname: str) -> str:
        "A show_doc output: drop Pandoc link attributes, anchor the heading under nbdev's id (`api-NAME`)."
        md = self.local_links(_SHOWDOC_ATTRS.sub("){.showdoc-source}", md), docname)
        md = re.sub(r"^(#{2,4}) ([\w.]+)\s*$", lambda m: f"({'api-' + m.group(2).lower()})=\n{m.group(1)} {m.group(2)}", md, count=1, flags=re.M)
        md = re.sub(r"```python\n\s*\n(.*?)\n\s*```", lambda m: "```python\n" + m.group(1).strip("\n") + "\n```", md, flags=re.S)
        return md.lstrip("-\n")

    def notebook(self, text: str, docname: str, extra_md: str = "") -> str:
        nb = json.loads(text)
        # Jupyter widgets (e.g. a progress bar a notebook happened to show) have no state in a static page, and their
        # presence makes myst-nb load require.js and the widget manager from a CDN: drop the state and the widget views
        nb.get("metadata", {}).pop("widgets", None)
        fm = front_matter(nb)
        cells = []
        if fm.get("title"):
            head = f"# {fm['title']}\n"
            if fm.get("description"): head += f"\n{{.page-description}}\n{fm['description']}\n"
            cells.append({"cell_type": "markdown", "id": "eb-page-title", "metadata": {}, "source": head})
        for cell in nb["cells"]:
            src = "".join(cell["source"])
            if cell["cell_type"] == "raw": continue
            if cell["cell_type"] == "markdown":
                cell["source"] = self.markdown(src, docname); cells.append(cell); continue
            opts, code = _cell_options(src)
            if "outputs" in cell: cell["outputs"] = [o for o in cell["outputs"] if _WIDGET_VIEW not in o.get("data", {})]
            if not code.strip() and not cell.get("outputs"): continue
            cell["source"] = code.strip("\n")
            tags = _tags_for(opts)
            if tags: cell.setdefault("metadata", {}).setdefault("tags", []).extend(tags)
            for out in cell.get("outputs", []):
                data = out.get("data", {})
                if "text/markdown" in data:
                    md = "".join(data["text/markdown"])
                    md = self.showdoc(md, docname) if "show_doc" in src else self.markdown(md, docname)
                    data["text/markdown"] = md
                    data.pop("text/plain", None)
            cells.append(cell)
        if extra_md: cells.append({"cell_type": "markdown", "id": "eb-navigation", "metadata": {}, "source": extra_md})
        for i, cell in enumerate(cells): cell.setdefault("id", f"eb-cell-{i}")
        nb["cells"] = cells
        return json.dumps(nb)


def api_entries(src: Path) -> set[str]:
    "Lower-cased names that have a show_doc entry in some processed notebook."
    names = set()
    for nb in src.glob("*.ipynb"):
        for cell in json.loads(nb.read_text())["cells"]:
            if cell["cell_type"] != "code" or "show_doc" not in "".join(cell["source"]): continue
            for out in cell.get("outputs", []):
                md = "".join(out.get("data", {}).get("text/markdown", ""))
                names |= {m.lower() for m in re.findall(r"^#{2,4} ([\w.]+)\s*$", md, re.M)[:1]}
    return names


# ---------------------------------------------------------------- navigation from nbdev's sidebar
def page_order(src: Path) -> list[str]:
    "Docnames in the order of nbdev's sidebar.yml (file-name order), falling back to sorted file names."
    side = src / "sidebar.yml"
    names = []
    if side.exists():
        def walk(items):
            for it in items:
                if isinstance(it, str): names.append(it)
                elif isinstance(it, dict): walk(it.get("contents", []))
        walk(yaml.safe_load(side.read_text())["website"]["sidebar"]["contents"])
    names = [n for n in names if n.endswith(".ipynb") and (src / n).exists()]
    names += sorted(p.name for p in src.glob("*.ipynb") if p.name not in names)
    return [n[:-len(".ipynb")] for n in names]


def titles(src: Path, docnames) -> dict[str, str]:
    return {d: str(front_matter(json.loads((src / f"{d}.ipynb").read_text())).get("title", d)) for d in docnames}


def is_paper_page(title: str) -> bool:
    return title.startswith(("§", "Appendix"))


# The site's sections, in order: a page of the paper by its title (a section sign or "Appendix"); every other page by the number
# its file name starts with (a page without one, e.g. the front page, goes with the commands).
SECTIONS = (("The paper", ()), ("Beyond the paper", range(9, 20)), ("The engine", range(20, 31)), ("The tables", range(31, 90)),
            ("The commands", range(90, 100)))


def section(docname: str, title: str) -> str:
    "The site section of page `docname` titled `title` (`SECTIONS`)."
    if is_paper_page(title): return SECTIONS[0][0]
    m = re.match(r"\d+", docname)
    return next((name for name, numbers in SECTIONS if m and int(m.group()) in numbers), SECTIONS[-1][0])


def sections(docnames, titles_: dict) -> list:
    "[(caption, [docname, ...])] of `docnames` by `section`, in `SECTIONS`' order, each keeping the order it is given; empty sections left out."
    return [(name, docs) for name, _ in SECTIONS if (docs := [d for d in docnames if section(d, titles_[d]) == name])]


def toctrees(src: Path) -> str:
    "One hidden toctree per site section (`SECTIONS`) for the front page: the paper in order, then beyond it, the engine, the tables, the commands."
    order = [d for d in page_order(src) if d != "index"]
    block = ""
    for caption, docs in sections(order, titles(src, order)):
        block += f"```{{toctree}}\n:hidden:\n:caption: {caption}\n\n" + "\n".join(docs) + "\n```\n\n"
    return block


# ---------------------------------------------------------------- Sphinx glue
def setup(app):
    app.add_config_value("quarto_site_url", "", "env")
    state = {}

    def on_builder_inited(app):
        src = Path(app.srcdir)
        pages = {}
        for nb in src.glob("*.ipynb"):
            out = front_matter(json.loads(nb.read_text())).get("output-file", nb.stem + ".html")
            pages[Path(out).stem] = nb.stem
        state["translator"] = Translator(app.config.quarto_site_url, pages, api_entries(src))
        state["toctrees"] = toctrees(src)

    def on_source_read(app, docname, source):
        if not app.env.doc2path(docname).name.endswith(".ipynb"): return
        extra = state["toctrees"] if docname == app.config.root_doc else ""
        source[0] = state["translator"].notebook(source[0], docname, extra)

    app.connect("builder-inited", on_builder_inited)
    app.connect("source-read", on_source_read)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
