"""Check the built docs site in a real browser (headless Debian chromium driven by Playwright).

Usage: .venv/bin/python docs/check_site.py [--site _build/html] [--chromium /usr/bin/chromium]

Serves the site on a local port and loads every page. A page passes when: no request fails (and
nothing is fetched from outside the site), the console has no error, MathJax has typeset the math
(`mjx-container` present wherever the page has math, no raw `$$` left in the text), every figure of
the notebook is shown as a loaded image, every link to another page of the site resolves, anchor included, and the
page's launch button opens that page's notebook (`nbs/NAME.ipynb` of the repository in settings.ini) on Binder and on
Colab. The search page must find `energy_effective_rank`; `llms.txt` must exist at the site's root, link every page
once with its title and a one-line summary, and every link in it must load a page of the site; every exported function
and class must have its API entry (a show_doc on some page). Screenshots of the front page and the §4 page go to
`<site>/_screenshots/`. Exit status 0 when everything passes.
"""
from __future__ import annotations

import argparse
import functools
import http.server
import json
import re
import sys
import threading
from pathlib import Path
from urllib.parse import urljoin, urlparse

ROOT = Path(__file__).resolve().parent.parent
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]
SEARCH_TERM = "energy_effective_rank"


def serve(site: Path):
    "Serve `site` on a free local port in a daemon thread; returns (server, base URL)."
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *a): pass
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(site)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, f"http://127.0.0.1:{httpd.server_address[1]}/"


def notebook_figures(proc: Path, page: str) -> int:
    "Number of image outputs the processed notebook of `page` shows (hidden cells excluded)."
    nb = proc / f"{page}.ipynb"
    if not nb.exists(): return 0
    n = 0
    for cell in json.loads(nb.read_text())["cells"]:
        if cell["cell_type"] != "code" or "#| output: false" in "".join(cell["source"]): continue
        n += sum(1 for o in cell.get("outputs", []) if any(k.startswith("image/") for k in o.get("data", {})))
    return n


@functools.lru_cache(maxsize=None)
def page_ids(page: Path) -> frozenset:
    "Every id in a built page (link anchors must be one of them)."
    return frozenset(re.findall(r'\sid="([^"]+)"', page.read_text(encoding="utf-8")))


def api_names(lib: Path) -> list[str]:
    "Public functions and classes the library exports (`__all__` of each module nbdev wrote)."
    import importlib, inspect
    names = []
    for f in sorted(lib.glob("*.py")):
        if f.name.startswith("_"): continue
        mod = importlib.import_module(f"{lib.name}.{f.stem}")
        names += [n for n in getattr(mod, "__all__", []) if inspect.isfunction(getattr(mod, n, None)) or inspect.isclass(getattr(mod, n, None))]
    return names


def launch_urls(name: str) -> dict[str, str]:
    "Where the launch button of page `name` must point: its notebook in the repository of settings.ini, on Binder and Colab."
    from nbdev.config import get_config
    cfg = get_config(path=ROOT)
    org, repo = urlparse(cfg.git_url).path.strip("/").split("/")[:2]
    nb = f"{cfg.nbs_path.relative_to(cfg.config_path).as_posix()}/{name}.ipynb"
    return {"Binder": f"https://mybinder.org/v2/gh/{org}/{repo}/{cfg.branch}?urlpath=lab/tree/{nb}",
            "Colab": f"https://colab.research.google.com/github/{org}/{repo}/blob/{cfg.branch}/{nb}"}


_LLMS_ITEM = re.compile(r"^- \[(?P<title>[^\]]+)\]\((?P<href>[^)\s]+)\)(?::\s*(?P<note>.*))?$")


def llms_entries(text: str) -> tuple[list[str], list[dict]]:
    "Problems with the llms.txt format, and its link lines ({title, href, note})."
    lines, problems = text.splitlines(), []
    if not lines or not re.match(r"^# \S", lines[0]): problems.append("llms.txt does not start with '# <project name>'")
    if not any(re.match(r"^> \S", l) for l in lines[1:4]): problems.append("llms.txt has no '> summary' under its title")
    if not any(l.startswith("## ") for l in lines): problems.append("llms.txt has no '## section' of links")
    entries = [m.groupdict() for l in lines if (m := _LLMS_ITEM.match(l))]
    stray = [l for l in lines if l.startswith("- ") and not _LLMS_ITEM.match(l)]
    problems += [f"llms.txt: not a '- [title](url): note' line: {l[:80]}" for l in stray]
    return problems, entries


