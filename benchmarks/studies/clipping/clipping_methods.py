"""Time of one DP-SGD clipped-gradient sum by method, on DP-MLP's model and batch, one run.

Example (from the repository root)::

    python benchmarks/studies/clipping/clipping_methods.py --dataset amazon_computers --steps 50

Every method computes the same thing, the sum over a batch of each example's gradient
clipped to C, for DP-MLP's default model (two linear layers, width 64) on ``--batch-size``
random training nodes of the dataset, and the non-private mean gradient is the floor:

- ``non-private``: one ordinary backward pass (no clipping);
- ``one-pass``: :class:`skdpgraph.training.ClippedSumModule` (what training uses);
- ``opacus-ghost``: Opacus' ghost clipping, two backward passes
  (``GradSampleModuleFastGradientClipping`` and ``DPTensorFastGradientClipping``);
- ``opacus-hooks``: Opacus' ``GradSampleModule`` (hooks), per-example gradients
  materialised, then clipped and summed;
- ``torch-func``: ``torch.func.vmap(grad)`` per-example gradients, clipped and summed.

The methods take turns step by step, so machine load hits them alike; the table gives the
median milliseconds per step (forward pass included) and the ratio to ``non-private``.
"""

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))  # benchmarks/
sys.path.insert(1, str(HERE.parents[2]))  # the repository

import run as runner  # noqa: E402


def methods(make_module, max_grad_norm):
    import torch
    from opacus import GradSampleModule
    from opacus.grad_sample import GradSampleModuleFastGradientClipping
    from opacus.optimizers import DPOptimizerFastGradientClipping
    from opacus.utils.fast_gradient_clipping_utils import DPTensorFastGradientClipping
    from torch.func import functional_call, grad, vmap

    from skdpgraph.training import ClippedSumModule

    def losses_of(model, x, y):
        return torch.nn.functional.cross_entropy(model(x), y, reduction="none")

    def clip_and_sum(per_example):
        flat = torch.cat([g.flatten(1) for g in per_example], 1)
        factors = (max_grad_norm / (flat.norm(dim=1) + 1e-6)).clamp(max=1.0)
        return [torch.einsum("b,b...->...", factors, g) for g in per_example]

    plain = make_module()

    def non_private(x, y):
        plain.zero_grad(set_to_none=True)
        losses_of(plain, x, y).mean().backward()

    one = ClippedSumModule(make_module(), max_grad_norm)

    def one_pass(x, y):
        one.clipped_sum(losses_of(one, x, y))

    ghost = GradSampleModuleFastGradientClipping(make_module(), loss_reduction="sum",
                                                 max_grad_norm=max_grad_norm)
    ghost_optimizer = DPOptimizerFastGradientClipping(
        torch.optim.SGD(ghost.parameters(), lr=0.0), noise_multiplier=0.0,
        max_grad_norm=max_grad_norm, expected_batch_size=1, loss_reduction="sum")

    def opacus_ghost(x, y):
        ghost_optimizer.zero_grad(set_to_none=True)
        DPTensorFastGradientClipping(ghost, ghost_optimizer, losses_of(ghost, x, y),
                                     loss_reduction="sum").backward()

    hooks = GradSampleModule(make_module(), loss_reduction="sum")

    def opacus_hooks(x, y):
        hooks.zero_grad(set_to_none=True)
        for p in hooks.parameters():
            p.grad_sample = None
        losses_of(hooks, x, y).sum().backward()
        clip_and_sum([p.grad_sample for p in hooks.parameters()])

    functional = make_module()
    params = {k: v.detach() for k, v in functional.named_parameters()}

    def one_loss(p, x, y):
        return losses_of(lambda t: functional_call(functional, p, (t,)), x[None], y[None])[0]

    per_example = vmap(grad(one_loss), in_dims=(None, 0, 0))

    def torch_func(x, y):
        clip_and_sum(list(per_example(params, x, y).values()))

    return {"non-private": non_private, "one-pass": one_pass, "opacus-ghost": opacus_ghost,
            "opacus-hooks": opacus_hooks, "torch-func": torch_func}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", required=True, choices=runner.DATASETS)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--data-root", type=Path,
                   default=runner.REPO_ROOT.parent / "shared" / "datasets")
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    runner.set_threads(args.threads)
    import numpy as np
    import torch

    from skdpgraph.datasets import load_dataset
    from skdpgraph.nn import MLP

    ds = load_dataset(args.dataset, args.data_root)
    x_all = torch.from_numpy(np.asarray(ds.graph.features(), dtype=np.float32))
    y_all = torch.from_numpy(np.asarray(ds.y, dtype=np.int64))
    classes = int(y_all.max()) + 1

    def make_module():
        torch.manual_seed(0)
        return MLP(x_all.shape[1], args.hidden, classes, num_layers=2)

    timers = methods(make_module, 1.0)
    g = torch.Generator().manual_seed(0)
    times = {name: [] for name in timers}
    for step in range(args.steps + 2):  # two warm-up steps
        index = torch.randint(0, len(y_all), (args.batch_size,), generator=g)
        x, y = x_all[index], y_all[index]
        for name, fn in timers.items():
            start = time.perf_counter()
            fn(x, y)
            if step >= 2:
                times[name].append(time.perf_counter() - start)
    floor = statistics.median(times["non-private"])
    rows = [{"method": name, "median_ms": 1e3 * statistics.median(t),
             "ratio": statistics.median(t) / floor} for name, t in times.items()]
    print(f"{args.dataset}: MLP {x_all.shape[1]}-{args.hidden}-{classes}, batch "
          f"{args.batch_size}, {args.steps} steps, {args.threads} thread(s)")
    for r in rows:
        print(f"  {r['method']:>12s}  {r['median_ms']:7.2f} ms/step  {r['ratio']:5.2f}x")
    out = args.out or HERE / f"overhead-clipping-methods-{args.dataset}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    payload = {"config": vars(args) | {"data_root": str(args.data_root), "out": str(out)},
               "environment": runner.environment(args), "rows": rows}
    out.write_text(json.dumps(runner._jsonable(payload), indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
