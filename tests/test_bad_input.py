"""The bad-input matrix: every estimator against malformed data, graphs and parameters.

Each case either works and gives sane output (a fitted estimator with ``epsilon_spent_``
within the budget, finite probabilities that sum to one, predictions in ``classes_``) or
raises an error whose message names the input or parameter, the rule and the value. A fit
that raises leaves the estimator unfitted; a predict that raises leaves it fitted and
usable; no case changes the caller's arrays or the estimator's parameters. Training that
diverges raises during ``fit``: a fitted estimator never answers with non-finite
probabilities.

Graph-level estimators, whose examples are whole graphs, run their own rows on graph
collections (empty collections, graphs without nodes or edges, differing feature widths,
missing labels, duplicate graphs, text features).

Test ids read ``{estimator}-{case}``. ``python tests/test_bad_input.py`` prints the matrix
counts (cases, clear errors, sane acceptances, failures).
"""

from __future__ import annotations

import copy
import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from skdpgraph import (DPGraphClassifier, DPMLPClassifier, DRWClassifier, FDPClassifier,
                       GAPClassifier, Graph, RGNNClassifier)
from skdpgraph.datasets import make_csbm, make_graph_classification
from skdpgraph.privacy import PrivacyBudgetError

# ---------------------------------------------------------------- estimators
#: Tiny configurations (full batches: the accountant's q = 1 path is fast; DRW and the
#: DP-SGD baselines with a given noise multiplier skip calibration).
ESTIMATORS: dict[str, Callable[[], Any]] = {
    "DPMLP": lambda: DPMLPClassifier(epsilon=8.0, epochs=2, batch_size=64, hidden_dim=8,
                                     noise_multiplier=1.0, random_state=0, device="cpu"),
    "GAP-edge": lambda: GAPClassifier(epsilon=8.0, epochs=2, encoder_epochs=2, hidden_dim=8,
                                      random_state=0, device="cpu"),
    "GAP-node": lambda: GAPClassifier(epsilon=8.0, unit="node", epochs=2,
                                      encoder_epochs=2, batch_size=64, max_degree=3,
                                      hidden_dim=8, random_state=0, device="cpu"),
    "DRW": lambda: DRWClassifier(epsilon=8.0, epochs=2, batch_size=64, hidden_dim=8,
                                 walk_length=2, noise_multiplier=1.0, random_state=0,
                                 device="cpu"),
    "FDP": lambda: FDPClassifier(epsilon=8.0, epochs=2, batch_size=64, hidden_dim=8,
                                 max_degree=2, noise_multiplier=1.0, random_state=0, device="cpu"),
    "FDP-private_inference": lambda: FDPClassifier(
        epsilon=8.0, epochs=2, batch_size=64, hidden_dim=8, max_degree=2, noise_multiplier=2.0,
        private_inference=True, random_state=0, device="cpu"),
    "RGNN": lambda: RGNNClassifier(num_sampled_features=2, epochs=2, feature_hops=1, label_hops=1,
                                   num_clusters=2, hidden_dim=8, feature_type="continuous",
                                   random_state=0, device="cpu"),
}


def _has(key: str, parameter: str) -> bool:
    return parameter in ESTIMATORS[key]().get_params()


def _name(key: str) -> str:
    return type(ESTIMATORS[key]()).__name__


# ---------------------------------------------------------------- shared data
DATA = make_csbm(n_nodes=40, n_classes=3, n_features=4, avg_degree=4, random_state=0)
N_TRAIN = 30


def _x() -> np.ndarray:
    """The features as the caller's own (writable, float64) array."""
    return DATA.graph.features().astype(np.float64)


def _y() -> np.ndarray:
    return np.array(DATA.y, dtype=np.int64)


def _edges() -> np.ndarray:
    return np.array(DATA.graph.edge_index)


def _train_nodes():
    return DATA.graph.nodes()[:N_TRAIN]


# ---------------------------------------------------------------- scenarios
@dataclass
class Expect:
    """``ok``: sane output accepted; ``error``: ``(type, regex)`` accepted; both: either."""

    ok: bool = False
    error: tuple[type, str] | None = None


OK = Expect(ok=True)


def raises(error: type, pattern: str) -> Expect:
    return Expect(error=(error, pattern))


@dataclass
class Scenario:
    """What one case does.

    ``fit``: ``(X, y)`` (either may be a zero-argument callable, built inside the run, so
    that a graph that cannot be built fails there), or None to start from a fitted copy.
    ``params`` are set first; ``refit`` is a second fit after a successful one; ``query``
    is predicted on (default: the training nodes); ``score_y`` scores ``query``.
    ``inputs`` are the caller's arrays that must come back unchanged (those in ``fit``,
    ``refit``, ``query``, ``score_y`` and ``params`` are added automatically).
    """

    expect: Expect
    fit: tuple | None = None
    params: dict = field(default_factory=dict)
    refit: tuple | None = None
    refit_params: dict = field(default_factory=dict)
    query: Any = None
    score_y: Any = None
    inputs: list = field(default_factory=list)
    patch: Callable[[Any], None] | None = None


CASES: dict[str, Callable[[str], Scenario]] = {}
#: The parameter a case needs; it runs only on the estimators that have it.
NEEDS: dict[str, str] = {}


def case(name: str, needs: str | None = None):
    def register(function):
        CASES[name] = function
        if needs is not None:
            NEEDS[name] = needs
        return function
    return register


def _applies(key: str, name: str) -> bool:
    return name not in NEEDS or _has(key, NEEDS[name])


def _param_case(key: str, parameter: str, value: Any, expect: Expect, **extra) -> Scenario:
    """Fit the training nodes with ``parameter=value`` (and ``extra``)."""
    return Scenario(expect, fit=(_train_nodes(), _y()[:N_TRAIN]),
                    params={parameter: value, **extra})


