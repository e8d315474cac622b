"""Privacy accounting, calibration and mechanisms: the one accounting layer.

Its modules, by what they hold:

- **Accounting** (pure functions of public quantities, the only users of dp-accounting):
  ``_accountant`` (dp events, RDP curves, epsilon), ``_rdp_orders`` (epsilon from a few
  RDP orders), ``_gaussian_accounting`` (exact Gaussian mechanism), ``_calibration``
  (noise calibration that fails closed), ``_composition`` (several releases composed),
  ``_gap_accounting`` (GAP's stages and events).
- **Mechanisms** (what adds the noise): ``_pma`` (GAP's aggregation release), ``_grr``
  (randomised response), ``_neighbour_sums`` (FDP's inference release),
  ``_vote_release`` (the Laplace release of neighbour class votes, with its plan).
- **Plans** (one per mechanism family, behind one protocol): ``_plan_protocol``,
  ``_dpsgd_plan``, ``_fdp_plan``, ``_gap_plan``, ``_local_plans``.
- **Records**: ``_report`` (the fitted ``privacy_``), ``_gap_statements`` (GAP's report
  text), ``_ledger`` (spends counted across fits).
"""

from skdpgraph._lazy import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "_accountant": ["ADD_OR_REMOVE", "DEFAULT_ORDERS", "FINE_ORDERS", "REPLACE_ONE",
                    "compute_epsilon", "composed_event", "compute_rdp", "epsilon_from_rdp",
                    "gaussian_event", "laplace_event", "poisson_dpsgd_event", "pure_epsilon",
                    "relation_of",
                    "repeat_and_select_event", "repeat_and_select_rdp",
                    "without_replacement_dpsgd_event"],
    "_composition": ["PrivacyCost", "Spend", "compose_spends", "release_event"],
    "_calibration": ["MAX_NOISE_MULTIPLIER", "PrivacyBudgetError", "calibrate_noise_multiplier"],
    "_fdp_plan": ["FDP_RELATION", "FDPPlan", "compute_rdp_fdp", "fdp_relation", "plan_fdp"],
    "_neighbour_sums": ["NeighbourSums", "inference_release_epsilon", "inference_sensitivity",
                        "release_neighbour_sums"],
    "_gap_accounting": ["GAPLayout", "GAPStage", "VOTE_ENCODER_SHARE", "gap_node_event",
                        "pma_sensitivity", "progressive_stages", "trained_head_stages",
                        "vote_head_stages"],
    "_gap_plan": ["GAPPlan", "plan_gap"],
    "_gap_statements": ["STATED_IN_DEGREES"],
    "_gaussian_accounting": ["calibrate_gaussian_noise", "gaussian_delta", "gaussian_epsilon"],
    "_grr": ["grr_fs_epsilon", "grr_fs_estimate_columns", "grr_fs_frequency_estimate",
             "grr_fs_paper_epsilon",
             "grr_fs_randomize", "grr_fs_worst_case_log_ratio", "grr_probabilities",
             "grr_randomize", "label_transition_matrix"],
    "_ledger": ["LedgerEntry", "PrivacyLedger", "Reservation", "process_ledger",
                "reserve_spend"],
    "_vote_release": ["NeighbourVotePlan", "neighbour_vote_sums", "plan_neighbour_votes",
                      "release_neighbour_votes", "vote_weights"],
    "_local_plans": ["LocalDPPlan", "LocalRandomiser", "UntilBudgetPlan", "plan_local_grr",
                     "plan_until_budget", "split_local_budget"],
    "_rdp_orders": ["OrderHint"],
    "_dpsgd_plan": ["DPSGDPlan", "plan_dpsgd", "steps_for_epochs"],
    "_pma": ["PMARelease", "noisy_neighbour_votes", "noisy_sum_aggregation",
             "private_multi_hop_aggregation", "row_normalize", "sum_in_neighbours"],
    "_plan_protocol": ["PrivacyPlan", "check_plan"],
    "_report": ["NON_PRIVATE_NOTE", "PrivacyReport", "report_from_plan", "spend_of_report"],
})
