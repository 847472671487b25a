"""The wheel carries the config tree and the launchers: ``pip install .`` alone must give a working CLI."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_wheel_ships_configs_and_launchers(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(tmp_path), str(REPO)], check=True, capture_output=True, text=True)
    (wheel,) = tmp_path.glob("rlconf-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped_yaml = {p.relative_to(REPO).as_posix() for p in REPO.glob("configs/**/*.yaml")} | {
        p.relative_to(REPO).as_posix() for p in REPO.glob("launchers/**/*.yaml")}
    assert shipped_yaml, "the repository has no config files?"
    missing = {name for name in shipped_yaml if f"rlconf/{name}" not in names}
    assert not missing, f"not in the wheel: {sorted(missing)}"
    assert "rlconf/cli.py" in names and "rlconf/agents/dqn.py" in names
    modules = {p.relative_to(REPO).as_posix() for p in (REPO / "rlconf").rglob("*.py")}
    assert not modules - names, f"modules not in the wheel (pyproject.toml's packages): {sorted(modules - names)}"
    # Hydra finds launchers and sweepers only in the hydra_plugins namespace (and no __init__.py of its own:
    # other plugins share it).
    assert "hydra_plugins/rlconf_launch/__init__.py" in names and "hydra_plugins/__init__.py" not in names
    assert "rlconf/launch/local.py" in names and "rlconf/launch/slurm.py" in names
    # the published reference scores that rlconf plot --normalize human and the suite's report read
    assert {"rlconf/analysis/data/atari_human.csv", "rlconf/analysis/data/der_atari100k.json"} <= names
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert "rlconf = rlconf.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()