def _invalid(key: str, parameter: str, rule: str, shown: str) -> Expect:
    """sklearn's parameter validation message: parameter, rule and value."""
    return raises(ValueError, rf"The '{parameter}' parameter of {_name(key)} must be "
                              rf"{rule}.*Got {shown} instead")


# ---- features
def _with(value: Any, row: int = 3, column: int = 1) -> np.ndarray:
    x = _x()
    x[row, column] = value
    return x


@case("features_nan")
def _(key):
    return Scenario(raises(ValueError, r"Input X contains NaN"), fit=(_with(np.nan), _y()))


@case("features_inf")
def _(key):
    return Scenario(raises(ValueError, r"Input X contains infinity"), fit=(_with(np.inf), _y()))


@case("graph_features_nan")
def _(key):
    x = _with(np.nan)
    return Scenario(raises(ValueError, r"Graph: x contains NaN or infinite values \(first in "
                                       r"row 3\)"),
                    fit=(lambda: Graph(_edges(), x).nodes(), _y()), inputs=[x])


@case("features_1e30")
def _(key):
    """Finite but huge: either trained sanely or stopped in fit with the cause named."""
    x = _with(1e30)
    return Scenario(Expect(ok=True, error=(FloatingPointError,
                                           r"training diverged: .*non-finite.*scale the features")),
                    fit=(lambda: Graph(_edges(), x).nodes()[:N_TRAIN], _y()[:N_TRAIN]),
                    inputs=[x])


@case("features_beyond_float32")
def _(key):
    return Scenario(raises(ValueError, r"x has values beyond the float32 range.*1e\+39.*row 3"),
                    fit=(_with(1e39), _y()))


@case("features_strings")
def _(key):
    x = np.array([["a", "b", "c", "d"]] * 40)
    return Scenario(raises(ValueError, r"X .*strings.*'a'.*numeric"), fit=(x, _y()))


@case("features_object_strings")
def _(key):
    x = _x().astype(object)
    x[5, 2] = "high"
    return Scenario(raises(ValueError, r"X .*strings.*'high'.*numeric"), fit=(x, _y()))


@case("graph_features_strings")
def _(key):
    x = _x().astype(object)
    x[5, 2] = "high"
    return Scenario(raises(ValueError, r"Graph: x must hold numbers.*'high'"),
                    fit=(lambda: Graph(_edges(), x).nodes(), _y()), inputs=[x])


@case("features_complex")
def _(key):
    return Scenario(raises(ValueError, r"Complex data not supported"),
                    fit=(_x() + 1j, _y()))


@case("zero_feature_columns")
def _(key):
    return Scenario(raises(ValueError, r"0 feature\(s\) \(shape=\(40, 0\)\) while a minimum of "
                                       r"1 is required"), fit=(_x()[:, :0], _y()))


@case("graph_zero_feature_columns")
def _(key):
    x = _x()[:, :0]
    return Scenario(raises(ValueError, r"X has 0 feature columns \(shape \(40, 0\)\); at least 1"),
                    fit=(lambda: Graph(_edges(), x).nodes(), _y()), inputs=[x])


@case("X_3d")
def _(key):
    return Scenario(raises(ValueError, r"Found array with dim 3.*dim <= 2 is required"),
                    fit=(_x().reshape(40, 2, 2), _y()))


@case("X_1d")
def _(key):
    return Scenario(raises(ValueError, r"Expected 2D array, got 1D array"),
                    fit=(_x()[:, 0], _y()))


@case("X_empty")
def _(key):
    return Scenario(raises(ValueError, r"Found array with 0 sample\(s\) \(shape=\(0, 4\)\)"),
                    fit=(_x()[:0], _y()[:0]))


@case("nodes_empty")
def _(key):
    return Scenario(raises(ValueError, r"fit got 0 nodes; at least 2"),
                    fit=(DATA.graph.nodes([]), _y()[:0]))


@case("one_node")
def _(key):
    return Scenario(raises(ValueError, r"at least 2 classes.*only one class: 0\.$"),
                    fit=(DATA.graph.nodes([int(np.flatnonzero(DATA.y == 0)[0])]), [0]))


@case("two_nodes")
def _(key):
    pair = [int(np.flatnonzero(DATA.y == c)[0]) for c in (0, 1)]
    return Scenario(OK, fit=(DATA.graph.nodes(pair), [0, 1]))


@case("duplicate_nodes")
def _(key):
    index = np.r_[np.arange(N_TRAIN), [4]]
    expect = OK if key == "GAP-edge" else raises(
        ValueError, r"X lists 1 node\(s\) more than once \(e\.g\. node 4, 2 times\)")
    return Scenario(expect, fit=(DATA.graph.nodes(index), _y()[index]), inputs=[index])


@case("X_none")
def _(key):
    return Scenario(raises(ValueError, r"Expected 2D array, got scalar array instead:\s*"
                                       r"array=None"), fit=(None, _y()))


@case("X_object_numbers")
def _(key):
    return Scenario(OK, fit=(_x().astype(object), _y()))


@case("X_torch_tensor")
def _(key):
    return Scenario(OK, fit=(torch.tensor(_x()), _y()))


@case("X_dataframe")
def _(key):
    pandas = pytest.importorskip("pandas")
    return Scenario(OK, fit=(pandas.DataFrame(_x(), columns=list("abcd")), _y()),
                    query=pandas.DataFrame(_x()[:5], columns=list("abcd")))


@case("predict_dataframe_renamed_columns")
def _(key):
    pandas = pytest.importorskip("pandas")
    return Scenario(raises(ValueError, r"feature names should match.*Feature names unseen at fit "
                                       r"time:\s*- z"),
                    fit=(pandas.DataFrame(_x(), columns=list("abcd")), _y()),
                    query=pandas.DataFrame(_x()[:5], columns=list("abcz")))


