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
        row_owner = {layer: owner.repeat(a.shape[0] // owner.shape[0])
                     for layer, (a, _) in layers.items() if layer in self._row_layers}
        layouts = {calls.shape[0]: _RowLayout(calls, batch) for calls in row_owner.values()}
        squared = None
        for layer, (a, g) in layers.items():
            term = (_row_squared_norms(layer, a, g, layouts[a.shape[0]], batch)
                    if layer in row_owner else _squared_norms(layer, a, g))
            squared = term if squared is None else squared.add_(term)
        if squared is None:  # no layer reached the loss
            squared = losses.new_zeros(batch)
        factors = squared.sqrt_().add_(1e-6).reciprocal_().mul_(self.max_grad_norm).clamp_(
            max=1.0)
        # Each op costs microseconds of dispatch whatever its size, which on small layers
        # is most of the step: 2-D calls (no positions) skip the reshapes and conversions.
        column = factors.view(-1, 1)
        for layer, (a, g) in layers.items():
            if layer in row_owner:
                g2, a2 = g * factors[row_owner[layer]].to(g.dtype).view(-1, 1), a.to(g.dtype)
            elif g.dim() == 2 and g.dtype == factors.dtype == a.dtype:
                g2, a2 = g * column, a
            else:
                g = g * factors.to(g.dtype).view(-1, *([1] * (g.dim() - 1)))
                g2, a2 = g.reshape(-1, g.shape[-1]), a.reshape(-1, a.shape[-1]).to(g.dtype)
            if layer.weight.requires_grad:
                layer.weight.grad = g2.T @ a2
            if layer.bias is not None and layer.bias.requires_grad:
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


def _squared_norms(layer: nn.Linear, a: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    """Each example's squared gradient norm over ``layer``'s trainable parameters.

    ``a``: ``(batch, in)`` or ``(batch, ..., in)``, ``g`` likewise with ``out``. For the
    weight, with one position the norm factorises (``|a| |g|``); with more, the cheaper of
    the Gram-matrix form ``sum_{t,s} (a_t . a_s)(g_t . g_s)`` and the explicit per-example
    gradient.
    """
    weight, bias = layer.weight.requires_grad, layer.bias is not None and layer.bias.requires_grad
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


#: Size classes of examples padded together when a row layer's norms are computed.
_SIZE_CLASSES = 4


class _RowLayout:
    """Where each row of a row layer goes when its examples are padded in size classes.

    The examples are sorted by row count and cut into :data:`_SIZE_CLASSES` classes; class
    ``k`` is a block of ``(examples_k, width_k)`` slots of one flat buffer, ``width_k`` its
    largest row count, so that padding stays small when sizes vary (graphs of 10 to 100
    nodes). Built once per batch, it serves every row layer.
    """

    def __init__(self, owner: torch.Tensor, batch: int) -> None:
        sizes = torch.bincount(owner, minlength=batch)
        by_size = torch.argsort(sizes)
        self.classes: list[tuple[torch.Tensor, int, int]] = []
        slot_start = torch.zeros(batch, dtype=torch.long, device=owner.device)
        offset = 0
        for group in by_size.tensor_split(_SIZE_CLASSES):
            width = int(sizes[group].max()) if group.numel() else 0
            if width == 0:
                continue
            slot_start[group] = offset + width * torch.arange(group.numel(), device=owner.device)
            self.classes.append((group, width, offset))
            offset += width * group.numel()
        rank = torch.argsort(owner, stable=True)
        position = torch.empty_like(rank)
        position[rank] = torch.arange(owner.shape[0], device=owner.device) - (
            sizes.cumsum(0) - sizes)[owner[rank]]
        # Each slot's row, or the zero row appended after the last row for padding.
        self.source = torch.full((offset,), owner.shape[0], dtype=torch.long,
                                 device=owner.device)
        self.source[slot_start[owner] + position] = torch.arange(owner.shape[0],
                                                                 device=owner.device)

    def padded(self, rows: torch.Tensor) -> torch.Tensor:
        """``rows`` (one per row of the layout) placed in the flat padded buffer."""
        # embedding() is index_select by another name, several times faster on the CPU.
        return nn.functional.embedding(self.source,
                                       torch.cat([rows, rows.new_zeros(1, rows.shape[1])]))


def _row_squared_norms(layer: nn.Linear, a: torch.Tensor, g: torch.Tensor, layout: _RowLayout,
                       batch: int) -> torch.Tensor:
    """Each example's squared gradient norm over a row layer, whose rows belong to examples.

    ``a``: ``(rows, in)``, ``g``: ``(rows, out)``, laid out by ``layout`` as ``(examples,
    positions, features)`` blocks for :func:`_squared_norms`.
    """
    padded_a, padded_g = layout.padded(a.to(g.dtype)), layout.padded(g)
    squared = g.new_zeros(batch)
    for group, width, offset in layout.classes:
        end = offset + width * group.numel()
        squared[group] = _squared_norms(
            layer, padded_a[offset:end].view(group.numel(), width, -1),
            padded_g[offset:end].view(group.numel(), width, -1))
    return squared
