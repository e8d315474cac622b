"""The files ``skdpgraph fit|predict|evaluate`` write: model, outputs, JSON privacy report.

A model file is a joblib dump of ``{"estimator": <fitted skdpgraph estimator>,
"feature_columns": [...]}``. The estimator keeps the noisy releases it paid for (they serve
``--fitted-graph``) and no hash or other trace of the tables' content. Loading one that is
anything else (a text file, a truncated dump, another object, an unfitted estimator) is a
one-line error. Model files are pickles: load only files you trust.

Whenever a command adds a release to the estimator's ``privacy_.releases``, the model file
is rewritten with the updated record *before* any output is written, and a line states the
release and the new total: a release is never given out without being saved.
"""

from __future__ import annotations

import json
import math
import os

__all__ = ["ModelFileError", "announce_releases", "check_outputs", "keep_releases",
           "load_model", "release_count", "save_model", "write_report_json"]


class ModelFileError(ValueError):
    """A model file that is not one written by ``skdpgraph fit``."""


def check_outputs(outputs: dict, inputs: dict) -> None:
    """Refuse output paths that cannot be written, before any training or release.

    Parameters
    ----------
    outputs : dict
        ``{"--option": path}`` of the files the command writes (``None`` paths are skipped).
    inputs : dict
        ``{"--option": path}`` of the files it reads; an output may not overwrite one.
    """
    seen = {os.path.realpath(p): option for option, p in inputs.items() if p is not None}
    for option, path in outputs.items():
        if path is None:
            continue
        real = os.path.realpath(path)
        if real in seen:
            raise ValueError(f"{option} {path} is also {seen[real]}: an output may not "
                             "overwrite another file of the command.")
        seen[real] = option
        directory = os.path.dirname(os.path.abspath(path))
        if os.path.isdir(path):
            raise IsADirectoryError(f"{option} {path} is a directory; give a file name.")
        if not os.path.isdir(directory):
            raise FileNotFoundError(f"{option} {path}: directory {directory} does not exist.")
        if not os.access(directory, os.W_OK | os.X_OK) or (
                os.path.exists(path) and not os.access(path, os.W_OK)):
            raise PermissionError(f"{option} {path}: not writable.")


def load_model(path: str) -> dict:
    """Read a model file written by ``skdpgraph fit``; anything else is a one-line error."""
    import joblib

    from skdpgraph.estimators import DPNodeClassifier
    from skdpgraph.estimators import BaseDPClassifier

    if os.path.isdir(path):
        raise ModelFileError(f"{path}: is a directory, not a model file.")
    try:
        saved = joblib.load(path)
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: no such model file") from None
    except Exception as exc:  # unpickling can fail in many ways; each means "not a model"
        raise ModelFileError(f"{path}: not a model file written by skdpgraph fit (it cannot be "
                             f"read: {type(exc).__name__}; a truncated or foreign file?)"
                             ) from None
    if isinstance(saved, BaseDPClassifier):
        raise ModelFileError(f"{path}: holds a bare {type(saved).__name__}, not a model file "
                             "written by skdpgraph fit (it has no saved feature columns).")
    if not isinstance(saved, dict) or set(saved) != {"estimator", "feature_columns"}:
        raise ModelFileError(f"{path}: not a model file written by skdpgraph fit (it holds "
                             f"{_describe(saved)}).")
    estimator, columns = saved["estimator"], saved["feature_columns"]
    if not isinstance(estimator, (BaseDPClassifier, DPNodeClassifier)):
        raise ModelFileError(f"{path}: holds a {type(estimator).__name__}, not an skdpgraph "
                             "estimator.")
    if not hasattr(estimator, "privacy_"):
        raise ModelFileError(f"{path}: holds an unfitted {type(estimator).__name__}.")
    if not (isinstance(columns, list) and columns and all(isinstance(c, str) for c in columns)):
        raise ModelFileError(f"{path}: its feature columns are not a list of names.")
    return saved


def _describe(value) -> str:
    if isinstance(value, dict):
        return f"a dict with keys {sorted(map(str, value))}"
    return f"a {type(value).__name__}"


def save_model(saved: dict, path: str) -> None:
    """Write the model file atomically: a failed write leaves the previous file intact."""
    import tempfile

    import joblib

    directory = os.path.dirname(os.path.abspath(path))
    handle, temporary = tempfile.mkstemp(prefix=".skdpgraph-", suffix=".joblib", dir=directory)
    os.close(handle)
    try:
        joblib.dump(saved, temporary)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.remove(temporary)
        raise


def release_count(estimator) -> int:
    """How many releases ``estimator.privacy_`` records (0 before ``fit``)."""
    report = getattr(estimator, "privacy_", None)
    return len(getattr(report, "releases", ()))


def announce_releases(estimator, before: int, path: str) -> None:
    """One line per release made since ``before``, then the total with every release."""
    report = estimator.privacy_
    for release in report.releases[before:]:
        print(f"new release recorded in privacy_.releases: {release.get('kind', '?')} on "
              f"{release.get('num_nodes', '?')} nodes, epsilon={float(release['epsilon']):.4g}, "
              f"delta={float(release['delta']):.3g}; saved in {path}")
    count = len(report.releases)
    if count > before:
        print(f"total so far, training and {count} release{'s' if count > 1 else ''}: "
              f"epsilon={report.total_epsilon:.4g}, delta={report.total_delta:.3g} "
              "(basic composition)")


def keep_releases(saved: dict, before: int, path: str) -> None:
    """Rewrite the model file if the estimator recorded a release; say so.

    Called before any output of the command is written: if the file cannot be written, the
    command fails and gives nothing out.
    """
    estimator = saved["estimator"]
    if release_count(estimator) <= before:
        return
    try:
        save_model(saved, path)
    except OSError as exc:
        raise OSError(f"{path}: the estimator recorded a new release but the model file could "
                      f"not be updated ({exc}); no output was written.") from None
    announce_releases(estimator, before, path)


def write_report_json(estimator, path: str | None) -> None:
    """Write ``estimator.privacy_.to_dict()`` as strict JSON (``inf`` as the string ``"inf"``)."""
    if path is None:
        return
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(_finite(estimator.privacy_.to_dict()), handle, indent=2, allow_nan=False)
        handle.write("\n")
    print(f"wrote the privacy report to {path}")


def _finite(value):
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_finite(item) for item in value]
    return value
