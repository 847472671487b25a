"""Developer tasks: ``nox -s tests``, ``nox -s long``, ``nox -s lint``, ``nox -s docs``, ``nox -s slurm``,
``nox -s bench``, ``nox -s learning``, ``nox -s teams`` (plain ``nox`` runs lint and tests).

Every session that installs rlconf installs torch first, pinned by constraints.txt: left to itself, pip
would resolve ``torch>=2.2`` to the newest wheel on PyPI, a multi-gigabyte CUDA build, on machines that
have neither a GPU nor the bandwidth. .ci/run installs the same way.
"""

from __future__ import annotations

import nox

nox.options.default_venv_backend = "venv"
nox.options.reuse_venv = "yes"  # recreating torch's venv each time costs minutes; pip still re-checks it
nox.options.sessions = ["lint", "tests"]

CONSTRAINTS = "constraints.txt"


def install_rlconf(session: nox.Session) -> None:
    """torch from the constraints first, then rlconf with every extra the tests use, as .ci/run installs it:
    dev (pytest, ruff, SB3), the simulators (ale-py, MuJoCo, PettingZoo, Box2D, MiniGrid, highway-env), the
    launchers and the sweeper (submitit, Optuna), the loggers and players (wandb, matplotlib, moviepy) and export
    (onnx, onnxruntime)."""
    session.install("-c", CONSTRAINTS, "torch")
    extras = "dev,atari,mujoco,pettingzoo,box2d,minigrid,highway,vmas,slurm,optuna,wandb,plot,video,export"
    session.install("-c", CONSTRAINTS, "-e", f".[{extras}]")


@nox.session
def tests(session: nox.Session) -> None:
    """The suite CI runs, slow learning tests included (the long ones not), on 2 workers; posargs go to pytest."""
    install_rlconf(session)
    session.run("pytest", "-n", "2", *session.posargs)


@nox.session
def long(session: nox.Session) -> None:
    """The long learning tests (``-m long``: each preset's whole budget, 5 to 25 minutes of a core each), which
    the default run leaves out: before a release, and after changing an agent. About 45 minutes on 2 cores."""
    install_rlconf(session)
    session.run("pytest", "-n", "2", "-m", "long", *session.posargs)


@nox.session
def slurm(session: nox.Session) -> None:
    """A single-node Slurm cluster on this machine (.ci/slurm-up, as root), then the tests that submit real
    jobs to it (``-m slurm``); posargs go to pytest. ``nox -s tests`` runs them too when a cluster is up."""
    install_rlconf(session)
    session.run("bash", ".ci/slurm-up", external=True)
    session.run("pytest", "-m", "slurm", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff over the repository, with the configuration in pyproject.toml."""
    session.install("-c", CONSTRAINTS, "ruff")
    session.run("ruff", "check", ".", *session.posargs)


@nox.session
def docs(session: nox.Session) -> None:
    """The documentation site: ``mkdocs build --strict`` into site/ (posargs go to it, e.g. ``-- -d /tmp/site``);
    ``nox -s docs -- serve`` serves it at http://127.0.0.1:8000 instead, rebuilt as its files change. rlconf is
    installed because the generated reference calls its command line and mkdocstrings reads its docstrings;
    the simulators are not needed."""
    session.install("-c", CONSTRAINTS, "torch")
    session.install("-c", CONSTRAINTS, "-e", ".[docs]")
    quiet = {"NO_MKDOCS_2_WARNING": "1", "DISABLE_MKDOCS_2_WARNING": "true"}  # mkdocs-material's banner on each build
    if session.posargs[:1] == ["serve"]:
        session.run("mkdocs", "serve", *session.posargs[1:], env=quiet)
    else:
        session.run("mkdocs", "build", "--strict", *session.posargs, env=quiet)


@nox.session
def bench(session: nox.Session) -> None:
    """rlconf against Stable-Baselines3, Tianshou and TorchRL (benchmarks/bench.py); posargs go to it, e.g.
    ``-- --quick``. Tianshou 2.x is installed here, not in the dev extra: it pins pandas<3 and virtualenv<21,
    which pip resolves in this session's venv (pandas 2.3, virtualenv 20.x) but which a dev venv already at pandas
    3 and virtualenv 21 (the project's) cannot take without a downgrade."""
    install_rlconf(session)
    session.install("-c", CONSTRAINTS, "tianshou>=2,<3")
    session.run("python", "benchmarks/bench.py", *session.posargs)


@nox.session
def learning(session: nox.Session) -> None:
    """The learning benchmark (benchmarks/learning.py): presets trained at published budgets, hours each; posargs
    go to it, e.g. ``-- sac-half-cheetah --seeds 0 1 --jobs 2`` or ``-- --list``."""
    install_rlconf(session)
    session.run("python", "benchmarks/learning.py", *(session.posargs or ["--list"]))


@nox.session
def teams(session: nox.Session) -> None:
    """rlconf's team agents against BenchMARL on VMAS at matched settings (benchmarks/teams.py), tens of minutes a
    trial; BenchMARL, a benchmark peer and no dependency of rlconf, is installed here alone. posargs go to it,
    e.g. ``-- mappo-balance --seeds 0 1 2`` or ``-- --report``."""
    install_rlconf(session)
    session.install("-c", CONSTRAINTS, "benchmarl==1.5.2")
    session.run("python", "benchmarks/teams.py", *(session.posargs or ["--list"]))
