import pytest
import torch
from opacus import GradSampleModule

from skdpgraph.nn import DenseSubgraphGNN, normalize_dense_adjacency

CONFIGS = [
    dict(conv="gcn", num_layers=2),
    dict(conv="sage", num_layers=2),
    dict(conv="mean", encoder_layers=1, residual=True, activation="tanh"),
]


def _random_batch(batch=6, size=4, features=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    adj = (torch.rand(batch, size, size, generator=g) < 0.5).float()
    adj = ((adj + adj.transpose(1, 2)) > 0).float() * (1 - torch.eye(size))
    mask = torch.ones(batch, size)
    mask[0, -1] = 0  # one padded slot
    adj[0, -1, :] = 0
    adj[0, :, -1] = 0
    return torch.randn(batch, size, features, generator=g), adj, mask


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c["conv"])
def test_opacus_gradients_are_per_subgraph(config):
    """Opacus' per-sample gradients equal gradients of each subgraph computed alone."""
    torch.manual_seed(0)
    model = DenseSubgraphGNN(5, 8, 3, **config)
    x, adj, mask = _random_batch()
    y = torch.randint(0, 3, (x.shape[0],))
    wrapped = GradSampleModule(model, loss_reduction="sum")
    torch.nn.functional.cross_entropy(wrapped(x, adj, mask), y, reduction="sum").backward()
    per_sample = [p.grad_sample.clone() for p in model.parameters()]
    wrapped._close()
    for b in range(x.shape[0]):
        model.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x[b:b + 1], adj[b:b + 1], mask[b:b + 1]),
                                                 y[b:b + 1], reduction="sum")
        loss.backward()
        for param, sample in zip(model.parameters(), per_sample):
            torch.testing.assert_close(param.grad, sample[b], atol=1e-5, rtol=1e-4)


def test_padding_does_not_change_the_root_prediction():
    torch.manual_seed(0)
    model = DenseSubgraphGNN(5, 8, 3, conv="gcn", num_layers=2).eval()
    x, adj, mask = _random_batch(batch=1)
    padded_x = torch.cat([x, torch.randn(1, 3, 5)], dim=1)
    padded_adj = torch.zeros(1, 7, 7)
    padded_adj[:, :4, :4] = adj
    padded_mask = torch.cat([mask, torch.zeros(1, 3)], dim=1)
    torch.testing.assert_close(model(x, adj, mask), model(padded_x, padded_adj, padded_mask))


def test_normalisations():
    adj = torch.tensor([[[0.0, 1, 1], [1, 0, 0], [1, 0, 0]]])
    mask = torch.ones(1, 3)
    mean = normalize_dense_adjacency(adj, "mean", mask)
    torch.testing.assert_close(mean.sum(-1), torch.ones(1, 3))
    assert mean[0, 0, 0] == pytest.approx(1 / 3)
    sage = normalize_dense_adjacency(adj, "sage", mask)
    assert sage[0, 0, 0] == 0 and sage[0, 0, 1] == pytest.approx(0.5)
    gcn = normalize_dense_adjacency(adj, "gcn", mask)
    assert gcn[0, 0, 1] == pytest.approx(1 / (3 ** 0.5 * 2 ** 0.5))
    with pytest.raises(ValueError, match="Unknown convolution 'gat'"):
        normalize_dense_adjacency(adj, "gat", mask)
