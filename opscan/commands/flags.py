"""Flags several commands share, defined once so they mean the same everywhere (docs/check.md, "Flags")."""

from __future__ import annotations

import argparse

BACKEND_HELP = ("coverage-database release to check against, e.g. torchneuron==2.33.0 or 2.33.0 "
                "(default: [tool.opscan] backend, else the newest TorchNeuron release); its device "
                "profile shapes the trace")
DB_HELP = ("a release file (e.g. one written by `opscan db probe`) or a folder of release files, "
           "used instead of the shipped coverage database (default: [tool.opscan] db)")


def add_backend_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--backend", metavar="RELEASE", default=None, help=BACKEND_HELP)


def add_db_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", metavar="FILE", default=None, help=DB_HELP)


def retire_flag(parser: argparse.ArgumentParser, old: str, hint: str) -> None:
    """Keep a renamed flag only as a usage error that says what to use instead."""

    class _Retired(argparse.Action):
        def __call__(self, parser, namespace, values, option_string=None):
            raise argparse.ArgumentError(self, f"was renamed: {hint}")

    parser.add_argument(old, nargs="?", action=_Retired, help=argparse.SUPPRESS)
