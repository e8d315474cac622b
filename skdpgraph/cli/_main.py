"""The ``skdpgraph`` command: its top-level parser and the dispatch to a command.

Each command is one ``add_<name>_parser(subparsers)`` function that registers its parser and
sets ``func`` (a callable ``args -> exit code``) as the parser default; ``_SUBCOMMANDS`` lists
them in help order.
"""

import argparse
import sys

from skdpgraph.cli._demo import add_demo_parser
from skdpgraph.cli._parsers import add_evaluate_parser, add_fit_parser, add_predict_parser

__all__ = ["main"]


def main(argv=None) -> int:
    """Run the ``skdpgraph`` command line and return its exit code.

    Parameters
    ----------
    argv : list of str, default=None
        Arguments without the program name; ``None`` reads ``sys.argv[1:]``.

    Returns
    -------
    code : int
        0 on success, non-zero on failure.
    """
    parser = _build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version and usage errors: a code, like the commands
        return exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 2
    if getattr(args, "func", None) is None:
        parser.print_help(sys.stderr)
        return 2
    return args.func(args)


def _build_parser():
    parser = argparse.ArgumentParser(
        prog="skdpgraph",
        description="Differentially private graph neural networks with a scikit-learn API.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}",
                        help="show the installed skdpgraph version and exit")
    subparsers = parser.add_subparsers(
        title="commands", dest="command", metavar="COMMAND",
        help="one of the commands below; 'skdpgraph COMMAND --help' describes its options")
    for add_parser in _SUBCOMMANDS:
        add_parser(subparsers)
    return parser


def _version():
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("skdpgraph")
    except PackageNotFoundError:  # running from a source tree that is not installed
        return "unknown"


#: The commands in help order; each registers its parser and sets ``func``.
_SUBCOMMANDS = [add_demo_parser, add_fit_parser, add_predict_parser, add_evaluate_parser]