@case("graph_as_X")
def _(key):
    x, edges = _x(), _edges()
    return Scenario(OK, fit=(lambda: Graph(edges, x), _y()), inputs=[x, edges])


@case("sparse_X")
def _(key):
    return Scenario(OK, fit=(sp.csr_matrix(_x()), _y()))


@case("list_X_int_features")
def _(key):
    return Scenario(OK, fit=(np.rint(_x()).astype(int).tolist(), _y().tolist()))


@case("read_only_X")
def _(key):
    x, y = _x(), _y()
    x.setflags(write=False)
    y.setflags(write=False)
    return Scenario(OK, fit=(x, y))


# ---- labels
@case("labels_nan")
def _(key):
    y = _y().astype(float)
    y[7] = np.nan
    return Scenario(raises(ValueError, r"y contains NaN"), fit=(_x(), y))


@case("labels_mixed_types")
def _(key):
    y = _y().astype(object)
    y[7] = "two"
    return Scenario(raises(ValueError, r"y mixes label types.*(int|str).*'two'"), fit=(_x(), y))


@case("labels_mixed_types_string_first")
def _(key):
    y = _y().astype(object)
    y[0] = "zero"
    return Scenario(raises(ValueError, r"y mixes label types.*'zero'"), fit=(_x(), y))


@case("labels_none")
def _(key):
    y = _y().astype(object)
    y[3] = None
    return Scenario(raises(ValueError, r"y contains NaN or None labels in 1 row\(s\) \(3\)"),
                    fit=(_x(), y))


@case("labels_one_class")
def _(key):
    return Scenario(raises(ValueError, r"at least 2 classes.*only one class: 1\.$"),
                    fit=(_x(), np.ones(40, dtype=int)))


@case("labels_continuous")
def _(key):
    return Scenario(raises(ValueError, r"Unknown label type: continuous"),
                    fit=(_x(), np.linspace(0, 1, 40)))


@case("labels_wrong_length")
def _(key):
    return Scenario(raises(ValueError, r"inconsistent numbers of samples: \[40, 39\]"),
                    fit=(_x(), _y()[:39]))


@case("labels_2d")
def _(key):
    return Scenario(raises(ValueError, r"y should be a 1d array, got an array of shape \(40, 2\)"),
                    fit=(_x(), np.c_[_y(), _y()]))


@case("labels_strings")
def _(key):
    names = np.array(["ant", "bee", "cat"])
    return Scenario(OK, fit=(_train_nodes(), names[_y()[:N_TRAIN]]))


@case("labels_outside_classes")
def _(key):
    return Scenario(raises(ValueError, r"y has labels outside classes=\[0, 1\]: \[2\]"),
                    fit=(_train_nodes(), _y()[:N_TRAIN]), params={"classes": np.array([0, 1])})


@case("classes_not_distinct")
def _(key):
    return Scenario(raises(ValueError, r"classes must be a 1-D list of distinct labels; got "
                                       r"\[0, 0, 1, 2\]"),
                    fit=(_train_nodes(), _y()[:N_TRAIN]), params={"classes": [0, 0, 1, 2]})


@case("labels_object_ints")
def _(key):
    return Scenario(OK, fit=(_train_nodes(), _y()[:N_TRAIN].astype(object)))


@case("labels_bool")
def _(key):
    return Scenario(OK, fit=(_train_nodes(), _y()[:N_TRAIN] == 0))


@case("labels_minus_one_plus_one")
def _(key):
    return Scenario(OK, fit=(_train_nodes(), np.where(_y()[:N_TRAIN] == 0, -1, 1)))


@case("labels_column_vector")
def _(key):
    return Scenario(OK, fit=(_train_nodes(), _y()[:N_TRAIN, None]))


@case("labels_every_node_its_own_class")
def _(key):
    return Scenario(OK, fit=(_train_nodes(), np.arange(N_TRAIN)))


@case("classes_superset")
def _(key):
    return Scenario(OK, fit=(_train_nodes(), _y()[:N_TRAIN]), params={"classes": [0, 1, 2, 3]})


@case("classes_other_type")
def _(key):
    return Scenario(raises(ValueError, r"y has labels outside classes=\['a', 'b', 'c'\]: "
                                       r"\[0, 1, 2\]"),
                    fit=(_train_nodes(), _y()[:N_TRAIN]), params={"classes": ["a", "b", "c"]})


@case("y_none")
def _(key):
    return Scenario(raises(ValueError, r"requires y to be passed, but the target y is None"),
                    fit=(_train_nodes(), None))


@case("score_unseen_labels")
def _(key):
    y = _y()[N_TRAIN:].copy()
    y[0] = 7
    return Scenario(raises(ValueError, r"score: y has labels never seen in fit: \[7\]"),
                    query=DATA.graph.nodes()[N_TRAIN:], score_y=y)


# ---- graphs
def _graph_case(edges: Any, pattern: str) -> Scenario:
    x = _x()
    return Scenario(raises(ValueError, pattern),
                    fit=(lambda: Graph(edges, x).nodes()[:N_TRAIN], _y()[:N_TRAIN]),
                    inputs=[edges, x])


@case("edges_negative")
def _(key):
    return _graph_case(np.array([[0, -1], [1, 2]]),
                       r"edge_index has node id -1 but num_nodes is 40 \(valid ids are 0\.\.39\)")


@case("edges_out_of_range")
def _(key):
    return _graph_case(np.array([[0, 40], [1, 2]]),
                       r"edge_index has node id 40 but num_nodes is 40 \(valid ids are 0\.\.39\)")


@case("edges_non_integer")
def _(key):
    return _graph_case(np.array([[0.0, 1.5], [1.0, 2.0]]),
                       r"edge_index must hold integer node ids; got dtype float64 \(e\.g\. 1\.5\)")


