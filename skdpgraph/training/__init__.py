"""Training: the one DP-SGD loop, its optimiser, its callbacks and the clipped sum.

:func:`train_dpsgd` runs a :class:`~skdpgraph.privacy.DPSGDPlan` on an
:class:`ExampleSet`; :class:`Stepper` takes one step (clipped sum, noise, update) with
Opacus' optimiser made cheaper by :class:`InPlaceAccumulation`, :class:`OneDrawNoise` and
:class:`ParameterListOnce`; callbacks (:class:`EpsilonTracker`, :class:`ProgressBar`,
:class:`BestEpoch`, :class:`History`) see every epoch's record. The distributed loop of
:mod:`skdpgraph.parallel` is built from the same pieces.
"""

from skdpgraph._lazy import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "_callbacks": ["BestEpoch", "Callback", "EpsilonTracker", "History", "ProgressBar"],
    "_clipped_sum": ["ClippedSumModule"],
    "_examples": ["ExampleSet", "LossFn", "TensorExamples"],
    "_llp": ["train_llp_gnn"],
    "_loop": ["Generators", "TrainingResult", "TrainingStage", "divergence_message",
              "run_epochs", "train_dpsgd"],
    "_optimizers": ["DPOptimizer", "InPlaceAccumulation", "OneDrawNoise", "OptimizerSettings",
                    "ParameterListOnce", "make_optimizer"],
    "_stepper": ["Stepper"],
})