def api_anchor(name: str) -> str:
    "The id docs/quarto_compat.py gives a show_doc entry."
    return "api-" + re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


PAGE_PROBE = """() => {
  const text = [...document.querySelectorAll('article p, article li, article td, article h1, article h2, article h3')]
      .filter(e => !e.closest('pre, code, .highlight, mjx-container')).map(e => e.innerText).join('\\n');
  const imgs = [...document.querySelectorAll('article img')];
  return {
    title: document.title,
    math_nodes: document.querySelectorAll('mjx-container').length,
    math_sources: document.querySelectorAll('article .math, article span.math, article div.math').length,
    raw_dollars: (text.match(/\\$\\$/g) || []).length,
    images: imgs.length,
    images_loaded: imgs.filter(i => i.complete && i.naturalWidth > 0).length,
    links: [...document.querySelectorAll('a[href]')].map(a => a.getAttribute('href')),
    launch: [...document.querySelectorAll('.dropdown-launch-buttons a[href]')].map(a => a.getAttribute('href')),
    launch_button: !!document.querySelector('.dropdown-launch-buttons button') &&
                   document.querySelector('.dropdown-launch-buttons button').getBoundingClientRect().width > 0,
    citations_unresolved: [...document.querySelectorAll('article')].map(a => a.innerText).join(' ').match(/\\[@[\\w-]+|\\{cite:[pt]\\}/g) || [],
  };
}"""


