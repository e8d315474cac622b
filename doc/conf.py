"""Sphinx configuration for skdpgraph: ``python -m sphinx -W -b html doc doc/_build/html``."""

import os
import sys
from importlib.metadata import PackageNotFoundError, version

sys.path.insert(0, os.path.abspath(".."))  # document this checkout even when not installed

project = "skdpgraph"
author = "skdpgraph developers"
copyright = "2025, skdpgraph developers"
try:
    release = version("skdpgraph")
except PackageNotFoundError:
    release = "0.1.0"
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    # MathJax served from _static/mathjax (the PyPI package bundles it): math renders offline.
    "sphinx-mathjax-offline",
    "sphinx.ext.viewcode",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]

# API reference: numpydoc parses the docstrings (no napoleon); autosummary writes one page per name.
autosummary_generate = True
# scikit-learn's metadata-routing setters (set_score_request...) are not part of our API pages.
autodoc_default_options = {
    "members": True,
    "inherited-members": False,
    "exclude-members": ", ".join(f"set_{method}_request" for method in (
        "fit", "partial_fit", "predict", "predict_proba", "predict_log_proba", "score",
        "transform", "decision_function")),
}
autodoc_typehints = "none"  # the numpydoc Parameters sections state the types
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False

# Examples gallery from ../examples. The scripts train small models in seconds; set
# SKDPGRAPH_DOCS_RUN_EXAMPLES=0 to build the gallery without running them.
sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"\.py$",
    "plot_gallery": os.environ.get("SKDPGRAPH_DOCS_RUN_EXAMPLES", "1") != "0",
    "download_all_examples": False,
    # The timing pages load jQuery and DataTables from CDNs; the built pages load nothing
    # from the network.
    "write_computation_times": False,
}

templates_path = ["_templates"]
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
# results_numbers.inc is included by the pages that quote results, never a page itself.
exclude_patterns += ["user_guide/*.inc"]
html_theme = "pydata_sphinx_theme"
html_title = f"skdpgraph {release}"
html_static_path = ["_static"]
html_css_files = ["skdpgraph.css"]
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "header_links_before_dropdown": 4,
    # No icon links or analytics: the built pages load nothing from the network.
    "icon_links": [],
}
# No left column: code and tables get the width (the gallery has its own index page).
html_sidebars = {"**": []}
