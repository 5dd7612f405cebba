"""The docs site's llms.txt and launch links, without building the site: docs/build.py writes llms.txt from the
notebooks' titles and summaries, and docs/check_site.py reads it back and knows where each launch button must point."""
import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load(name):
    spec = importlib.util.spec_from_file_location(f"docs_{name}", ROOT / "docs" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


build, check_site = _load("build"), _load("check_site")


def _proc_nb(path: Path, title: str, description: str | None):
    fm = f"---\ntitle: {json.dumps(title)}\n" + (f"description: {json.dumps(description)}\n" if description else "") + "---\n"
    cells = [{"cell_type": "raw", "metadata": {}, "source": fm}, {"cell_type": "markdown", "metadata": {}, "source": "text"}]
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))


@pytest.fixture
def proc(tmp_path):
    _proc_nb(tmp_path / "index.ipynb", "entropic_bound", "The project in one line.")
    _proc_nb(tmp_path / "01_intro.ipynb", "§1 Introduction", "Why, and\nhow — see [the tasks](20_tasks.ipynb).")
    _proc_nb(tmp_path / "20_tasks.ipynb", "Tasks", "The generators.")
    (tmp_path / "sidebar.yml").write_text("website:\n  sidebar:\n    contents:\n      - index.ipynb\n      - 01_intro.ipynb\n      - 20_tasks.ipynb\n")
    return tmp_path


def test_llms_txt_lists_every_page_with_its_summary(proc):
    text = build.llms_txt(proc)
    problems, entries = check_site.llms_entries(text)
    assert problems == []
    assert text.startswith("# entropic_bound\n\n> The project in one line.\n")
    assert [(e["title"], e["href"]) for e in entries] == [("entropic_bound", "index.html"), ("§1 Introduction", "01_intro.html"), ("Tasks", "20_tasks.html")]
    assert entries[1]["note"] == "Why, and how — see the tasks."        # one line, links reduced to their text
    assert text.index("## The paper") < text.index("01_intro.html") < text.index("## The engine") < text.index("20_tasks.html")


def test_every_page_has_one_site_section():
    "The sidebar's sections: the paper by its titles, the rest by their file numbers — every notebook in one, each section non-empty."
    sys.path.insert(0, str(ROOT / "docs"))
    from quarto_compat import SECTIONS, sections
    names = sorted(p.stem for p in (ROOT / "nbs").glob("*.ipynb") if p.stem != "index")
    title = {n: "".join(json.loads((ROOT / "nbs" / f"{n}.ipynb").read_text())["cells"][0]["source"]).splitlines()[0].lstrip("# ") for n in names}
    got = dict(sections(names, title))
    assert list(got) == [name for name, _ in SECTIONS] and sorted(sum(got.values(), [])) == names
    assert got["The paper"][0] == "01_introduction" and "93_compress_run" in got["The commands"] and "36_table6" in got["The tables"]


def test_llms_txt_refuses_a_page_without_a_summary(proc):
    _proc_nb(proc / "20_tasks.ipynb", "Tasks", None)
    with pytest.raises(SystemExit, match="20_tasks"): build.llms_txt(proc)


def test_the_checker_catches_a_malformed_llms_txt():
    problems, _ = check_site.llms_entries("no title\n- [a](a.html) no colon\n")
    assert len(problems) == 4


def test_every_notebook_has_a_title_and_a_one_line_summary():
    "What llms.txt is written from: `# title` then `> summary` in each notebook's first cell."
    for nb in sorted((ROOT / "nbs").glob("*.ipynb")):
        first = "".join(json.loads(nb.read_text())["cells"][0]["source"])
        assert re.match(r"# .+\n+> \S", first), f"{nb.name}: first cell is not '# title' + '> summary'"


def test_launch_links_come_from_settings_ini():
    urls = check_site.launch_urls("06a_attention_native")
    assert urls["Binder"] == "https://mybinder.org/v2/gh/entropic-bound/entropic_bound/main?urlpath=lab/tree/nbs/06a_attention_native.ipynb"
    assert urls["Colab"] == "https://colab.research.google.com/github/entropic-bound/entropic_bound/blob/main/nbs/06a_attention_native.ipynb"
