"""The sum of per-example clipped gradients in one backward pass, for ``nn.Linear`` models.

Book-keeping clipping (Bu et al., "Differentially private optimization on large model at
small cost", ICML 2023). A recording ``forward`` keeps every ``nn.Linear``'s input ``a`` (shape
``(batch, ..., in)``) and output; one backward pass of the summed loss gives the gradient
``g`` with respect to every output. Example ``i``'s gradient is ``sum_t g_it a_it^T`` for
the weight (``t`` runs over the positions between the batch and the feature axis) and
``sum_t g_it`` for the bias, so from ``a`` and ``g`` alone come every example's gradient
norm over all parameters, its clipping factor ``min(1, C / (norm + 1e-6))`` (Opacus'
formula) and each parameter's clipped sum ``(c * g)^T a``. The result is the clipped sum
that Opacus' ghost clipping computes with two backward passes.

A model may also feed a linear layer the rows of several examples at once (the nodes of a
batch of graphs, packed without padding): it then names those layers and each row's
example, and a row's gradient counts towards its own example's norm and clipping.
"""

from __future__ import annotations

import functools
import math

import torch
from torch import nn

__all__ = ["ClippedSumModule"]


class ClippedSumModule(nn.Module):
    """Wraps a module whose trainable parameters all belong to ``nn.Linear`` layers.

    Calling the wrapper runs the module and records each linear layer's input and output
    (only with gradients enabled; :meth:`stop_recording` ends it for good);
    :meth:`clipped_sum` then turns per-example losses of that forward pass into
    ``p.grad = sum_i c_i grad_i`` for every trainable parameter.
    Each layer's parameters must be used only through its ``forward``, and every input's
    first axis must be the batch (one example per row), except in *row layers*: a module
    that defines ``row_layers()`` (the linear layers whose input rows belong to examples)
    and ``example_of_rows(*inputs)`` (for the inputs of a call, a tensor with each row's
    example index, in ``[0, batch)``) may feed those layers rows of many examples, each
    example's rows counted in its own gradient.

    Parameters
    ----------
    module : nn.Module
        The model; :meth:`supports` says whether it qualifies.
    max_grad_norm : float
        The clipping threshold ``C`` on each example's gradient norm (all parameters).

    Examples
    --------
    >>> import torch
    >>> model = ClippedSumModule(torch.nn.Linear(3, 1), max_grad_norm=1.0)
    >>> losses = model(torch.eye(3) * 10).squeeze(-1)
    >>> model.clipped_sum(losses)
    >>> [round(v, 4) for v in model.module.weight.grad.flatten().tolist()]
    [0.995, 0.995, 0.995]
    """

    def __init__(self, module: nn.Module, max_grad_norm: float) -> None:
        super().__init__()
        if not self.supports(module):
            raise ValueError("ClippedSumModule: every trainable parameter must belong to an "
                             "nn.Linear layer.")
        self.module = module
        self.max_grad_norm = max_grad_norm
        self._records: list[tuple[nn.Linear, torch.Tensor, torch.Tensor]] = []
        self._capturing = False
        # Each layer's forward is shadowed on the instance by one that also records: a
        # forward hook would do the same at three times the per-call cost (it moves the
        # call onto torch's slow path), which at a few microseconds per layer matters.
        self._layers = [layer for layer in module.modules() if _trainable_linear(layer)]
        for layer in self._layers:
            layer.forward = functools.partial(self._recording_forward, layer)
        self._trainable = [p for p in module.parameters() if p.requires_grad]
        self._row_layers = (set(module.row_layers()) if hasattr(module, "example_of_rows")
                            else set())
        self._row_owner: torch.Tensor | None = None
        self._workspace: dict[nn.Linear, torch.Tensor] = {}

    @staticmethod
    def supports(module: nn.Module) -> bool:
        """Whether every trainable parameter of ``module`` belongs to an ``nn.Linear``."""
        owned = {id(p) for layer in module.modules() if isinstance(layer, nn.Linear)
                 for p in layer.parameters(recurse=False)}
        return all(id(p) in owned for p in module.parameters() if p.requires_grad)

    def forward(self, *args, **kwargs):
        self._capturing = True
        if self._row_layers and torch.is_grad_enabled():
            self._row_owner = self.module.example_of_rows(*args, **kwargs)
        try:
            return self.module(*args, **kwargs)
        finally:
            self._capturing = False

    def _recording_forward(self, layer: nn.Linear, input: torch.Tensor) -> torch.Tensor:
        output = type(layer).forward(layer, input)
        if self._capturing and torch.is_grad_enabled() and output.requires_grad:
            self._records.append((layer, input.detach(), output))
        return output

    def stop_recording(self) -> None:
        """Give the wrapped module's layers their own ``forward`` back."""
        for layer in self._layers:
            if "forward" in vars(layer):
                del layer.forward
        self._layers = []
        self._records = []
        self._trainable = []
        self._workspace = {}

    def clipped_sum(self, losses: torch.Tensor) -> None:
        """Set ``p.grad`` to the sum of the clipped per-example gradients of ``losses``.

        ``losses`` has shape ``(batch,)`` and comes from the last call of the wrapper
        (whose records it consumes).
        """
        records, self._records = self._records, []
        owner, self._row_owner = self._row_owner, None
        batch = losses.shape[0]
        grads = torch.autograd.grad(losses.sum(), [output for _, _, output in records],
                                    allow_unused=True)
        layers: dict[nn.Linear, tuple[list, list]] = {}
        for (layer, a, _), g in zip(records, grads):
            if g is None:  # this call's output does not reach the loss
                continue
            rows = owner.shape[0] if layer in self._row_layers else batch
            if a.shape[0] != rows:
                raise ValueError(f"ClippedSumModule: a linear layer's input has {a.shape[0]} "
                                 f"rows where the batch has {rows}; the batch must come first.")
            inputs, backprops = layers.setdefault(layer, ([], []))
            inputs.append(a)
            backprops.append(g)
        # A layer called several times in one forward pass: its calls' positions add up.
        layers = {layer: _join(a, g) for layer, (a, g) in layers.items()}
        owners = {a.shape[0]: owner.repeat(a.shape[0] // owner.shape[0])
                  for layer, (a, _) in layers.items() if layer in self._row_layers}
        runs = {rows: _RowRuns(owners[rows], batch) for rows in owners}
        rows = {layer: _RowGradients(layer, a, g, runs[a.shape[0]], owners[a.shape[0]],
                                     self._workspace)
                for layer, (a, g) in layers.items() if layer in self._row_layers}
        squared = None
        for layer, (a, g) in layers.items():
            term = (rows[layer].squared if layer in rows else
                    _squared_norms(a, g, weight=layer.weight.requires_grad,
                                   bias=_trains_bias(layer)))
            squared = term if squared is None else squared.add_(term)
        if squared is None:  # no layer reached the loss
            squared = losses.new_zeros(batch)
        factors = squared.sqrt_().add_(1e-6).reciprocal_().mul_(self.max_grad_norm).clamp_(
            max=1.0)
        # Each op costs microseconds of dispatch whatever its size, which on small layers
        # is most of the step: 2-D calls (no positions) skip the reshapes and conversions.
        column = factors.view(-1, 1)
        for layer, (a, g) in layers.items():
            if layer in rows:
                rows[layer].set_clipped_sum(factors)
                continue
            if g.dim() == 2 and g.dtype == factors.dtype == a.dtype:
                g2, a2 = g * column, a
            else:
                g = g * factors.to(g.dtype).view(-1, *([1] * (g.dim() - 1)))
                g2, a2 = g.reshape(-1, g.shape[-1]), a.reshape(-1, a.shape[-1]).to(g.dtype)
            if layer.weight.requires_grad:
                layer.weight.grad = g2.T @ a2
            if _trains_bias(layer):
                layer.bias.grad = g2.sum(0)
        for p in self._trainable:
            if p.grad is None:  # unused in this forward pass
                p.grad = torch.zeros_like(p)


def _join(inputs: list[torch.Tensor],
          backprops: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """One layer's inputs and output gradients: as recorded for a single call (2-D when
    the call had no positions), else every call's ``(batch, T, features)`` concatenated
    (2-D calls of a row layer: their rows one after the other)."""
    if len(inputs) == 1:
        return inputs[0], backprops[0]
    if all(a.dim() == 2 for a in inputs):
        return torch.cat(inputs), torch.cat(backprops)
    batch = inputs[0].shape[0]
    return (torch.cat([a.reshape(batch, -1, a.shape[-1]) for a in inputs], 1),
            torch.cat([g.reshape(batch, -1, g.shape[-1]) for g in backprops], 1))


def _trainable_linear(layer: nn.Module) -> bool:
    return isinstance(layer, nn.Linear) and any(
        p.requires_grad for p in layer.parameters(recurse=False))


def _trains_bias(layer: nn.Linear) -> bool:
    return layer.bias is not None and layer.bias.requires_grad


def _squared_norms(a: torch.Tensor, g: torch.Tensor, *, weight: bool,
                   bias: bool) -> torch.Tensor:
    """Each example's squared gradient norm over a linear layer's weight and bias (each
    counted if trained).

    ``a``: ``(batch, in)`` or ``(batch, ..., in)``, ``g`` likewise with ``out``. For the
    weight, with one position the norm factorises (``|a| |g|``); with more, the cheaper of
    the Gram-matrix form ``sum_{t,s} (a_t . a_s)(g_t . g_s)`` and the explicit per-example
    gradient.
    """
    if a.dim() == 2:
        g_squared = torch.linalg.vector_norm(g, dim=-1).square_()
        if not weight:
            return g_squared
        a_squared = (torch.linalg.vector_norm(a, dim=-1) if a.dtype == g.dtype else
                     torch.linalg.vector_norm(a, dim=-1, dtype=g.dtype)).square_()
        # (|a|^2 + 1) |g|^2 with a bias (one op), |a|^2 |g|^2 without
        return torch.addcmul(g_squared, a_squared, g_squared) if bias else a_squared.mul_(g_squared)
    batch = a.shape[0]
    a, g = a.reshape(batch, -1, a.shape[-1]).to(g.dtype), g.reshape(batch, -1, g.shape[-1])
    squared = g.new_zeros(batch)
    positions, d_in, d_out = a.shape[1], a.shape[2], g.shape[2]
    if weight:
        if positions == 1:
            squared = squared + a[:, 0].square().sum(-1) * g[:, 0].square().sum(-1)
        elif positions * (d_in + d_out) <= d_in * d_out:
            squared = squared + ((a @ a.transpose(1, 2)) * (g @ g.transpose(1, 2))).sum((1, 2))
        else:
            squared = squared + torch.einsum("bto,bti->boi", g, a).square().sum((1, 2))
    if bias:
        squared = squared + g.sum(1).square().sum(-1)
    return squared


#: A row layer's per-example gradients are kept, to sum them clipped, while they hold
#: at most this many elements; beyond, only their norms are computed, run by run.
_KEPT_GRADIENT_ELEMENTS = 2 ** 24


class _RowRuns:
    """A row layer's rows in runs of consecutive examples with equal row counts.

    Rows are put in example order (a stable sort, skipped when they already are: one
    graph after another, as a packed batch of graphs lays them out); each run's rows are
    then a ``(examples, rows, features)`` view, one batched product per run. A caller
    sets the number of runs: a batch of graphs sorted by size has one per distinct size,
    and one padded to a few widths (:class:`~skdpgraph.nn.GraphBatches`) one per width.
    Built once per batch, it serves every row layer.
    """

    def __init__(self, owner: torch.Tensor, batch: int) -> None:
        self.batch = batch
        self.order = (None if bool((owner[1:] >= owner[:-1]).all())
                      else torch.argsort(owner, stable=True))
        sizes = torch.bincount(owner, minlength=batch).tolist()
        self.runs: list[tuple[int, int, int]] = []  # first example, examples, rows each
        first = 0
        for example in range(1, batch + 1):
            if example == batch or sizes[example] != sizes[first]:
                if sizes[first]:
                    self.runs.append((first, example - first, sizes[first]))
                first = example
        self.lengths = [count * size for _, count, size in self.runs]

    def views(self, rows: torch.Tensor):
        """Each run's ``(first example, examples, view of shape (examples, rows each,
        features))`` of ``rows`` (given in the batch's order)."""
        if self.order is not None:
            rows = rows[self.order]
        for (first, count, size), part in zip(self.runs, rows.split(self.lengths)):
            yield first, count, part.view(count, size, rows.shape[1])


def _workspace_view(workspace: dict[nn.Linear, torch.Tensor], layer: nn.Linear,
                    like: torch.Tensor, shape: tuple[int, ...]) -> torch.Tensor:
    """An uninitialised tensor of ``shape`` from ``layer``'s buffer, kept from step to
    step: a fresh buffer of megabytes costs more in page faults than its products."""
    size = math.prod(shape)
    buffer = workspace.get(layer)
    if (buffer is None or buffer.numel() < size or buffer.dtype != like.dtype
            or buffer.device != like.device):
        buffer = workspace[layer] = like.new_empty(size + size // 4)
    return buffer[:size].view(shape)


class _RowGradients:
    """A row layer's per-example squared gradient norms, and later its clipped sum.

    ``a``: ``(rows, in)``, ``g``: ``(rows, out)``, each row owned by one example. While
    small enough (:data:`_KEPT_GRADIENT_ELEMENTS`), every example's weight gradient
    ``g_b^T a_b`` is formed, one batched product per run, and kept with its bias
    gradient: the norms are then one reduction and the clipped sum a matrix-vector
    product, at about the cost of the weight gradient itself. Beyond, each run's norms
    come from :func:`_squared_norms` and the clipped sum from one product of the scaled
    rows.
    """

    def __init__(self, layer: nn.Linear, a: torch.Tensor, g: torch.Tensor, runs: _RowRuns,
                 owner: torch.Tensor, workspace: dict[nn.Linear, torch.Tensor]) -> None:
        self.layer, self.a, self.g, self.owner = layer, a.to(g.dtype), g, owner
        weight, bias = layer.weight.requires_grad, _trains_bias(layer)
        batch, d_out = runs.batch, g.shape[1]
        self.kept = self.kept_bias = None
        self.squared = g.new_zeros(batch)
        if weight and batch * a.shape[1] * d_out <= _KEPT_GRADIENT_ELEMENTS:
            self.kept = _workspace_view(workspace, layer, g, (batch, d_out, a.shape[1]))
            if bias:  # summed run by run, with the weight's products
                self.kept_bias = g.new_zeros(batch, d_out)
            covered = 0
            for (first, count, a_run), (_, _, g_run) in zip(runs.views(self.a), runs.views(g)):
                if first > covered:  # examples without rows
                    self.kept[covered:first].zero_()
                covered = first + count
                torch.bmm(g_run.transpose(1, 2), a_run, out=self.kept[first:covered])
                if bias:
                    torch.sum(g_run, 1, out=self.kept_bias[first:covered])
            self.kept[covered:].zero_()
            self.squared += torch.linalg.vector_norm(self.kept.view(batch, -1), dim=1).square_()
        elif weight:
            for (first, count, a_run), (_, _, g_run) in zip(runs.views(self.a), runs.views(g)):
                self.squared[first:first + count] += _squared_norms(a_run, g_run, weight=True,
                                                                    bias=False)
        if bias:
            if self.kept_bias is None:  # not summed with the weight's products
                self.kept_bias = g.new_zeros(batch, d_out).index_add_(0, owner, g)
            self.squared += self.kept_bias.square().sum(1)

    def set_clipped_sum(self, factors: torch.Tensor) -> None:
        """Set the layer's ``.grad`` to its per-example gradients summed with ``factors``."""
        factors = factors.to(self.g.dtype)
        if self.kept is not None:
            self.layer.weight.grad = (factors @ self.kept.view(factors.shape[0], -1)).view_as(
                self.layer.weight)
        elif self.layer.weight.requires_grad:
            self.layer.weight.grad = (self.g * factors[self.owner].view(-1, 1)).T @ self.a
        if self.kept_bias is not None:
            self.layer.bias.grad = factors @ self.kept_bias
