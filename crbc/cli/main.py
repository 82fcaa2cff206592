"""``python -m crbc COMMAND ...``: the command line (docs/FORMATS.md).

Only the chosen command's module is imported, so ``credit`` and ``estimators`` never load torch.
Bad input or arguments exit with status 2 and one line on standard error; never a traceback,
never a partial output file.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from dataclasses import dataclass

from crbc.errors import FormatError, UsageError, bounded_message, path_limit_message
from crbc.registry import Registry

__all__ = ["COMMANDS", "Command", "UsageError", "main", "register_command"]  # UsageError re-exported for compatibility


@dataclass(frozen=True)
class Command:
    """One command: ``python -m crbc NAME``. ``module`` is imported only when the command runs (so
    ``credit`` never loads torch) and has ``add_NAME_arguments(parser)`` / ``run_NAME(args)``, or
    ``add_arguments`` / ``run``; ``help`` is its one line in the usage."""

    name: str
    module: str
    help: str


#: every command, in the order the usage lists them
COMMANDS: Registry[Command] = Registry("command")


def register_command(name: str, module: str, help: str) -> Command:
    """Register a command (ValueError if the name is taken)."""
    return COMMANDS.add(Command(name, module, help))


register_command("credit", "crbc.cli.credit", "step credits of a rollout file (crbc.credit/1 JSON Lines)")
register_command("estimators", "crbc.cli.credit", "list the registered estimators")
register_command("generate", "crbc.cli.generate", "roll out groups of a local policy in a toy environment")
register_command("pretrain", "crbc.cli.pretrain", "behaviour-clone a tiny policy on solver-labelled states")
register_command("train", "crbc.cli.train", "group-based RL training of a local policy with a chosen estimator")
register_command("experiment", "crbc.cli.experiment", "compare estimators over several seeded training runs")
register_command("bench", "crbc.cli.bench", "benchmark the estimators (prints JSON)")
register_command("import", "crbc.cli.import_",
                 "a user's own rollouts (step table, verl / rLLM / ART dumps) -> crbc files")
register_command("audit", "crbc.cli.audit", "every iteration of a run: credit health per estimator (crbc.audit/1)")
register_command("truth", "crbc.cli.truth", "the policy's exact per-step values and advantages (crbc.truth/1)")
register_command("accuracy", "crbc.cli.truth", "score every estimator against the exact truth as G grows")
register_command("report", "crbc.cli.report", "a self-contained HTML report of a group or a run (no server needed)")
register_command("doctor", "crbc.cli.doctor",
                 "name the pipeline bugs around the advantage in a logged batch (crbc.doctor/1)")


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2 (argparse's default prints the usage too)
        raise UsageError(message)


def _usage() -> str:
    width = max(map(len, COMMANDS.names()))
    lines = ["usage: python -m crbc COMMAND [options]   (python -m crbc COMMAND --help)", "", "commands:"]
    lines += [f"  {c.name:<{width}}  {c.help}" for c in COMMANDS]
    return "\n".join(lines)


def _message(e: BaseException) -> str:
    """The error's text; for a name or path too long for the file system (ENAMETOOLONG), which
    limit it breaks and by how much (:func:`crbc.errors.path_limit_message`), not the bare
    "File name too long" with the whole path."""
    import errno

    if isinstance(e, OSError) and e.errno == errno.ENAMETOOLONG:
        for name in (e.filename, e.filename2):  # a rename names its source and its target
            said = None if name is None else path_limit_message(os.fsdecode(name))
            if said:
                return said
    return str(e)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(_usage())
        return 0 if argv else 2
    name = argv[0]
    if name not in COMMANDS:
        print(f"crbc: error: unknown command {name!r} (commands: {', '.join(COMMANDS.names())})", file=sys.stderr)
        return 2
    module_name, help_ = COMMANDS.get(name).module, COMMANDS.get(name).help
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        print(f"crbc {name}: error: this command is not available ({e})", file=sys.stderr)
        return 2
    parser = _Parser(prog=f"python -m crbc {name}", description=help_)
    adder = getattr(module, f"add_{name}_arguments", None) or module.add_arguments
    runner = getattr(module, f"run_{name}", None) or module.run
    adder(parser)
    try:
        args = parser.parse_args(argv[1:])
        return int(runner(args) or 0)
    except (UsageError, FormatError, ValueError, OSError) as e:
        msg = bounded_message(" ".join(_message(e).split()))  # one line, bounded
        print(f"crbc {name}: error: {msg}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"crbc {name}: interrupted", file=sys.stderr)
        return 130
