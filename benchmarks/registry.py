"""Estimators the benchmark runner knows: name -> factory(epsilon, seed) -> unfitted estimator.

The classes are the registered estimators (``skdpgraph.all_estimators()``); this file names
the configurations the benchmarks run (``"gap-edp"``, ``"drw-walk"``, ...). Adding one is
one line in ``ESTIMATORS`` (node level: ``all_estimators(data="nodes")``, trained on node
tables by run.py) or ``GRAPH_ESTIMATORS`` (graph level: ``all_estimators(data="graphs")``,
trained on graph collections by graph_level.py); a test checks that every registered
estimator has an entry in the table of its kind.
``_make`` looks the class up only when the factory is called. Keyword arguments given to
``_make`` are fixed for that entry; ``run.py --param`` overrides any parameter at run time.
"""


def estimator_class(class_name, data="nodes"):
    """The registered estimator class called ``class_name`` that trains on ``data``
    (``"nodes"`` or ``"graphs"``)."""
    import skdpgraph

    return dict(skdpgraph.all_estimators(data=data))[class_name]


def _make(class_name, data="nodes", **fixed):
    def factory(epsilon, seed):
        return estimator_class(class_name, data)(epsilon=epsilon, random_state=seed, **fixed)

    factory.__qualname__ = f"{class_name}({', '.join(f'{k}={v!r}' for k, v in fixed.items())})"
    factory.class_name = class_name
    return factory


def _rgnn(epsilon, seed):
    """RGNN: ``epsilon`` is the total local budget, split as the estimator does by default.

    Labels get 3/13 of it, the m=10 sampled features the other 10/13 (``epsilon=13`` is the
    paper's eps_x=1, eps_y=3). ``epsilon=inf`` is the non-private counterpart: every feature
    reported exactly (eps_x=inf, m capped at d) and labels as given. Cora needs ``--param
    rgnn.feature_group_size=25``, Facebook ``=100`` (see benchmarks/rgnn_table2.py for the
    paper's table with baselines).
    """
    every_feature = {"num_sampled_features": 10**6} if epsilon == float("inf") else {}
    return estimator_class("RGNNClassifier")(epsilon=epsilon, random_state=seed, **every_feature)


_rgnn.class_name = "RGNNClassifier"


ESTIMATORS = {
    "rgnn": _rgnn,
    # The paper's grid: eps_x=1 on each of m=10 features, eps_y = epsilon - 10.
    "rgnn-paper": _make("RGNNClassifier", epsilon_per_feature=1.0),
    "fdp": _make("FDPClassifier"),
    "fdp-private-inference": _make("FDPClassifier", private_inference=True),
    "dpmlp": _make("DPMLPClassifier"),
    "gap-edp": _make("GAPClassifier", unit="edge"),
    "gap-ndp": _make("GAPClassifier", unit="node"),
    "progap-edp": _make("ProGAPClassifier", unit="edge"),
    "votes-edp": _make("NeighbourVoteClassifier"),
    "progap-ndp": _make("ProGAPClassifier", unit="node"),
    "dpnode-edge": _make("DPNodeClassifier", unit="edge"),
    "dpnode-node": _make("DPNodeClassifier", unit="node"),
    "drw": _make("DRWClassifier"),  # the defaults (subgraph_sampler="drw-r", one-step walks)
    "drw-walk": _make("DRWClassifier", subgraph_sampler="drw"),
    "drw-r": _make("DRWClassifier", subgraph_sampler="drw-r"),
    "drw-d": _make("DRWClassifier", subgraph_sampler="drw-d"),
}

#: Graph-level configurations (one example per graph), run by graph_level.py. The TU
#: collections hold graphs of equal content that are different molecules, hence
#: ``allow_equal_graphs=True``.
GRAPH_ESTIMATORS = {
    "dpgraph": _make("DPGraphClassifier", data="graphs", allow_equal_graphs=True),
}
