"""Build the docs site offline: nbdev's processing into `_proc/`, then Sphinx + myst-nb into `_build/html`.

Usage (from anywhere):  .venv/bin/python docs/build.py [--no-nbdev] [--strict]

1. nbdev's Python layer, without Quarto: `refresh_quarto_yml()`, `_build_modidx()`, the sidebar and
   `proc_nbs()` write the processed notebooks (show_doc rendered, directives applied) to `_proc/` —
   the same files `nbdev_docs` hands to Quarto.
2. Sphinx renders `_proc/` into `_build/html` (no execution: the notebooks are committed with their
   outputs), with MathJax 3.2.2 copied from the npm package in `docs/node_modules/` and the search index.
3. `llms.txt` at the site's root (the llms.txt convention): the project's name and summary, then a link to every page
   with its one-line summary, in the site's order — written from the notebooks' titles and summary block quotes.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
PROC, OUT = ROOT / "_proc", ROOT / "_build" / "html"
MATHJAX_PKG = DOCS / "node_modules" / "mathjax"
MATHJAX_STATIC = ROOT / "_build" / "mathjax_static"


def mixed_import_cells(nbs: Path) -> list[str]:
    "Cells nbdev would run out of order while processing docs: imports mixed with other code, in notebooks with API docs."
    import ast, json, re
    found = []
    for nb in sorted(nbs.glob("*.ipynb")):
        cells = [c for c in json.loads(nb.read_text())["cells"] if c["cell_type"] == "code"]
        srcs = ["".join(c["source"]) for c in cells]
        if not any(re.search(r"^#\|\s*export|^show_doc", s, re.M) for s in srcs): continue
        for i, src in enumerate(srcs):
            if re.search(r"^#\|\s*(export|exports|exporti|exec_doc)\b|^#\|\s*eval:\s*false", src, re.M | re.I): continue
            code = "\n".join(l for l in src.split("\n") if not l.lstrip().startswith(("%", "!")))
            try: tree = ast.parse(code)
            except SyntaxError: continue
            nodes = list(ast.walk(tree))
            if any(isinstance(n, (ast.Import, ast.ImportFrom)) for n in nodes) and any(isinstance(n, (ast.Expr, ast.Assign)) for n in nodes):
                found.append(f"{nb.name}: code cell {i + 1}: {src.strip().splitlines()[0][:70]}")
    return found


def nbdev_process(n_workers: int = 2) -> Path:
    "nbdev's docs preparation minus Quarto (what `nbdev_proc_nbs` does after trying to install Quarto)."
    from nbdev.quarto import refresh_quarto_yml, nbdev_sidebar
    from nbdev.serve import proc_nbs
    import nbdev.doclinks
    from nbdev.config import get_config
    refresh_quarto_yml()
    nbdev.doclinks._build_modidx()
    nbdev_sidebar.__wrapped__()
    try:
        return proc_nbs(n_workers=n_workers)
    except Exception as e:
        suspects = "\n  ".join(mixed_import_cells(get_config().nbs_path)) or "(none found)"
        raise SystemExit(f"nbdev could not process a notebook: {e}\n\nWhile preparing docs, nbdev runs every cell that "
                         "contains an import (so that show_doc works), out of order and without the cells around it. "
                         "A cell that mixes imports with other code can fail there: move its imports into a cell of "
                         f"their own. Cells that mix them:\n  {suspects}") from None


def mathjax_static() -> Path:
    "Copy the MathJax 3 component files the pages load (tex-chtml + its lazily loaded parts) for `_static/mathjax`."
    es5 = MATHJAX_PKG / "es5"
    if not (es5 / "tex-chtml.js").exists():
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=DOCS, check=True)
    dest = MATHJAX_STATIC / "mathjax"
    shutil.rmtree(MATHJAX_STATIC, ignore_errors=True)
    dest.mkdir(parents=True)
    shutil.copy2(es5 / "tex-chtml.js", dest)
    for sub in ["a11y", "adaptors", "input", "output", "sre", "ui"]:
        if (es5 / sub).exists(): shutil.copytree(es5 / sub, dest / sub)
    shutil.copy2(MATHJAX_PKG / "LICENSE", dest)
    return MATHJAX_STATIC


def _plain(md: str) -> str:
    "One line of Markdown with its links reduced to their text (a summary may link to a notebook)."
    import re
    return " ".join(re.sub(r"\[([^\]]+)\]\([^)]*\)", r"\1", md).split())


def llms_txt(src: Path = PROC) -> str:
    """The site's `llms.txt` (https://llmstxt.org): `# name`, `> summary`, then one `- [title](page.html): summary` line
    per page under one `## ` heading per site section (`quarto_compat.SECTIONS`), in the sidebar's order. Names and summaries are each notebook's
    title and its one-line summary block quote (nbdev's front matter in `src`); the front page gives the project's."""
    import json
    sys.path.insert(0, str(DOCS))
    from quarto_compat import front_matter, page_order, sections
    from nbdev.config import get_config
    cfg = get_config(path=ROOT)
    meta = {d: front_matter(json.loads((src / f"{d}.ipynb").read_text())) for d in page_order(src)}
    missing = [d for d, fm in meta.items() if not fm.get("title") or not fm.get("description")]
    if missing: raise SystemExit(f"llms.txt: no title or no one-line summary (the `> ...` under the title) in {missing}")
    item = lambda d: f"- [{_plain(str(meta[d]['title']))}]({d}.html): {_plain(str(meta[d]['description']))}"
    front = meta.get("index", {"title": cfg.lib_name, "description": cfg.description})
    rest = [d for d in meta if d != "index"]
    lines = [f"# {_plain(str(front['title']))}", "", f"> {_plain(str(front['description']))}", "",
             f"Every page is a notebook of {cfg.git_url} (folder `{cfg.nbs_path.name}/`), rendered with its outputs; "
             f"the library `{cfg.lib_name}` is exported from those notebooks.", ""]
    if "index" in meta: lines += ["## Front page", "", item("index"), ""]
    for caption, docs in sections(rest, {d: str(meta[d]["title"]) for d in rest}):
        lines += [f"## {caption}", "", *map(item, docs), ""]
    return "\n".join(lines)


def sphinx_build(strict: bool = False) -> int:
    "Render `_proc/` with Sphinx (config in docs/conf.py) into `_build/html`."
    from sphinx.cmd.build import build_main
    args = ["-b", "html", "-c", str(DOCS), "-d", str(ROOT / "_build" / "doctrees"), "-E", "-q", "-j", "1", str(PROC), str(OUT)]
    if strict: args[:0] = ["-W", "--keep-going"]
    return build_main(args)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--no-nbdev", action="store_true", help="reuse _proc/ as it is (skip nbdev's processing)")
    p.add_argument("--strict", action="store_true", help="turn Sphinx warnings into errors")
    a = p.parse_args(argv)
    os.chdir(ROOT)
    t0 = time.time()
    if not a.no_nbdev:
        nbdev_process()
        print(f"nbdev: processed notebooks in {PROC.relative_to(ROOT)}/ ({time.time() - t0:.0f} s)")
    mathjax_static()
    os.environ["EB_MATHJAX_STATIC"] = str(MATHJAX_STATIC)
    t1 = time.time()
    rc = sphinx_build(a.strict)
    if rc == 0:
        (OUT / "llms.txt").write_text(llms_txt(PROC), encoding="utf-8")
        print(f"sphinx: site in {OUT.relative_to(ROOT)}/ ({time.time() - t1:.0f} s), with llms.txt; open {OUT / 'index.html'}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