def check(site: Path, chromium: str, proc: Path) -> list[str]:
    from playwright.sync_api import sync_playwright
    pages = sorted(p.stem for p in site.glob("*.html") if p.stem not in ("genindex", "search", "py-modindex"))
    httpd, base = serve(site)
    problems, shots, titles = [], site / "_screenshots", {}
    shots.mkdir(exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=FLAGS)
        ctx = browser.new_context(viewport={"width": 1400, "height": 1000}, device_scale_factor=1)
        for name in pages:
            page, errors = ctx.new_page(), []
            page.on("console", lambda m: errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
            page.on("requestfailed", lambda r: errors.append(f"request failed: {r.url} ({r.failure})"))
            page.on("response", lambda r: errors.append(f"HTTP {r.status}: {r.url}") if r.status >= 400 else None)
            page.on("request", lambda r: errors.append(f"external request: {r.url}")
                    if not r.url.startswith((base, "data:", "blob:", "about:")) else None)
            page.goto(base + f"{name}.html", wait_until="networkidle")
            page.wait_for_function("() => !window.MathJax || !MathJax.startup || MathJax.startup.promise", timeout=15000)
            page.evaluate("() => window.MathJax && MathJax.startup ? MathJax.startup.promise : null")
            info = page.evaluate(PAGE_PROBE)
            want_figs = notebook_figures(proc, name)
            if info["math_sources"] and not info["math_nodes"]: errors.append(f"math not typeset ({info['math_sources']} math elements, no mjx-container)")
            if info["raw_dollars"]: errors.append(f"{info['raw_dollars']} raw $$ left in the text")
            if info["images"] < want_figs: errors.append(f"shows {info['images']} images, notebook has {want_figs} figures")
            if info["images_loaded"] < info["images"]: errors.append(f"{info['images'] - info['images_loaded']} images did not load")
            if info["citations_unresolved"]: errors.append(f"unresolved citations: {sorted(set(info['citations_unresolved']))}")
            titles[name] = info["title"]
            if (proc / f"{name}.ipynb").exists() or not proc.exists():       # a notebook page: it must offer to run it
                if not info["launch_button"]: errors.append("no launch button (Binder/Colab) in the page header")
                for where, url in launch_urls(name).items():
                    if url not in info["launch"]: errors.append(f"no {where} launch link to its notebook ({url}); has {info['launch']}")
                if not (ROOT / "nbs" / f"{name}.ipynb").exists(): errors.append(f"its launch links name nbs/{name}.ipynb, which is not in the repository")
            for href in info["links"]:
                u = urlparse(urljoin(base + f"{name}.html", href))
                if u.scheme == "http" and u.netloc == urlparse(base).netloc and u.path.endswith(".html"):
                    target = site / u.path.lstrip("/")
                    if not target.exists(): errors.append(f"broken link: {href}")
                    elif u.fragment and u.fragment not in page_ids(target): errors.append(f"broken anchor: {href}")
            print(f"{'ok  ' if not errors else 'FAIL'} {name}.html  math {info['math_nodes']}  images {info['images']}/{want_figs}  "
                  f"links {len(info['links'])}  launch {len(info['launch'])}  — {info['title']}")
            problems += [f"{name}.html: {e}" for e in dict.fromkeys(errors)]
            if name == "index" or name.startswith("04_"):
                page.screenshot(path=str(shots / f"{name}.png"), full_page=False)
                page.screenshot(path=str(shots / f"{name}_full.png"), full_page=True)
            page.close()
        # search
        page = ctx.new_page()
        page.goto(base + f"search.html?q={SEARCH_TERM}", wait_until="networkidle")
        try:
            page.wait_for_selector("ul.search li", timeout=20000)
            hits = page.eval_on_selector_all("ul.search li a", "els => els.map(e => e.getAttribute('href'))")
        except Exception:
            hits = []
        print(f"{'ok  ' if hits else 'FAIL'} search '{SEARCH_TERM}': {len(hits)} results {hits[:4]}")
        if not any("03_spectral" in h for h in hits): problems.append(f"search for {SEARCH_TERM} does not find the §3 page")
        page.screenshot(path=str(shots / "search.png"))
        problems += check_llms(ctx, base, site, titles)
        browser.close()
    httpd.shutdown()
    if not (site / "04_linear_surrogate.html").exists(): problems.append("no §4 page (04_linear_surrogate) to screenshot")
    ids = set()
    for p in site.glob("*.html"): ids |= set(re.findall(r'id="(api-[^"]+)"', p.read_text(encoding="utf-8")))
    names = api_names(ROOT / "entropic_bound")
    missing = [n for n in names if api_anchor(n) not in ids]
    print(f"{'ok  ' if not missing else 'FAIL'} API entries (show_doc) for {len(names) - len(missing)}/{len(names)} exported functions and classes")
    problems += [f"no API entry (show_doc) for {n}" for n in missing]
    return problems


def check_llms(ctx, base: str, site: Path, titles: dict[str, str]) -> list[str]:
    "llms.txt is served at the root, names every page once with its title and a summary, and each link loads a built page."
    resp = ctx.request.get(base + "llms.txt")
    if resp.status != 200:
        print(f"FAIL llms.txt: HTTP {resp.status}"); return [f"llms.txt: HTTP {resp.status} (docs/build.py writes it)"]
    problems, entries = llms_entries(resp.text())
    linked = []
    for e in entries:
        u = urlparse(urljoin(base + "llms.txt", e["href"]))
        name = Path(u.path).stem
        if u.netloc != urlparse(base).netloc or not u.path.endswith(".html") or name not in titles:
            problems.append(f"llms.txt: {e['href']} is not a page of the site"); continue
        r = ctx.request.get(u._replace(fragment="").geturl())
        if r.status != 200: problems.append(f"llms.txt: {e['href']} answers HTTP {r.status}")
        if not (e["note"] or "").strip(): problems.append(f"llms.txt: {e['href']} has no one-line summary")
        if not titles[name].startswith(e["title"]): problems.append(f"llms.txt: {e['href']} is titled {e['title']!r}, the page {titles[name]!r}")
        linked.append(name)
    missing = sorted(set(titles) - set(linked))
    twice = sorted({n for n in linked if linked.count(n) > 1})
    problems += [f"llms.txt: no link to {n}.html" for n in missing] + [f"llms.txt: {n}.html listed more than once" for n in twice]
    print(f"{'ok  ' if not problems else 'FAIL'} llms.txt: {len(entries)} links, {len(set(linked))}/{len(titles)} pages, "
          f"{sum(1 for e in entries if (e['note'] or '').strip())} with a summary")
    return problems


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--site", default=str(ROOT / "_build" / "html"))
    p.add_argument("--proc", default=str(ROOT / "_proc"))
    p.add_argument("--chromium", default="/usr/bin/chromium")
    a = p.parse_args(argv)
    if not (Path(a.site) / "index.html").exists():
        print(f"no site at {a.site}: run docs/build.py first"); return 1
    problems = check(Path(a.site), a.chromium, Path(a.proc))
    for pr in problems: print("  -", pr)
    print(f"{len(problems)} problem(s); screenshots in {Path(a.site) / '_screenshots'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
