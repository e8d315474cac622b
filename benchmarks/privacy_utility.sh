#!/usr/bin/env bash
# Every estimator, with its defaults, on every shared dataset at epsilon 1, 2, 4, 8 and inf:
# the privacy-utility tables of the docs. One JSON file per dataset and estimator under
# benchmarks/results/utility/ (files already there are kept, so a cut run resumes), then
#     python benchmarks/utility_table.py benchmarks/results/utility/*.json \
#         --out doc/user_guide/privacy_utility_tables.inc
# Usage (from the repository root): SEEDS=5 bash benchmarks/privacy_utility.sh
# More seeds of a finished run: FIRST_SEED=1 SEEDS=4 bash benchmarks/privacy_utility.sh writes
# DATASET-ESTIMATOR-seeds1-4.json beside the seed-0 files; utility_table.py merges them.
# DATASETS="amazon_computers" and ESTIMATORS="dpmlp gap-ndp" narrow the run.
set -u
SEEDS=${SEEDS:-1}
FIRST_SEED=${FIRST_SEED:-0}
OUT=benchmarks/results/utility
SUFFIX=""
[ "$FIRST_SEED" -gt 0 ] && SUFFIX="-seeds$FIRST_SEED-$((FIRST_SEED + SEEDS - 1))"
mkdir -p "$OUT"
# "dataset split file-prefix estimators": the shared graphs with every estimator, then the
# sparse-graph checks of the edge-level estimator (Cora's 75/10/15 split, Twitch-EN, Coauthor
# Physics) with it alone.
ALL="dpmlp gap-edp progap-edp votes-edp gap-ndp progap-ndp drw fdp rgnn"
for spec in "amazon_computers 75/10/15 amazon_computers $ALL" "amazon_photo 75/10/15 amazon_photo $ALL" \
            "cora public cora $ALL" "facebook 75/10/15 facebook $ALL" \
            "coauthor_cs 75/10/15 coauthor_cs $ALL" "cora 75/10/15 cora-75-10-15 votes-edp" \
            "twitch_en 75/10/15 twitch_en votes-edp" \
            "coauthor_physics 75/10/15 coauthor_physics votes-edp"; do
  set -- $spec
  dataset=$1 split=$2 prefix=$3
  shift 3
  case " ${DATASETS:-$dataset} " in *" $dataset "*) ;; *) continue ;; esac
  for estimator in "$@"; do
    case " ${ESTIMATORS:-$estimator} " in *" $estimator "*) ;; *) continue ;; esac
    out="$OUT/$prefix-$estimator$SUFFIX.json"
    [ -f "$out" ] && continue
    extra=()  # RGNN's feature groups where the features are many binary ones (see registry.py)
    if [ "$estimator" = rgnn ]; then
      [ "$dataset" = cora ] && extra=(--param rgnn.feature_group_size=25)
      [ "$dataset" = facebook ] && extra=(--param rgnn.feature_group_size=100)
    fi
    echo "== $(date +%T) $prefix $estimator"
    python benchmarks/run.py --dataset "$dataset" --split "$split" --epsilons 1 2 4 8 inf \
      --seeds "$SEEDS" --first-seed "$FIRST_SEED" --no-warmup --estimators "$estimator" "${extra[@]}" --out "$out"
  done
done
