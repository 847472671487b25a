"""What made a run: provenance.json (and patches) in its directory, and ``rerun=DIR`` from that record.

A run directory records, when the run starts and again at every resume:

- rlconf's version, and the git commit of the code that ran: rlconf's own checkout when it runs from one, and
  the working directory's repository when that is another (a user's project with its plugins); uncommitted
  changes to tracked files go beside it as a patch (``rlconf.patch``, ``workdir.patch``), untracked files are
  counted;
- Python and the versions of the packages a result depends on, the host, the device, the command line and the
  overrides (secrets redacted, as everywhere in a run directory).

``rlconf run rerun=DIR`` starts a new run with DIR's recorded config: the overrides DIR was launched with,
composed today, then every value of DIR's config.yaml put back where today's presets and defaults differ (said
in one warning line), and a warning line when the code or the packages differ from DIR's record. Only keys that
say where and how visibly the run executes may be given beside ``rerun=``.
"""

from __future__ import annotations

import json
import os
import platform
import shlex
import socket
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf, open_dict

from rlconf.errors import REDACTED, ConfigError
from rlconf.experiments.rundir.directory import PLACEMENT_KEYS, override_key, within
from rlconf.experiments.rundir.resume import flatten
from rlconf.experiments.rundir.saved import PROVENANCE_SCHEMA, read_config, read_record
from rlconf.files import read_bounded, write_text
from rlconf.settings import redact
from rlconf.version import __version__

PROVENANCE = "provenance.json"
# The packages whose versions can change a run's numbers.
PACKAGES = ("torch", "numpy", "gymnasium", "ale-py", "mujoco", "pettingzoo", "hydra-core", "omegaconf")
# Keys a rerun takes from today's command line, not from the record: where and how visibly it runs.
RERUN_MAY_GIVE = (*PLACEMENT_KEYS, "verbose", "plugins", "logger", "checkpoint", "rerun")
GIT_SECONDS = 10.0  # a git call that takes longer (a network file system, a huge tree) is left out


# -- the record ------------------------------------------------------------------------------------------------
def record(device: str, overrides: list[str], rerun_of: str | None = None) -> tuple[dict[str, Any], dict[str, str]]:
    """This process's provenance, and the patches of its uncommitted changes ({file name: text})."""
    patches: dict[str, str] = {}
    code: dict[str, Any] = {}
    rlconf_repo = _toplevel(Path(__file__).parents[2])  # the repository of the rlconf package, if any
    workdir_repo = _toplevel(Path.cwd())
    for name, repo in (("rlconf", rlconf_repo), ("workdir", workdir_repo)):
        if repo is None or (name == "workdir" and repo == rlconf_repo):
            continue
        state, patch = _git_state(repo)
        if patch:
            state["patch"] = f"{name}.patch"
            patches[state["patch"]] = patch
        code[name] = state
    entry = {
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "rlconf": __version__,
        "code": code,
        "python": platform.python_version(),
        "packages": installed_versions(),
        "host": socket.gethostname(),
        "platform": platform.platform(),
        "device": describe_device(device),
        "compile": compilation(),
        "cpu_linear": cpu_kernels(),
        "cwd": os.getcwd(),
        "command": redact(os.environ.get("RLCONF_COMMAND") or shlex.join(sys.argv)),
        "overrides": redact(list(overrides)),
    }
    if rerun_of:
        entry["rerun_of"] = str(Path(rerun_of).resolve())
    return entry, {name: redact(text) for name, text in patches.items()}


def installed_versions(packages: tuple[str, ...] = PACKAGES) -> dict[str, str]:
    """The versions of ``packages`` that are installed (read from their metadata: nothing is imported)."""
    versions = {}
    for package in packages:
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            continue
    return versions


def compilation() -> str:
    """What ``hardware.compile`` came to in this process, and why (rlconf.approximation.compiled)."""
    from rlconf.approximation import compiled

    return compiled.active().reason


