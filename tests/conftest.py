"""Fixtures shared by test directories."""

import pytest


@pytest.fixture
def counted_orders(monkeypatch):
    """Every RDP order the lazy curves ask dp-accounting to compute, in order."""
    import skdpgraph.privacy._rdp_orders as orders_module
    from skdpgraph.privacy._accountant import compute_rdp

    asked = []

    def counting(event, **kwargs):
        asked.extend(kwargs["orders"])
        return compute_rdp(event, **kwargs)

    monkeypatch.setattr(orders_module, "compute_rdp", counting)
    return asked