@case("edges_strings")
def _(key):
    return _graph_case(np.array([["a", "b"], ["c", "d"]]),
                       r"edge_index must hold integer node ids; got dtype <U1 \(e\.g\. 'a'\)")


@case("edges_wrong_shape")
def _(key):
    return _graph_case(np.zeros((3, 4), dtype=int),
                       r"edge_index must have shape \(2, num_edges\); got shape \(3, 4\)")


@case("graph_num_nodes_mismatch")
def _(key):
    x = _x()
    return Scenario(raises(ValueError, r"num_nodes=50 but x has 40 rows"),
                    fit=(lambda: Graph(_edges(), x, num_nodes=50).nodes(), _y()), inputs=[x])


@case("nodes_index_out_of_range")
def _(key):
    return Scenario(raises(IndexError, r"index 99 is out of range for 40 nodes"),
                    fit=(lambda: DATA.graph.nodes([0, 99]), [0, 1]))


@case("nodes_float_index")
def _(key):
    return Scenario(raises(TypeError, r"Nodes: cannot index with dtype float64"),
                    fit=(lambda: DATA.graph.nodes([0.0, 1.5]), [0, 1]))


@case("nodes_mask_wrong_length")
def _(key):
    return Scenario(raises(ValueError, r"boolean mask has length 39 but there are 40 nodes"),
                    fit=(lambda: DATA.graph.nodes(np.ones(39, dtype=bool)), _y()[:39]))


@case("self_loops_only")
def _(key):
    loops = np.tile(np.arange(40), (2, 1))
    x = _x()
    return Scenario(OK, fit=(lambda: Graph(loops, x).nodes()[:N_TRAIN], _y()[:N_TRAIN]),
                    inputs=[loops, x])


@case("directed_graph")
def _(key):
    x, edges = _x(), _edges()
    return Scenario(OK, fit=(lambda: Graph(edges, x, directed=True).nodes()[:N_TRAIN],
                             _y()[:N_TRAIN]), inputs=[x, edges])


_STAR_LEAVES = 10_000


def _star():
    rng = np.random.default_rng(0)  # test data only
    n = _STAR_LEAVES + 1
    edges = np.vstack([np.zeros(_STAR_LEAVES, dtype=np.int64), np.arange(1, n)])
    x = rng.normal(size=(n, 4))
    y = rng.integers(0, 3, size=n)
    return edges, x, y


@case("star_degree_10000")
def _(key):
    edges, x, y = _star()
    train = np.arange(N_TRAIN)  # the hub (degree 10^4) and 29 leaves
    graph = {}

    def nodes():
        graph["g"] = Graph(edges, x)
        return graph["g"].nodes(train)

    return Scenario(OK, fit=(nodes, y[train]), inputs=[edges, x, y, train],
                    query=lambda: graph["g"].nodes([0, 1, 5000]))


# ---- parameters
@case("epsilon_zero")
def _(key):
    p = "epsilon"
    return _param_case(key, p, 0, _invalid(key, p, r"a float in the range \(0\.0, inf\]", "0"))


@case("epsilon_negative")
def _(key):
    p = "epsilon"
    return _param_case(key, p, -1.0, _invalid(key, p, r"a float in the range \(0\.0, inf\]",
                                              "-1.0"))


@case("epsilon_nan")
def _(key):
    p = "epsilon"
    return _param_case(key, p, float("nan"), _invalid(key, p, r"a float in the range", "nan"))


@case("epsilon_true")
def _(key):
    p = "epsilon"
    return _param_case(key, p, True, _invalid(key, p, r"a float in the range", "True"))


@case("epsilon_huge")
def _(key):
    """1e300 (noise calibrated where the estimator calibrates): sane, or refused by name."""
    p = "epsilon"
    extra = {"noise_multiplier": None} if _has(key, "noise_multiplier") else {}
    expect = OK
    if key == "GAP-edge":
        expect = raises(PrivacyBudgetError, r"epsilon=1e\+300 is beyond what the Gaussian "
                                            r"calibration supports \(max 1e\+12\)")
    return _param_case(key, p, 1e300, expect, **extra)


@case("epsilon_inf")
def _(key):
    extra = {"noise_multiplier": None} if _has(key, "noise_multiplier") else {}
    return _param_case(key, "epsilon", np.inf, OK, **extra)


@case("epsilon_tiny")
def _(key):
    """1e-3, noise calibrated: huge noise, but finite output within the budget."""
    extra = {"noise_multiplier": None} if _has(key, "noise_multiplier") else {}
    return _param_case(key, "epsilon", 1e-3, OK, **extra)


@case("delta_tiny", needs="delta")
def _(key):
    extra = {"noise_multiplier": None} if _has(key, "noise_multiplier") else {}
    return _param_case(key, "delta", 1e-300, OK, **extra)


@case("batch_size_huge", needs="batch_size")
def _(key):
    return _param_case(key, "batch_size", 10**12, OK)


@case("max_degree_huge", needs="max_degree")
def _(key):
    """A degree bound far above any degree: nothing sized by it is allocated."""
    return _param_case(key, "max_degree", 10**6, OK)


@case("validation_fraction_all", needs="validation_fraction")
def _(key):
    if key in ("GAP-node", "DPMLP", "DRW", "FDP", "FDP-private_inference"):  # labels private
        return _param_case(key, "validation_fraction", 0.99, raises(
            ValueError, r"validation_fraction=0\.99 would select epochs on training labels "
            "that this fit protects"))
    if key in ("GAP-edge", "RGNN"):  # labels public (RGNN: reports), the fraction too large
        return _param_case(key, "validation_fraction", 0.99, raises(
            ValueError, r"validation_fraction=0\.99 holds out all 30 training nodes"))
    return _param_case(key, "validation_fraction", 0.99, OK)


@case("walk_length_huge", needs="walk_length")
def _(key):
    return _param_case(key, "walk_length", 1000, OK)


