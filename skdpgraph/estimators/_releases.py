"""Noisy releases after ``fit``: cached, paid once, recorded in ``privacy_.releases``,
and the releases paid in ``fit`` served to a graph marked as the fitted one."""

from __future__ import annotations

from typing import Any

from sklearn.utils.validation import check_is_fitted

from skdpgraph.graph import Graph, Nodes

__all__ = ["ReleaseCache"]

#: Graphs marked as the fitted one (:meth:`BaseDPClassifier.mark_fitted_graph`) remembered.
_MARKED_GRAPHS_KEPT = 8


class ReleaseCache:
    """Mix-in of :class:`~skdpgraph.estimators.BaseDPClassifier`: its releases' cache.

    A fitted estimator's ``predict`` on a graph reuses the release paid for that graph
    (in ``fit``, or by an earlier prediction; :meth:`_cached`) or makes a new one with
    fresh noise and records it (``BaseDPClassifier._release``). Entries hold a
    ``fingerprint`` of their graph's content, which ``BaseDPClassifier.__getstate__``
    leaves out of every pickle. See :meth:`mark_fitted_graph` for an example.
    """

    def mark_fitted_graph(self, graph: Graph | Nodes) -> ReleaseCache:
        """Declare ``graph`` to be the graph this estimator was fitted on.

        Use it on a graph rebuilt from the training data after loading a saved estimator
        (the rebuilt object is new to the estimator): ``predict``, ``predict_proba`` and
        ``score`` on its nodes then reuse the releases paid for in ``fit`` and kept in the
        estimator, at no further cost and with the fit-time noise, instead of making new
        recorded releases. The choice is yours: the estimator checks public sizes only
        (node count, feature count, direction), never the content. Marking another graph
        of the same sizes costs no privacy either (its predictions read the fit's paid
        releases and its own nodes' features, not its edges), but they describe the fitted
        graph's neighbourhoods, not its own.

        Parameters
        ----------
        graph : Graph or Nodes
            The rebuilt training graph (or any of its node sets).

        Returns
        -------
        self

        Raises
        ------
        ValueError
            If the graph's node count, feature count or direction differs from the fitted
            graph's: it cannot be the graph the model was fitted on.

        Examples
        --------
        >>> import pickle
        >>> from skdpgraph import GAPClassifier, Graph
        >>> from skdpgraph.datasets import make_csbm
        >>> data = make_csbm(n_nodes=100, random_state=0)
        >>> clf = GAPClassifier(epsilon=4.0, epochs=2, encoder_epochs=2, random_state=0)
        >>> clf = clf.fit(data.nodes()[:60], data.y[:60])
        >>> live = clf.predict(data.nodes()[60:])
        >>> loaded = pickle.loads(pickle.dumps(clf))
        >>> rebuilt = Graph(data.graph.edge_index, data.graph.x)  # e.g. read from files
        >>> again = loaded.mark_fitted_graph(rebuilt).predict(rebuilt.nodes()[60:])
        >>> bool((again == live).all()), len(loaded.privacy_.releases)
        (True, 0)
        """
        check_is_fitted(self)
        graph = graph.graph if isinstance(graph, Nodes) else graph
        if not isinstance(graph, Graph):
            raise TypeError(f"{type(self).__name__}.mark_fitted_graph: graph must be a "
                            f"skdpgraph.Graph or Nodes; got {type(graph).__name__}.")
        differences = self._fitted_graph_differences(graph)
        if differences:
            raise ValueError(
                f"{type(self).__name__}.mark_fitted_graph: the graph cannot be the one this "
                f"estimator was fitted on: {'; '.join(differences)}. Predict on it without "
                "marking it (a new graph: a new recorded release where one is needed).")
        uids = [uid for uid in getattr(self, "_fitted_graph_uids_", []) if uid != graph.uid]
        self._fitted_graph_uids_ = (uids + [graph.uid])[-_MARKED_GRAPHS_KEPT:]
        return self

    def _fitted_graph_differences(self, graph: Graph) -> list[str]:
        """How ``graph``'s public sizes differ from the fitted graph's (empty: they agree).

        Compared: the feature count with ``n_features_in_`` and, for every release paid in
        ``fit`` and kept, its graph's node count (the release's own row count) and
        direction. No content is compared.
        """
        out = []
        if graph.num_features != self.n_features_in_:
            out.append(f"it has {graph.num_features} features, the fitted graph "
                       f"{self.n_features_in_}")
        for entry in getattr(self, "_release_cache_", []):
            public = entry.get("public")
            if not entry["paid_in_fit"] or public is None:
                continue
            if graph.num_nodes != public["num_nodes"]:
                out.append(f"it has {graph.num_nodes} nodes, the fitted graph "
                           f"{public['num_nodes']}")
            if graph.directed != public["directed"]:
                out.append(f"it is {'directed' if graph.directed else 'undirected'}, the "
                           f"fitted graph {'directed' if public['directed'] else 'undirected'}")
            break  # every release paid in fit is on the one fitted graph
        return out

    def _keeps_fit_releases(self) -> bool:
        """Whether a release paid in ``fit`` is kept (it then serves a marked graph)."""
        return any(entry["paid_in_fit"] for entry in getattr(self, "_release_cache_", []))

    def _cache_release(self, graph: Graph, kind: str, value: Any, *,
                       keep_in_pickle: bool = True) -> None:
        """Cache a release paid for by the training epsilon (made during ``fit``).

        It serves predictions on ``graph`` and on any graph marked as the fitted one
        (:meth:`mark_fitted_graph`); the public sizes those marks are checked against are
        kept with it, and it is pickled with the estimator (without its fingerprint).
        ``keep_in_pickle=False`` keeps it in memory only: for values the epsilon does not
        fully cover (node-level GAP's own aggregation rows without ``max_in_degree``), which
        a fitted estimator must not carry.
        """
        self.__dict__.setdefault("_release_cache_", []).append(
            {"uid": graph.uid, "fingerprint": graph.fingerprint(), "kind": kind,
             "value": value, "paid_in_fit": True, "keep_in_pickle": keep_in_pickle,
             "public": {"num_nodes": graph.num_nodes, "directed": graph.directed}})

    def _cached(self, graph: Graph, kind: str) -> Any | None:
        """The cached release ``kind`` that serves ``graph``, or None.

        A graph marked as the fitted one gets the release paid in ``fit``; otherwise a
        release is found by its graph's random ``uid`` or, before pickling, by its
        content's fingerprint (never pickled).
        """
        entries = [e for e in getattr(self, "_release_cache_", []) if e["kind"] == kind]
        if graph.uid in getattr(self, "_fitted_graph_uids_", ()):
            for entry in entries:
                if entry["paid_in_fit"]:
                    return entry["value"]
        for entry in entries:
            if entry["uid"] == graph.uid or (entry["fingerprint"] is not None
                                             and entry["fingerprint"] == graph.fingerprint()):
                return entry["value"]
        return None