def cpu_kernels() -> str:
    """Which kernels ``hardware.cpu_linear`` came to on this CPU, and why (rlconf.nn.gemm)."""
    from rlconf.nn import gemm

    return gemm.describe()


def describe_device(device: str) -> str:
    """``cpu``, or the GPU's name beside the device string (``cuda:0 (NVIDIA H100 80GB HBM3)``)."""
    if not str(device).startswith("cuda"):
        return str(device)
    import torch

    if not torch.cuda.is_available():
        return str(device)
    index = int(str(device).partition(":")[2] or torch.cuda.current_device())
    return f"{device} ({torch.cuda.get_device_name(index)})"


def write(run_dir: Path, device: str, overrides: list[str], resumed: bool, rerun_of: str | None = None) -> None:
    """provenance.json (and its patches) in ``run_dir``: the record of a fresh run, or one more entry under
    ``resumes`` for an attempt that continues it (its patches numbered by the attempt)."""
    entry, patches = record(device, overrides, rerun_of)
    path = run_dir / PROVENANCE
    try:
        previous = _read(path) if resumed else None
    except ConfigError:  # not a record rlconf wrote: this attempt's replaces it rather than extend it
        previous = None
    if previous is not None:
        attempt = len(previous.get("resumes") or []) + 1
        patches = {f"{Path(name).stem}-resume{attempt}.patch": text for name, text in patches.items()}
        for state in entry["code"].values():
            if "patch" in state:
                state["patch"] = f"{Path(state['patch']).stem}-resume{attempt}.patch"
        previous.setdefault("resumes", []).append(entry)
        entry = previous
    for name, text in patches.items():
        write_text(run_dir / name, text)
    write_text(path, json.dumps(entry, indent=2) + "\n")


def _read(path: Path) -> dict[str, Any] | None:
    """A recorded provenance.json, checked against ``saved.PROVENANCE_SCHEMA``, or None where there is none (a
    run from before it existed); one that is not what rlconf writes is a ConfigError in one line."""
    return read_record(path, PROVENANCE_SCHEMA)


def _toplevel(folder: Path) -> Path | None:
    out = _git(folder, "rev-parse", "--show-toplevel")
    return Path(out.strip()) if out else None


def _git_state(repo: Path) -> tuple[dict[str, Any], str]:
    """A repository's commit, whether its tracked files differ from it (and the diff), its untracked files."""
    commit = (_git(repo, "rev-parse", "HEAD") or "").strip() or None
    patch = _git(repo, "diff", "HEAD") or ""
    untracked = (_git(repo, "ls-files", "--others", "--exclude-standard") or "").splitlines()
    state: dict[str, Any] = {"repository": str(repo), "commit": commit, "dirty": bool(patch)}
    if untracked:
        state["untracked_files"] = len(untracked)
    return state, patch


def _git(folder: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True,
                              timeout=GIT_SECONDS, check=False)
    except (OSError, subprocess.SubprocessError):  # no git, or too slow: the record says less
        return None
    return done.stdout if done.returncode == 0 else None


# -- rerun=DIR -----------------------------------------------------------------------------------------------
def check_rerun_overrides(value: str, given: list[str]) -> None:
    """The keys given beside ``rerun=DIR``: only those of RERUN_MAY_GIVE (and never resume=)."""
    keys = [override_key(o) for o in given]
    if "resume" in keys:
        raise ConfigError(f"rerun={value} starts a new run from a record; resume= continues one: give one of them")
    allowed = ", ".join(k for k in RERUN_MAY_GIVE if k not in ("rerun", "resume", "hydra", "launcher"))
    for key in keys:
        if within(key, RERUN_MAY_GIVE):
            continue
        raise ConfigError(f"rerun={value} repeats the recorded run, so {key} may not be given beside it (allowed: "
                          f"{allowed}); to change it, start a run from the overrides in "
                          f"{Path(value) / 'overrides.yaml'}")


