"""Noise calibration time in a fresh process: each estimator's first private fit.

A private fit first calibrates its noise multiplier to (epsilon, delta) on the RDP
accountant; the result is cached for later fits with the same plan, so only the first fit
of a plan pays. This script clears the accountant's caches before every fit and reports the
seconds spent inside ``calibrate_noise_multiplier`` next to the whole fit::

    python benchmarks/studies/calibration/calibration.py --dataset cora --repeats 3
    python benchmarks/studies/calibration/calibration.py --dataset amazon_computers --repeats 3

One torch thread; the mean over ``--repeats`` fits. It patches the calibration function
where the plan modules import it, so it also measures older versions of the library
(``PYTHONPATH=/path/to/old/checkout python benchmarks/studies/calibration/calibration.py ...``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(BENCHMARKS))
import run as runner  # noqa: E402

ESTIMATORS = ["dpmlp", "gap-ndp", "progap-ndp", "drw", "fdp"]
_PLAN_MODULES = ("skdpgraph.privacy._dpsgd_plan", "skdpgraph.privacy._gap_plan",
                 "skdpgraph.privacy._fdp_plan")
_CACHES = {"skdpgraph.privacy._dpsgd_plan": ("_one_step_curve", "_one_step_rdp",
                                             "_calibrated_noise_multiplier"),
           "skdpgraph.privacy._fdp_plan": ("_calibrated",),
           "skdpgraph.privacy._gaussian_accounting": ("gaussian_epsilon",)}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", required=True, choices=runner.DATASETS)
    p.add_argument("--split", default="75/10/15")
    p.add_argument("--estimators", nargs="+", default=ESTIMATORS)
    p.add_argument("--epsilon", type=float, default=8.0)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--data-root", type=Path,
                   default=runner.REPO_ROOT.parent / "shared" / "datasets")
    p.add_argument("--out", type=Path, default=None)
    return p.parse_args(argv)


def clear_caches():
    """Forget cached curves and calibrations (whichever this version of the library has)."""
    import importlib

    for module_name, names in _CACHES.items():
        module = importlib.import_module(module_name)
        for name in names:
            cached = getattr(module, name, None)
            if cached is not None:
                cached.cache_clear()


class CalibrationTimer:
    """Seconds spent in ``calibrate_noise_multiplier`` (outermost calls only)."""

    def __init__(self):
        import importlib

        self.seconds, self._depth = 0.0, 0
        for name in _PLAN_MODULES:
            module = importlib.import_module(name)
            module.calibrate_noise_multiplier = self._timed(module.calibrate_noise_multiplier)

    def _timed(self, original):
        def wrapper(*args, **kwargs):
            self._depth += 1
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self._depth -= 1
                if self._depth == 0:
                    self.seconds += time.perf_counter() - start
        return wrapper


def main(argv=None):
    import numpy as np

    args = parse_args(argv)
    runner.set_threads(1)
    args.seeds = 1
    from registry import ESTIMATORS as FACTORIES

    ds, split_name, split_for_seed = runner.load(args)
    train = np.asarray(split_for_seed(0)["train"])
    timer = CalibrationTimer()
    rows = []
    for name in args.estimators:
        calibration, fit = [], []
        for _ in range(args.repeats):
            clear_caches()
            est = FACTORIES[name](args.epsilon, 0)
            timer.seconds = 0.0
            start = time.perf_counter()
            est.fit(ds.graph.nodes(train), ds.y[train])
            fit.append(time.perf_counter() - start)
            calibration.append(timer.seconds)
        rows.append({"estimator": name, "calibration_seconds": float(np.mean(calibration)),
                     "fit_seconds": float(np.mean(fit)),
                     "epsilon_spent": float(est.epsilon_spent_)})
        print(f"{args.dataset} {name:>11s}: calibration {rows[-1]['calibration_seconds']:.3f} s "
              f"of a {rows[-1]['fit_seconds']:.2f} s fit (epsilon_spent_ "
              f"{rows[-1]['epsilon_spent']:.4f})", flush=True)
    if args.out:
        runner.write_rows(args.out, args, rows)


if __name__ == "__main__":
    main()
