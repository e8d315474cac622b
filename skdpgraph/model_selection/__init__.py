"""Privacy-aware model selection: scoring, budget-aware refit, and the cost of a search.

A hyperparameter search trains many models on the same private data. The scorers and the
refit here select within a per-fit budget; :func:`composition_cost`,
:func:`repeat_and_select_cost` and :func:`search_cost` bound what the search as a whole
spent, and :class:`PrivateRandomSearch` runs a random number of candidates so that the
tighter Papernot--Steinke bound applies.
"""

from skdpgraph.model_selection._cost import (
    PrivacyCost,
    composition_cost,
    repeat_and_select_cost,
)
from skdpgraph.model_selection._random_search import (
    PrivateRandomSearch,
    draw_repetitions,
    truncated_negative_binomial_gamma,
)
from skdpgraph.model_selection._scoring import (
    neg_delta_spent,
    neg_epsilon_spent,
    privacy_scoring,
    refit_within_budget,
)
from skdpgraph.model_selection._spent import privacy_spent, search_cost

__all__ = [
    "PrivacyCost",
    "PrivateRandomSearch",
    "composition_cost",
    "draw_repetitions",
    "neg_delta_spent",
    "neg_epsilon_spent",
    "privacy_scoring",
    "privacy_spent",
    "refit_within_budget",
    "repeat_and_select_cost",
    "search_cost",
    "truncated_negative_binomial_gamma",
]