def as_recorded(cfg: DictConfig, run_dir: str, warn: bool = True) -> DictConfig:
    """``cfg`` (composed today from the record's overrides) with the recorded config's values where they differ,
    said in one warning line, as is a difference between the record's code or packages and today's (``warn``:
    by the first learner only; the others are given the config it merged)."""
    folder = Path(run_dir)
    plugins = list(cfg.get("plugins") or [])
    recorded = flatten(read_config(folder / "config.yaml", plugins, "plugins=[{}]"))
    composed = flatten(OmegaConf.to_container(cfg, resolve=True))
    changed, gone = [], []
    with open_dict(cfg):
        for key, value in recorded.items():
            if value == REDACTED or within(key, RERUN_MAY_GIVE):
                continue
            if key not in composed:
                gone.append(key)
            elif composed[key] != value:
                changed.append(f"{key} ({composed[key]!r} today, {value!r} recorded)")
                OmegaConf.update(cfg, key, value, merge=False)
    if not warn:
        return cfg
    notes = []
    if changed:
        notes.append(f"today's presets and defaults differ from the record in {_few(changed)}: the recorded "
                     "values are used")
    if gone:
        notes.append(f"the recorded keys {_few(gone)} no longer exist and are left out")
    new = sorted(k for k in composed.keys() - recorded.keys() if not within(k, RERUN_MAY_GIVE))
    if new:
        notes.append(f"{_few(new)} did not exist when it ran: today's defaults are used")
    notes += code_differences(folder)
    for note in notes:
        print(f"rlconf: warning: rerun={run_dir}: {note}", file=sys.stderr, flush=True)
    return cfg


def code_differences(run_dir: Path) -> list[str]:
    """How today's code and packages differ from those a run directory records (its first attempt's): a
    warning line, or none."""
    recorded = _read(run_dir / PROVENANCE)
    if recorded is None:
        return ["the run has no provenance.json (it predates them): the code it ran with is unknown"]
    now, patches = record("cpu", [])
    differ = []
    if recorded.get("rlconf") != now["rlconf"]:
        differ.append(f"rlconf {now['rlconf']} (recorded {recorded.get('rlconf')})")
    for name, state in (recorded.get("code") or {}).items():
        current = now["code"].get(name) or {}
        if not isinstance(state, dict):
            continue
        if state.get("commit") != current.get("commit"):
            differ.append(f"{name} commit {_short(current.get('commit'))} (recorded {_short(state.get('commit'))})")
        elif _patch_text(run_dir, state) != patches.get(current.get("patch", ""), ""):
            differ.append(f"{name}'s uncommitted changes (recorded: {state.get('patch', 'none')})")
    packages = recorded.get("packages") or {}
    for package, version in sorted(packages.items()):
        if now["packages"].get(package) != version:
            differ.append(f"{package} {now['packages'].get(package, 'not installed')} (recorded {version})")
    if recorded.get("python") != now["python"]:
        differ.append(f"Python {now['python']} (recorded {recorded.get('python')})")
    return [f"the code differs from the record: {', '.join(differ)}"] if differ else []


def _patch_text(run_dir: Path, state: dict[str, Any]) -> str | None:
    """The recorded patch ('' when there is none); None when it cannot be read within saved's budgets, which
    no patch of today's matches."""
    name = state.get("patch")
    if not isinstance(name, str) or Path(name).name != name:  # a file beside the record, nothing else
        return ""
    if not (run_dir / name).exists():
        return ""
    try:
        return read_bounded(run_dir / name)
    except ConfigError:
        return None


def _short(commit: Any) -> str:
    return str(commit)[:10] if commit else "none"


def _few(items: list[str], shown: int = 4) -> str:
    return ", ".join(items[:shown]) + (f" and {len(items) - shown} more" if len(items) > shown else "")