@case("num_clusters_above_nodes", needs="num_clusters")
def _(key):
    return _param_case(key, "num_clusters", 100, OK)


@case("feature_range_reversed", needs="feature_range")
def _(key):
    return _param_case(key, "feature_range", (1.5, -1.5), raises(
        ValueError, r"feature_range must be a \(low, high\) pair of finite numbers with low < "
                    r"high; got \(1\.5, -1\.5\)"))


@case("noise_multiplier_over_budget", needs="noise_multiplier")
def _(key):
    pattern = (r"noise_multiplier=0\.05 spends epsilon=[0-9.]+ > epsilon=8 in a single step"
               if key == "DRW" else
               r"spends epsilon=[0-9.]+ at delta=.*more than the budget epsilon=8")
    return _param_case(key, "noise_multiplier", 0.05, raises(PrivacyBudgetError, pattern))


@case("delta_zero", needs="delta")
def _(key):
    return _param_case(key, "delta", 0.0, _invalid(key, "delta", r"a float in the range "
                                                   r"\(0\.0, 1\.0\) or None", "0.0"))


@case("delta_one", needs="delta")
def _(key):
    return _param_case(key, "delta", 1.0, _invalid(key, "delta", r"a float in the range "
                                                   r"\(0\.0, 1\.0\) or None", "1.0"))


@case("delta_negative", needs="delta")
def _(key):
    return _param_case(key, "delta", -1e-5, _invalid(key, "delta", r"a float in the range",
                                                     "-1e-05"))


@case("delta_nan", needs="delta")
def _(key):
    return _param_case(key, "delta", float("nan"), _invalid(key, "delta", r"a float in the range",
                                                            "nan"))


@case("batch_size_zero", needs="batch_size")
def _(key):
    return _param_case(key, "batch_size", 0, _invalid(key, "batch_size",
                                                      r"an int in the range \[1, inf\)", "0"))


@case("epochs_zero")
def _(key):
    return _param_case(key, "epochs", 0, _invalid(key, "epochs",
                                                  r"an int in the range \[1, inf\)", "0"))


@case("epochs_float")
def _(key):
    return _param_case(key, "epochs", 2.5, _invalid(key, "epochs", r"an int in the range", "2.5"))


@case("lr_zero")
def _(key):
    return _param_case(key, "lr", 0.0, _invalid(key, "lr", r"a float in the range "
                                                r"\(0\.0, 1e\+30\]", "0.0"))


@case("lr_huge")
def _(key):
    """lr=1e10: trains to something finite, or stops in fit naming the divergence."""
    return _param_case(key, "lr", 1e10, Expect(
        ok=True, error=(FloatingPointError, r"training diverged: .*non-finite.*lr=1e\+10")))


@case("lr_largest_allowed")
def _(key):
    """lr=1e30, the largest allowed: the run is stopped in fit, or ends finite."""
    return _param_case(key, "lr", 1e30, Expect(
        ok=True, error=(FloatingPointError, r"training diverged: .*non-finite.*lr=1e\+30")))


@case("lr_above_float32_step")
def _(key):
    """lr=1e38: Adam's first step would overflow float32 inside torch; refused by name."""
    return _param_case(key, "lr", 1e38, _invalid(key, "lr", r"a float in the range "
                                                 r"\(0\.0, 1e\+30\]", r"1e\+38"))


@case("max_grad_norm_huge", needs="max_grad_norm")
def _(key):
    """C=1e300 overflows float32 noise: stopped in fit naming max_grad_norm, or unused."""
    return _param_case(key, "max_grad_norm", 1e300, Expect(
        ok=True, error=(FloatingPointError, r"training diverged: .*lower max_grad_norm=1e\+300")))


@case("noise_multiplier_huge", needs="noise_multiplier")
def _(key):
    return _param_case(key, "noise_multiplier", 1e40, raises(
        FloatingPointError, r"training diverged: .*noise std per step is noise_multiplier x "
                            r"sensitivity x max_grad_norm = [0-9.]+e\+40"))


@case("max_grad_norm_zero", needs="max_grad_norm")
def _(key):
    return _param_case(key, "max_grad_norm", 0.0, _invalid(key, "max_grad_norm",
                                                           r"a float in the range \(0\.0, inf\)",
                                                           "0.0"))


@case("random_state_string")
def _(key):
    return _param_case(key, "random_state", "seed", _invalid(
        key, "random_state", r"an int in the range \[0, 4294967295\], an instance of "
                             r"'numpy\.random\.mtrand\.RandomState' or None", "'seed'"))


@case("unknown_parameter")
def _(key):
    return Scenario(raises(ValueError, rf"Invalid parameter 'epsilonn' for estimator "
                                       rf"{_name(key)}"), params={"epsilonn": 1.0})


@case("device_unknown")
def _(key):
    return _param_case(key, "device", "tpu", _invalid(
        key, "device", r"a str among .* or 'cuda:<index>'", "'tpu'"))


@case("device_cuda_without_cuda")
def _(key):
    if torch.cuda.is_available():
        pytest.skip("CUDA is available here")
    return _param_case(key, "device", "cuda", raises(
        ValueError, r"device='cuda' but CUDA is not available on this machine"))


# ---- refits and prediction
@case("failed_refit_bad_data")
def _(key):
    return Scenario(raises(ValueError, r"Input X contains NaN"), fit=(_train_nodes(),
                    _y()[:N_TRAIN]), refit=(_with(np.nan), _y()))


@case("failed_refit_over_budget", needs="noise_multiplier")
def _(key):
    """Refused by the budget check before training: the earlier fit is gone too."""
    return Scenario(raises(PrivacyBudgetError, r"noise_multiplier|spends epsilon"),
                    fit=(_train_nodes(), _y()[:N_TRAIN]), refit=(_train_nodes(), _y()[:N_TRAIN]),
                    refit_params={"noise_multiplier": 0.05})


