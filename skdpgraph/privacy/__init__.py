"""Privacy accounting, calibration and mechanisms: the one accounting layer."""

from skdpgraph.privacy._accountant import (
    ADD_OR_REMOVE,
    DEFAULT_ORDERS,
    FINE_ORDERS,
    REPLACE_ONE,
    compute_epsilon,
    composed_event,
    compute_rdp,
    epsilon_from_rdp,
    gaussian_event,
    poisson_dpsgd_event,
    relation_of,
    repeat_and_select_event,
    repeat_and_select_rdp,
    without_replacement_dpsgd_event,
)
from skdpgraph.privacy._calibration import (
    MAX_NOISE_MULTIPLIER,
    PrivacyBudgetError,
    calibrate_noise_multiplier,
)
from skdpgraph.privacy._aggregation import (
    gap_node_event,
    noisy_sum_aggregation,
    pma_sensitivity,
    private_multi_hop_aggregation,
    row_normalize,
    sum_in_neighbours,
)
from skdpgraph.privacy._fdp import FDP_RELATION, FDPPlan, compute_rdp_fdp, fdp_relation, plan_fdp
from skdpgraph.privacy._fdp_inference import (NeighbourSums, inference_release_epsilon,
                                              inference_sensitivity, release_neighbour_sums)
from skdpgraph.privacy._gaussian import calibrate_gaussian_noise, gaussian_delta, gaussian_epsilon
from skdpgraph.privacy._grr import (
    grr_fs_epsilon,
    grr_fs_frequency_estimate,
    grr_fs_paper_epsilon,
    grr_fs_randomize,
    grr_fs_worst_case_log_ratio,
    grr_probabilities,
    grr_randomize,
    label_transition_matrix,
)
from skdpgraph.privacy._plan import DPSGDPlan, plan_dpsgd, steps_for_epochs
from skdpgraph.privacy._report import NON_PRIVATE_NOTE, PrivacyReport, report_from_plan
from skdpgraph.privacy._protocol import PrivacyPlan, check_plan
from skdpgraph.privacy._local import (
    LocalDPPlan, LocalRandomiser, UntilBudgetPlan, plan_local_grr, plan_until_budget,
)

__all__ = [
    "ADD_OR_REMOVE",
    "DPSGDPlan",
    "DEFAULT_ORDERS",
    "FINE_ORDERS",
    "MAX_NOISE_MULTIPLIER",
    "REPLACE_ONE",
    "PrivacyBudgetError",
    "NON_PRIVATE_NOTE",
    "PrivacyReport",
    "PrivacyPlan",
    "check_plan",
    "report_from_plan",
    "calibrate_noise_multiplier",
    "compute_epsilon",
    "compute_rdp_fdp",
    "grr_fs_epsilon",
    "grr_fs_frequency_estimate",
    "grr_fs_paper_epsilon",
    "grr_fs_randomize",
    "grr_fs_worst_case_log_ratio",
    "grr_probabilities",
    "grr_randomize",
    "label_transition_matrix",
    "plan_dpsgd",
    "steps_for_epochs",
    "compute_rdp",
    "epsilon_from_rdp",
    "gaussian_event",
    "poisson_dpsgd_event",
    "without_replacement_dpsgd_event",
    "composed_event",
    "relation_of",
    "repeat_and_select_event",
    "repeat_and_select_rdp",
]
__all__ += ["calibrate_gaussian_noise", "gap_node_event", "noisy_sum_aggregation",
            "gaussian_delta", "gaussian_epsilon", "pma_sensitivity", "private_multi_hop_aggregation", "row_normalize",
            "sum_in_neighbours"]
__all__ += ["LocalDPPlan", "LocalRandomiser",
            "UntilBudgetPlan", "plan_local_grr", "plan_until_budget"]
__all__ += ["FDP_RELATION", "FDPPlan", "fdp_relation", "plan_fdp", "NeighbourSums",
            "inference_release_epsilon", "inference_sensitivity", "release_neighbour_sums"]
from skdpgraph.privacy._gap_plan import GAPPlan, plan_gap  # noqa: E402
__all__ += ["GAPPlan", "plan_gap"]
