"""Time `estimate` with 200 resamples at n = 1000, T = 16, d = 12, per kind, and compare with one decision on the full data.

Run: python benchmarks/bench_estimate.py [--bootstrap B] [--kinds token-mixing linear-qk ...]
Prints seconds per call and the ratio to a single decision (the cost of the stability check).
"""
import argparse, os, time
os.environ.setdefault("OMP_NUM_THREADS", "1")

from entropic_bound.estimate import estimate, KINDS
from entropic_bound.tasks import linear_task, attention_task


def data(kind: str, n: int):
    "Samples of the matching library task: (X, Y, V) with X, V None where the kind does not use them."
    if kind == "token-mixing": return None, linear_task(n, 16, 12, 3, seed=0).Y.numpy(), None
    t = attention_task(n, T=16, d=12, r_star=3, kind="linear" if kind == "linear-qk" else "softmax", seed=0)
    return t.X.numpy(), t.Y.numpy(), t.V.numpy()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=1000)
    p.add_argument("--bootstrap", type=int, default=200)
    p.add_argument("--kinds", nargs="+", default=["token-mixing", "linear-qk", "linear-qk (V unknown)", "softmax-qk"])
    a = p.parse_args()
    print(f"n = {a.n}, T = 16, d = 12, {a.bootstrap} resamples")
    for label in a.kinds:
        kind = label.split(" ")[0]
        assert kind in KINDS, kind
        X, Y, V = data(kind, a.n)
        if "unknown" in label: V = None
        t0 = time.perf_counter(); one = estimate(X, Y, kind, V, bootstrap=0); t1 = time.perf_counter()
        est = estimate(X, Y, kind, V, bootstrap=a.bootstrap); t2 = time.perf_counter()
        print(f"{label:24s} r̂ = {est.rank}  agreement {est.agreement:.2f}  one decision {t1 - t0:6.2f} s  "
              f"with {a.bootstrap} resamples {t2 - t1:6.2f} s  (×{(t2 - t1) / max(t1 - t0, 1e-9):.0f})")


if __name__ == "__main__":
    main()