@case("failed_refit_in_training")
def _(key):
    """A crash late in training, after the model is set: nothing of it survives."""
    def patch(est):
        train = est._train

        def crash(*args):
            train(*args)
            raise RuntimeError("simulated crash after training")
        est._train = crash
    return Scenario(raises(RuntimeError, r"simulated crash after training"),
                    fit=(_train_nodes(), _y()[:N_TRAIN]), refit=(_train_nodes(), _y()[:N_TRAIN]),
                    patch=patch)


@case("predict_before_fit")
def _(key):
    return Scenario(raises(NotFittedError, r"is not fitted yet"),
                    fit=None, query=DATA.graph.nodes()[N_TRAIN:], patch=_unfit)


def _unfit(est):
    est._reset_fitted()


@case("predict_other_feature_count")
def _(key):
    return Scenario(raises(ValueError, rf"X has 7 features, but {_name(key)} is expecting 4 "
                                       r"features"),
                    query=np.zeros((5, 7)))


@case("predict_graph_other_feature_count")
def _(key):
    x = np.zeros((40, 7))
    return Scenario(raises(ValueError, rf"X has 7 features, but {_name(key)} is expecting 4 "
                                       r"features"),
                    query=lambda: Graph(_edges(), x).nodes(), inputs=[x])


@case("predict_nan_features")
def _(key):
    return Scenario(raises(ValueError, r"Input X contains NaN"), query=_with(np.nan))


@case("predict_one_node")
def _(key):
    return Scenario(OK, query=DATA.graph.nodes([35]))


@case("predict_new_graph")
def _(key):
    x = _x() * 0.5
    return Scenario(OK, query=lambda: Graph(_edges()[:, ::2], x).nodes(), inputs=[x])


@case("predict_empty_nodes")
def _(key):
    return Scenario(OK, query=DATA.graph.nodes([]))


@case("predict_sparse")
def _(key):
    return Scenario(OK, query=sp.csr_matrix(_x()[:6]))


@case("refit_other_feature_count")
def _(key):
    """A successful refit replaces everything: the old feature count and caches are gone."""
    x7 = np.c_[_x(), _x()[:, :3]]
    graph = {}

    def nodes():
        graph["g"] = Graph(_edges(), x7)
        return graph["g"].nodes()[:N_TRAIN]

    return Scenario(OK, fit=(_train_nodes(), _y()[:N_TRAIN]), refit=(nodes, _y()[:N_TRAIN]),
                    query=lambda: graph["g"].nodes()[N_TRAIN:], inputs=[x7])


# ---------------------------------------------------------------- graph collections
#: Graph-level estimators: one example is one graph (a tiny fast configuration).
GRAPH_ESTIMATORS: dict[str, Callable[[], Any]] = {
    "DPGraph": lambda: DPGraphClassifier(epsilon=8.0, epochs=1, batch_size=8, hidden_dim=4,
                                         num_layers=1, noise_multiplier=1.0, random_state=0,
                                         device="cpu"),
}
GRAPHS, GRAPH_LABELS = make_graph_classification(n_graphs=16, n_features=4, random_state=0)
GRAPH_CASES: dict[str, Callable[[str], Scenario]] = {}


def graph_case(name: str):
    def register(function):
        GRAPH_CASES[name] = function
        return function
    return register


def _graphs(*extra: Graph) -> Callable[[], list]:
    """The training graphs as the caller's own list, with ``extra`` graphs in place of the
    last ones (built when the case runs)."""
    return lambda: list(GRAPHS)[:len(GRAPHS) - len(extra)] + list(extra)


def _graph_y() -> np.ndarray:
    return np.array(GRAPH_LABELS, dtype=np.int64)


def _no_edges() -> np.ndarray:
    return np.zeros((2, 0), np.int64)


@graph_case("collection_empty")
def _(key):
    return Scenario(raises(ValueError, r"fit: X holds no graphs; at least one graph is "
                                       r"required"), fit=(lambda: [], np.zeros(0, np.int64)))


@graph_case("graph_without_nodes")
def _(key):
    return Scenario(raises(ValueError, r"Graph: the graph is empty \(0 nodes\); at least one "
                                       r"node is required"),
                    fit=(lambda: _graphs(Graph(_no_edges(), np.zeros((0, 4))))(), _graph_y()))


@graph_case("graph_without_edges")
def _(key):
    """A graph of nodes and no edges is a valid example: its readout sums its node rows."""
    return Scenario(OK, fit=(_graphs(Graph(_no_edges(), np.ones((3, 4)))), _graph_y()))


@graph_case("isolated_nodes")
def _(key):
    return Scenario(OK, fit=(_graphs(Graph([[0, 1], [1, 0]], np.ones((4, 4)))), _graph_y()))


@graph_case("feature_widths_differ")
def _(key):
    return Scenario(raises(ValueError, r"X: every graph must have the same number of node "
                                       r"features; graph 0 has 4 and graph 15 has 5"),
                    fit=(_graphs(Graph(_no_edges(), np.ones((3, 5)))), _graph_y()))


@graph_case("predict_feature_width_differs")
def _(key):
    return Scenario(raises(ValueError, r"X has graphs with 5 node features, but "
                                       r"DPGraphClassifier is expecting 4 features"),
                    query=lambda: [Graph(_no_edges(), np.ones((3, 5)))])


@graph_case("zero_feature_width")
def _(key):
    def graphs():
        return [Graph(g.edge_index, np.zeros((g.num_nodes, 0))) for g in GRAPHS]
    return Scenario(raises(ValueError, r"the graphs have 0 node features; at least 1 is "
                                       r"required"), fit=(graphs, _graph_y()))


