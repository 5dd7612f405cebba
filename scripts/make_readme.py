"""Write README.md from the front-page notebook nbs/index.ipynb (nbdev_readme needs Quarto).

Markdown cells are copied; code cells are shown as Python blocks with their text outputs;
cells marked `#| hide` are left out and nbdev directive lines (`#| ...`) are stripped;
`#| echo: false` cells show only their output. Image outputs are left out (the docs show them).
Usage: python scripts/make_readme.py [--check]
"""
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DIRECTIVE = re.compile(r"^\s*#\s*\|\s*(.*?)\s*$")


def directives(src: str) -> list[str]:
    "The nbdev directives of a code cell."
    return [m.group(1) for line in src.splitlines() if (m := DIRECTIVE.match(line))]


def render(nb: dict) -> str:
    "The README text for the notebook `nb`."
    parts = []
    for cell in nb["cells"]:
        src = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        if cell["cell_type"] == "markdown":
            parts.append(src.strip())
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
                if "text/markdown" in data:
                    parts.append("".join(data["text/markdown"]).strip())
                    continue
                if "text/plain" in data and not any(k.startswith("image/") for k in data):
                    text = "".join(data["text/plain"])
            if text and text.strip():
                parts.append(f"```\n{text.rstrip()}\n```")
    text = "\n\n".join(p for p in parts if p) + "\n"
    return re.sub(r"\]\((?!https?:|#|/)([^)]+?\.ipynb)\)", r"](nbs/\1)", text)   # notebook links from the repo root


def main(argv):
    nb = json.loads((ROOT / "nbs" / "index.ipynb").read_text(encoding="utf-8"))
    text = render(nb)
    readme = ROOT / "README.md"
    if "--check" in argv:
        if readme.read_text(encoding="utf-8") != text:
            print("README.md differs from nbs/index.ipynb: run `python scripts/make_readme.py` and commit")
            return 1
        print("README.md matches nbs/index.ipynb")
        return 0
    readme.write_text(text, encoding="utf-8")
    print("wrote README.md")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
