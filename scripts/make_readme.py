"""Write README.md from the front-page notebook nbs/index.ipynb (nbdev_readme needs Quarto).

Markdown cells are copied; code cells are shown as Python blocks with their text outputs;
cells marked `#| hide` are left out and nbdev directive lines (`#| ...`) are stripped;
`#| echo: false` cells show only their output. A PNG output is written, byte for byte as the
notebook stores it, to nbs/images/readme-N.png and linked from the README, so the README shows
the figure the executed front page shows (--check compares those files too).
Usage: python scripts/make_readme.py [--check]
"""
import base64
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DIRECTIVE = re.compile(r"^\s*#\s*\|\s*(.*?)\s*$")
IMAGES = "nbs/images"                                       # PNG outputs of the front page, relative to the repo root


LABEL = re.compile(r"\[([^\]\n]+)\]\{\.[a-z-]+\}")


def directives(src: str) -> list[str]:
    "The nbdev directives of a code cell."
    return [m.group(1) for line in src.splitlines() if (m := DIRECTIVE.match(line))]


def render(nb: dict) -> tuple[str, dict]:
    "The README text for the notebook `nb`, and the PNG files it links to ({path from the repo root: bytes})."
    parts, images = [], {}
    for cell in nb["cells"]:
        src = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        if cell["cell_type"] == "markdown":
            parts.append(LABEL.sub(r"**\1**", src.strip()))              # a styled label ([reconstructed]{.reconstructed}) in bold: GitHub has no classes
            continue
        if cell["cell_type"] != "code":
            continue
        dirs = directives(src)
        if any(d.startswith(("hide", "default_exp")) for d in dirs):
            continue
        code = "\n".join(l for l in src.splitlines() if not DIRECTIVE.match(l)).strip()
        if code and "echo: false" not in dirs:
            parts.append(f"```python\n{code}\n```")
        for out in cell.get("outputs", []):
            text = None
            if out.get("output_type") == "stream":
                text = "".join(out["text"])
            elif "data" in out:
                data = out["data"]
                if "image/png" in data:
                    path = f"{IMAGES}/readme-{len(images) + 1}.png"
                    images[path] = base64.b64decode("".join(data["image/png"]))
                    parts.append(f"![figure]({path})")
                    continue
                if "text/markdown" in data:
                    parts.append("".join(data["text/markdown"]).strip())
                    continue
                if "text/plain" in data and not any(k.startswith("image/") for k in data):
                    text = "".join(data["text/plain"])
            if text and text.strip():
                parts.append(f"```\n{text.rstrip()}\n```")
    text = "\n\n".join(p for p in parts if p) + "\n"
    return re.sub(r"\]\((?!https?:|#|/)([^)]+?\.ipynb(?:#[^)]*)?)\)", r"](nbs/\1)", text), images   # notebook links from the repo root


NO_RESULTS = "There are none yet: run `entropic-bound reproduce"  # what the front page prints without results


def main(argv):
    nb = json.loads((ROOT / "nbs" / "index.ipynb").read_text(encoding="utf-8"))
    text, images = render(nb)
    readme = ROOT / "README.md"
    stale = sorted(p for p in (ROOT / IMAGES).glob("readme-*.png") if f"{IMAGES}/{p.name}" not in images)
    if NO_RESULTS in text:              # the front page was executed without results of this code: its claims table and Figure 1 are missing
        print("nbs/index.ipynb shows no results (results/ is missing or was made by other code): run `entropic-bound reproduce --preset quick "
              "--out results`, execute nbs/index.ipynb, then this script")
        return 1
    if "--check" in argv:
        differs = [str(readme.relative_to(ROOT))] if readme.read_text(encoding="utf-8") != text else []
        differs += [path for path, data in images.items() if not (ROOT / path).is_file() or (ROOT / path).read_bytes() != data]
        differs += [str(p.relative_to(ROOT)) for p in stale]
        if differs:
            print(f"{', '.join(differs)} differ from nbs/index.ipynb: run `python scripts/make_readme.py` and commit")
            return 1
        print("README.md and its figures match nbs/index.ipynb")
        return 0
    for p in stale: p.unlink()
    for path, data in images.items():
        (ROOT / path).parent.mkdir(parents=True, exist_ok=True); (ROOT / path).write_bytes(data)
    readme.write_text(text, encoding="utf-8")
    print(f"wrote README.md and {len(images)} figure(s) under {IMAGES}/")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