@graph_case("text_features")
def _(key):
    x = np.ones((3, 4), dtype=object)
    x[1, 2] = "high"
    return Scenario(raises(ValueError, r"Graph: x must hold numbers.*'high'"),
                    fit=(lambda: _graphs(Graph(_no_edges(), x))(), _graph_y()), inputs=[x])


@graph_case("labels_missing")
def _(key):
    y = _graph_y().astype(object)
    y[2] = None
    return Scenario(raises(ValueError, r"y has no label for 1 graph\(s\) \(positions 2\)"),
                    fit=(_graphs(), y))


@graph_case("labels_nan")
def _(key):
    y = _graph_y().astype(float)
    y[[3, 5]] = np.nan
    return Scenario(raises(ValueError, r"y has no label for 2 graph\(s\) \(positions 3, 5\)"),
                    fit=(_graphs(), y))


@graph_case("labels_fewer_than_graphs")
def _(key):
    return Scenario(raises(ValueError, r"inconsistent numbers of samples: \[16, 15\]"),
                    fit=(_graphs(), _graph_y()[:-1]))


@graph_case("one_class")
def _(key):
    return Scenario(raises(ValueError, r"at least 2 classes.*only one class: 0\.$"),
                    fit=(_graphs(), np.zeros(len(GRAPHS), np.int64)))


@graph_case("same_graph_twice")
def _(key):
    return Scenario(raises(ValueError, r"graphs \[0, 15\] are the same Graph object\. One "
                                       r"graph is the privacy unit"),
                    fit=(_graphs(GRAPHS[0]), _graph_y()))


@graph_case("equal_graphs")
def _(key):
    copy_of_first = Graph(GRAPHS[0].edge_index, GRAPHS[0].features())
    return Scenario(raises(ValueError, r"graphs \[0, 15\] have the same content.*pass "
                                       r"allow_equal_graphs=True"),
                    fit=(_graphs(copy_of_first), _graph_y()))


@graph_case("equal_graphs_allowed")
def _(key):
    """Accepted as different people's graphs (the report's statement of it is checked in
    tests/estimators/test_graph_classifier.py)."""
    copy_of_first = Graph(GRAPHS[0].edge_index, GRAPHS[0].features())
    return Scenario(OK, fit=(_graphs(copy_of_first), _graph_y()),
                    params={"allow_equal_graphs": True})


@graph_case("X_node_array")
def _(key):
    return Scenario(raises(TypeError, r"X: graphs\[0\] must be a skdpgraph\.Graph"),
                    fit=(np.ones((16, 4)), _graph_y()))


@graph_case("X_none")
def _(key):
    return Scenario(raises(TypeError, r"X must be a GraphCollection or a list of "
                                      r"skdpgraph\.Graph; got NoneType"), fit=(None, _graph_y()))


@graph_case("predict_empty")
def _(key):
    return Scenario(raises(ValueError, r"X holds no graphs; at least one graph is required"),
                    query=lambda: [])


# ---------------------------------------------------------------- running a case
_FITTED: dict[str, Any] = {}


def _is_graph_level(key: str) -> bool:
    return key in GRAPH_ESTIMATORS


def _estimator(key: str):
    return (GRAPH_ESTIMATORS if _is_graph_level(key) else ESTIMATORS)[key]()


def _training_data(key: str) -> tuple:
    return (GRAPHS, _graph_y()) if _is_graph_level(key) else (_train_nodes(), _y()[:N_TRAIN])


def _held_out(key: str):
    """A query the fitted estimator must answer (sanity after a refused query)."""
    return GRAPHS[:4] if _is_graph_level(key) else DATA.graph.nodes()[N_TRAIN:]


def _fitted(key: str):
    """A fitted copy (fitted once per worker, then deep-copied)."""
    if key not in _FITTED:
        _FITTED[key] = _estimator(key).fit(*_training_data(key))
    return copy.deepcopy(_FITTED[key])


def _value(item):
    return item() if callable(item) else item


def _same(a, b) -> bool:
    if isinstance(a, np.ndarray):
        return (isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape
                and bool(np.all((a == b) | ((a != a) & (b != b)))))
    if sp.issparse(a):
        return sp.issparse(b) and a.shape == b.shape and (a != b).nnz == 0
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(_same, a, b))
    return a is b or a == b


def _caller_objects(scenario: Scenario) -> list:
    objects = list(scenario.inputs) + list(scenario.params.values())
    for pair in (scenario.fit, scenario.refit):
        objects += [item for item in (pair or ()) if not callable(item)]
    objects += [item for item in (scenario.query, scenario.score_y)
                if item is not None and not callable(item)]
    return [o for o in objects if isinstance(o, (np.ndarray, list, tuple)) or sp.issparse(o)
            or isinstance(o, float)]


def _is_fitted(est) -> bool:
    try:
        check_is_fitted(est)
    except NotFittedError:
        return False
    return True


def _assert_unfitted(est, key: str) -> None:
    left = [name for name in vars(est) if name.endswith("_") and not name.startswith("__")]
    assert left == [], f"a failed fit left fitted state behind: {left}"
    with pytest.raises(NotFittedError):
        est.predict(_held_out(key))


def _assert_sane(est, query) -> None:
    check_is_fitted(est)
    budget = float(est.epsilon)
    assert est.epsilon_spent_ >= 0 and est.epsilon_spent_ <= budget * (1 + 1e-9)
    assert math.isfinite(est.epsilon_spent_) or math.isinf(budget)
    assert est.privacy_.epsilon == est.epsilon_spent_
    assert 0 <= est.delta_ < 1
    n = (query.num_nodes if isinstance(query, Graph) else
         query.shape[0] if hasattr(query, "shape") else len(query))
    proba = est.predict_proba(query)
    assert proba.shape == (n, len(est.classes_))
    assert np.all(np.isfinite(proba)) and np.all(proba >= 0)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-5)
    predicted = est.predict(query)
    assert predicted.shape == (n,)
    assert set(predicted.tolist()) <= set(est.classes_.tolist())


