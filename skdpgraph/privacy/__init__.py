"""Privacy accounting, calibration and mechanisms: the one accounting layer."""

from skdpgraph._lazy import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "_accountant": ["ADD_OR_REMOVE", "DEFAULT_ORDERS", "FINE_ORDERS", "REPLACE_ONE",
                    "compute_epsilon", "composed_event", "compute_rdp", "epsilon_from_rdp",
                    "gaussian_event", "poisson_dpsgd_event", "relation_of",
                    "repeat_and_select_event", "repeat_and_select_rdp",
                    "without_replacement_dpsgd_event"],
    "_aggregation": ["gap_node_event", "noisy_neighbour_votes", "noisy_sum_aggregation",
                     "pma_sensitivity",
                     "private_multi_hop_aggregation", "row_normalize", "sum_in_neighbours"],
    "_composition": ["PrivacyCost", "Spend", "compose_spends", "release_event"],
    "_calibration": ["MAX_NOISE_MULTIPLIER", "PrivacyBudgetError", "calibrate_noise_multiplier"],
    "_fdp": ["FDP_RELATION", "FDPPlan", "compute_rdp_fdp", "fdp_relation", "plan_fdp"],
    "_fdp_inference": ["NeighbourSums", "inference_release_epsilon", "inference_sensitivity",
                       "release_neighbour_sums"],
    "_gap_plan": ["GAPPlan", "plan_gap"],
    "_gaussian": ["calibrate_gaussian_noise", "gaussian_delta", "gaussian_epsilon"],
    "_grr": ["grr_fs_epsilon", "grr_fs_estimate_columns", "grr_fs_frequency_estimate",
             "grr_fs_paper_epsilon",
             "grr_fs_randomize", "grr_fs_worst_case_log_ratio", "grr_probabilities",
             "grr_randomize", "label_transition_matrix"],
    "_ledger": ["LedgerEntry", "PrivacyLedger", "Reservation", "process_ledger",
                "reserve_spend"],
    "_local": ["LocalDPPlan", "LocalRandomiser", "UntilBudgetPlan", "plan_local_grr",
               "plan_until_budget", "split_local_budget"],
    "_orders": ["OrderHint"],
    "_plan": ["DPSGDPlan", "plan_dpsgd", "steps_for_epochs"],
    "_protocol": ["PrivacyPlan", "check_plan"],
    "_report": ["NON_PRIVATE_NOTE", "PrivacyReport", "report_from_plan", "spend_of_report"],
})
