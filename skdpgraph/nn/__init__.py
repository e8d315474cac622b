"""Torch modules built from layers that Opacus supports."""

from skdpgraph.nn._mlp import MLP, make_activation

__all__ = ["MLP", "make_activation"]
