"""Privacy-aware model selection: scoring, budget-aware refit, and the cost of a search.

A hyperparameter search trains many models on the same private data. The scorers and the
budget-aware refit here select within a per-fit budget (:class:`BudgetedSearchCV` plans the
refit on all data before making it; :func:`planned_privacy` gives any fit's guarantee before
it is made); :func:`composition_cost`,
:func:`repeat_and_select_cost` and :func:`search_cost` bound what the search as a whole
spent, and :class:`PrivateRandomSearch` runs a random number of candidates so that the
tighter Papernot--Steinke bound applies.
"""

from skdpgraph._lazy import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "_budgeted_search": ["BudgetedSearchCV"],
    "_cost": ["PrivacyCost", "composition_cost", "repeat_and_select_cost"],
    "_planned": ["planned_privacy"],
    "_random_search": ["PrivateRandomSearch", "draw_repetitions",
                       "truncated_negative_binomial_gamma"],
    "_scoring": ["neg_delta_spent", "neg_epsilon_spent", "privacy_scoring", "refit_within_budget"],
    "_contained": ["labels_public", "privacy_spent"],
    "_spent": ["search_cost"],
})
