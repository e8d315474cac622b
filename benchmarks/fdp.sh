#!/usr/bin/env bash
# FDPClassifier benchmarks. Run from the repository root with the venv active.
# Cora, Planetoid public split, epsilon 8 (delta 1e-5 as in the DRW paper), vs the DRW paper's
# FDP numbers (17.1-23.2). Settings within the DRW paper's FDP grid: K=2, batch 70 of 140.
set -euo pipefail
python benchmarks/run.py --dataset cora --estimators fdp dpmlp --epsilons 8 inf --seeds 5 \
  --param fdp.batch_size=70 --param fdp.epochs=50 --param fdp.lr=0.02 --param fdp.max_degree=2 \
  --param delta=1e-5 --out benchmarks/results/fdp-cora-public.json
# Random 50/25/25 splits at epsilon 4, 8, 16 against DP-MLP (and GAP-node once registered).
for dataset in facebook amazon_computers coauthor_cs; do
  python benchmarks/run.py --dataset "$dataset" --split 50/25/25 --estimators fdp dpmlp \
    --epsilons 4 8 16 inf --seeds "${SEEDS:-5}" --param fdp.epochs=10 \
    --out "benchmarks/results/fdp-$dataset-50-25-25.json"
done
