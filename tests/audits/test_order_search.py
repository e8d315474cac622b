"""The order search against the whole grid on 1260 plans (marker ``audit``, about a minute).

Run with ``python -m pytest -q -m audit tests/audits/test_order_search.py``. Every plan's
epsilon from :func:`~skdpgraph.privacy._orders.search_epsilon` must equal the minimum over
all of ``DEFAULT_ORDERS`` of dp-accounting's curve, converted by ``epsilon_from_rdp``;
the fast subset is ``tests/privacy/test_orders.py``.
"""

import itertools

import pytest

from skdpgraph.privacy import (REPLACE_ONE, compute_rdp, epsilon_from_rdp, poisson_dpsgd_event,
                               without_replacement_dpsgd_event)
from skdpgraph.privacy._orders import LazyRdpCurve, search_epsilon

RATES = (0.001, 0.01, 0.05, 0.2, 0.5, 0.9, 1.0)
MULTIPLIERS = (0.4, 0.6, 0.8, 1.0, 1.5, 2.0, 4.0, 10.0, 50.0)


@pytest.mark.audit
@pytest.mark.parametrize("sampling", ["poisson", "without_replacement"])
def test_search_equals_the_whole_grid_on_many_plans(sampling):
    mismatches = []
    for q, sigma in itertools.product(RATES, MULTIPLIERS):
        if sampling == "poisson":
            event, relation = poisson_dpsgd_event(sigma, q, 1), None
        else:
            event = without_replacement_dpsgd_event(sigma, 10_000, max(1, int(q * 10_000)), 1)
            relation = REPLACE_ONE
        kwargs = {} if relation is None else {"relation": relation}
        full = compute_rdp(event, **kwargs)
        curve = LazyRdpCurve(event, **kwargs)
        for steps, delta in itertools.product((1, 10, 100, 1000, 10_000), (1e-5, 1e-8)):
            expected = epsilon_from_rdp(steps * full, delta)
            got = search_epsilon(lambda i: steps * curve.at(i), delta)
            assert got >= expected
            if got != expected:
                mismatches.append((q, sigma, steps, delta, got, expected))
    assert mismatches == []
