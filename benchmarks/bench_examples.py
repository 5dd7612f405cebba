"""What each example of the front page costs: every `entropic-bound` command in the ```bash blocks of nbs/index.ipynb (hence
README.md), run as written, one after another, in a fresh folder, timed from start to exit, with the longest time it wrote nothing (to the terminal: standard output and error), with the machine's load average
the CPU time the rest of the machine used meanwhile (all cores' busy time from /proc/stat less the example's own; the costs are
quoted as "idle" only when the rest used less than half a core throughout). `mydata.npz` is the README's
"your own samples": a linear token-mixing task, n = 1000, T = 16, d = 12, r* = 3.

    python benchmarks/bench_examples.py [--only SUBSTRING] [--keep DIR]

Writes benchmarks/examples.json, from which scripts/make_figures.py quotes each example's cost on the front page. Nothing here is
a test; an example that exits with a status other than the one documented for it (0; 3 for `reproduce --shelf beyond`, whose
claims the stored reference does not hold) stops the script with exit 1.
"""
import argparse
import datetime
import json
import os
import platform
import re
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _commit import head_commit

ROOT = Path(__file__).resolve().parents[1]
OUT = Path(__file__).resolve().parent / "examples.json"
BLOCK = re.compile(r"```bash\n(.*?)```", re.DOTALL)


def examples() -> list[str]:
    "The `entropic-bound` commands of the front page's ```bash blocks, in order, comments removed."
    nb = json.loads((ROOT / "nbs" / "index.ipynb").read_text())
    text = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    cmds = []
    for block in BLOCK.findall(text):
        for line in block.splitlines():
            line = line.split("#", 1)[0].strip()
            if line.startswith("entropic-bound "): cmds.append(line)
    return cmds


def busy_seconds() -> float:
    "CPU seconds every core of this machine has spent busy since boot (/proc/stat: all but idle and iowait)."
    f = [float(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    return (sum(f[:8]) - f[3] - f[4]) / os.sysconf("SC_CLK_TCK")


def child_seconds() -> float:
    "CPU seconds of this process's finished children (user and system)."
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def my_data(folder: Path) -> None:
    "The README's `mydata.npz`: X (n, T, d) and Y (n, T, d_v) of a linear token-mixing task of rank 3."
    import numpy as np
    from entropic_bound.tasks import linear_task
    t = linear_task(n=1000, T=16, d=12, r_star=3, seed=0)
    np.savez(folder / "mydata.npz", X=t.X, Y=t.Y)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default=None, help="run only the examples containing this text (the record keeps the others' last costs)")
    ap.add_argument("--keep", default=None, help="run in this folder and keep what the examples write")
    a = ap.parse_args()
    exe = Path(sys.executable).parent / "entropic-bound"
    folder = Path(a.keep) if a.keep else Path(tempfile.mkdtemp(prefix="examples-"))
    folder.mkdir(parents=True, exist_ok=True)
    my_data(folder)
    old = {r["command"]: r for r in json.loads(OUT.read_text())["examples"]} if OUT.exists() else {}
    rows, failed = [], False
    for cmd in examples():
        if a.only and a.only not in cmd:
            if cmd in old: rows.append(old[cmd])
            continue
        busy0, own0, t0 = busy_seconds(), child_seconds(), time.perf_counter()
        p = subprocess.Popen([str(exe), *shlex.split(cmd)[1:]], cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        said, last, silent = [], t0, 0.0
        while chunk := os.read(p.stdout.fileno(), 65536):          # progress bars rewrite a line: time every write, not every line
            now = time.perf_counter(); silent = max(silent, now - last); last = now; said.append(chunk)
        p.wait()
        s, own = time.perf_counter() - t0, child_seconds() - own0
        silent = max(silent, s - (last - t0))
        others = max(0.0, busy_seconds() - busy0 - own) / s
        rows.append(dict(command=cmd, seconds=round(s, 1), exit=p.returncode, longest_silence=round(silent, 1), cores_used=round(own / s, 2), others_cores=round(others, 2),
                         date=datetime.date.today().isoformat(), commit=head_commit()))
        print(f"{s:8.1f} s  exit {p.returncode}  silent at most {silent:.1f} s  cores used {own / s:.2f}, the rest of the machine {others:.2f}  {cmd}", flush=True)
        if p.returncode != (3 if "--shelf beyond" in cmd else 0):
            print(b"".join(said)[-3000:].decode(errors="replace")); failed = True; break
    import torch
    record = dict(machine=f"{platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}", examples=rows)
    if not failed: OUT.write_text(json.dumps(record, indent=1) + "\n")
    sys.exit(1 if failed else 0)