def run_case(key: str, name: str) -> str:
    """Run one case; return ``"error"`` or ``"sane"`` (assertion errors: the case fails)."""
    scenario = (GRAPH_CASES if _is_graph_level(key) else CASES)[name](key)
    objects = _caller_objects(scenario)
    before = copy.deepcopy(objects)
    writeable = [o.flags.writeable for o in objects if isinstance(o, np.ndarray)]
    est = _estimator(key) if scenario.fit is not None else _fitted(key)
    if scenario.patch is not None:
        scenario.patch(est)
    params = est.get_params()
    stage, query = "params", None
    try:
        est.set_params(**scenario.params)
        params = est.get_params()
        for stage, pair in (("fit", scenario.fit), ("refit", scenario.refit)):
            if pair is not None:
                if stage == "refit":
                    est.set_params(**scenario.refit_params)
                    params = est.get_params()
                est.fit(*(_value(item) for item in pair))
        stage, fitted = "predict", _is_fitted(est)
        query = _value(scenario.query) if scenario.query is not None else (
            _value(scenario.fit[0]) if scenario.fit is not None else _training_data(key)[0])
        est.predict_proba(query)
        if scenario.score_y is not None:
            est.score(query, scenario.score_y)
        outcome = "sane"
    except Exception as exc:  # noqa: BLE001 - checked against the case's expectation
        assert scenario.expect.error is not None, (
            f"{key}-{name}: expected sane output, got {type(exc).__name__}: {exc}")
        error, pattern = scenario.expect.error
        assert isinstance(exc, error), (
            f"{key}-{name}: expected {error.__name__}, got {type(exc).__name__}: {exc}")
        assert re.search(pattern, str(exc), re.S), (
            f"{key}-{name}: message does not match {pattern!r}: {exc}")
        if scenario.expect.ok:  # accepted or refused in fit, never answered with NaN
            assert stage in ("fit", "refit"), f"{key}-{name}: refused only at {stage}: {exc}"
        if stage in ("fit", "refit"):
            _assert_unfitted(est, key)
        elif stage == "predict" and fitted:  # a refused query leaves the estimator usable
            _assert_sane(est, _held_out(key))
        elif stage == "predict":
            _assert_unfitted(est, key)
        outcome = "error"
    else:
        assert scenario.expect.ok, (
            f"{key}-{name}: expected {scenario.expect.error[0].__name__}, but it was accepted")
        _assert_sane(est, query)
    assert _same_params(est.get_params(), params), f"{key}-{name}: parameters changed"
    for obtained, expected in zip(objects, before):
        assert _same(obtained, expected), f"{key}-{name}: the caller's input was changed"
    assert writeable == [o.flags.writeable for o in objects if isinstance(o, np.ndarray)]
    return outcome


def _same_params(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread():
    """Tiny models: one thread per worker is much faster than oversubscribed cores."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


MATRIX = ([(k, n) for k in ESTIMATORS for n in CASES if _applies(k, n)]
          + [(k, n) for k in GRAPH_ESTIMATORS for n in GRAPH_CASES])


@pytest.mark.parametrize("key,name", MATRIX, ids=[f"{k}-{n}" for k, n in MATRIX])
def test_bad_input(key, name):
    run_case(key, name)


def test_train_dpsgd_stops_at_a_non_finite_loss():
    """The shared loop names the divergence instead of training on to NaN weights."""
    from skdpgraph.privacy import plan_dpsgd
    from skdpgraph.training import (Generators, OptimizerSettings, TensorExamples,
                                    TrainingStage, train_dpsgd)

    module = torch.nn.Linear(2, 2)
    plan = plan_dpsgd(epsilon=np.inf, delta=1e-5, sampling="poisson", num_examples=8,
                      batch_size=8, steps=3, max_grad_norm=1.0)
    x = torch.ones(8, 2)
    x[3] = float("inf")

    def loss(m, batch):
        return torch.nn.functional.cross_entropy(m(batch[0]), batch[1], reduction="none"), None

    with pytest.raises(FloatingPointError, match=r"toy: training diverged: the loss is non-finite "
                                                 r"\(nan\) at step 1 of 3\. Lower the learning "
                                                 r"rate \(lr=0\.1\)"):
        train_dpsgd(module, TensorExamples(x, torch.zeros(8, dtype=torch.long)), loss, plan,
                    optimizer=OptimizerSettings(lr=0.1),
                    generators=Generators(torch.Generator().manual_seed(0)),
                    stage=TrainingStage(description="toy"))


def matrix_counts() -> str:
    """Run the whole matrix in this process; the counts line, then any failures."""
    import warnings
    from collections import Counter

    counts, failures = Counter(), []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for k, n in MATRIX:
            try:
                counts[run_case(k, n)] += 1
            except pytest.skip.Exception:
                counts["skipped"] += 1
            except BaseException as exc:  # noqa: BLE001 - a failing case is counted
                counts["failure"] += 1
                failures.append(f"  {k}-{n}: {type(exc).__name__}: {str(exc)[:300]}")
    return "\n".join([
        f"bad-input matrix: {len(CASES)} kinds of input x {len(ESTIMATORS)} estimator "
        f"configurations, and {len(GRAPH_CASES)} kinds of graph collection x "
        f"{len(GRAPH_ESTIMATORS)} graph-level configuration(s) = {len(MATRIX)} cases (a kind "
        f"runs where the estimator has its parameter): {counts['error']} clear errors, "
        f"{counts['sane']} sane acceptances, {counts['failure']} failures, "
        f"{counts['skipped']} skipped", *failures])


if __name__ == "__main__":  # python tests/test_bad_input.py
    torch.set_num_threads(1)
    print(matrix_counts())
