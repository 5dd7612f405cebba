"""The targets of `entropic-bound reproduce` (seconds) and of the engine (a ratio), one home: bench_reproduce.py grades its runs against them and
scripts/make_figures.py states the verdicts the pages quote."""
PAPER = 600      # the paper preset in all, on the 2-core CPU machine
TABLE = 300      # ... each table on its worker
QUICK = 40       # the quick preset, on the same machine
GPU = 60         # the paper preset on one GPU
ENGINE = 20      # the batched engine's speed-up over the per-model loop (a ratio, not seconds)
