"""Weights & Biases: one wandb run per rlconf run, a sweep's runs in one group.

The wandb run id is kept in the run directory (``wandb.json``), so a resumed or requeued run continues the
same wandb run. wandb never stops training: without an API key or a network, an online run falls back to
offline (one line says so, and how to upload it later); a failure while logging turns wandb off for the rest
of the run, with one line. The config it receives has its secrets redacted (``rlconf.settings.redact``).
"""

from __future__ import annotations

import secrets
import sys
from dataclasses import dataclass, field
from typing import Any

from rlconf.errors import first_line, require
from rlconf.files import read_json, write_json
from rlconf.logging.base import EVAL_VIDEO, Logger, LoggerContext
from rlconf.settings import redact

MODES = ("online", "offline", "disabled")
STEP = "env/step"  # every row's x axis; frames are logged beside it, so wandb can plot against either
FRAMES = "env/frames"


class WandbLogger(Logger):
    requires = "wandb"  # the package it needs, checked with the config (pip install 'rlconf[wandb]')

    @dataclass
    class Config:
        project: str = "rlconf"
        entity: str | None = None  # a team or user; None: the API key's default entity
        group: str | None = None  # None: the sweep directory's name, so a sweep is one group
        job_type: str = "train"
        tags: list[str] = field(default_factory=list)
        notes: str | None = None
        mode: str = "online"  # online, offline, disabled
        init_timeout: float = 30.0  # seconds to reach the server before falling back to offline

        def __post_init__(self):
            require(self.mode in MODES, "logger.wandb.mode", self.mode, f"allowed: {', '.join(MODES)}")
            require(self.init_timeout > 0, "logger.wandb.init_timeout", self.init_timeout, "must be positive")

    @classmethod
    def from_config(cls, config: Config, context: LoggerContext) -> WandbLogger:
        return cls(config, context)

    def __init__(self, config: Config, context: LoggerContext):
        super().__init__()
        self.frames_per_step = context.frames_per_step
        self.quiet = context.quiet
        self.run = self._start(config, context)

    # -- starting ------------------------------------------------------------------------------------
    def _start(self, config: Config, context: LoggerContext):
        import wandb

        saved_path = context.run_dir / "wandb.json"
        saved = read_json(saved_path) if context.resumed else None
        run_id = saved["id"] if saved else secrets.token_hex(6)  # wandb ids: lowercase letters, digits
        write_json(saved_path, {"id": run_id, "project": config.project, "entity": config.entity})
        options = redact(dict(project=config.project, entity=config.entity, group=config.group or context.sweep,
                              job_type=config.job_type, tags=list(config.tags), notes=config.notes,
                              name=context.name, id=run_id, resume="allow", dir=str(context.run_dir)))
        options["config"] = context.config  # redacted by the run
        settings = dict(init_timeout=config.init_timeout, console="off", silent=True)
        # wandb keeps the command line in the run's metadata (uploaded by wandb sync): the redacted one.
        argv, sys.argv = sys.argv, redact(list(sys.argv))
        try:
            run = wandb.init(mode=config.mode, settings=wandb.Settings(**settings), **options)
        except Exception as error:  # no API key, no network, a server that refuses: log offline instead
            if config.mode != "online":
                return self._give_up(error)
            self._say(f"wandb could not start online ({first_line(error)}); logging offline instead")
            try:
                run = wandb.init(mode="offline", settings=wandb.Settings(**settings), **options)
            except Exception as offline_error:
                return self._give_up(offline_error)
        finally:
            sys.argv = argv
        run.define_metric(STEP)
        run.define_metric(FRAMES)
        run.define_metric("*", step_metric=STEP)
        if run.settings.mode == "offline":
            self._say(f"wandb run {run_id} is offline in {run.dir.rsplit('/files', 1)[0]}; "
                      f"upload it with: wandb sync {context.run_dir / 'wandb'}/offline-run-*")
        elif run.settings.mode != "disabled" and run.url:
            self._say(f"wandb run: {run.url}")
        return run

    def _give_up(self, error: Exception) -> None:
        self._say(f"wandb is off for this run ({first_line(error)}); training goes on")

    def _say(self, message: str) -> None:
        if not self.quiet:
            print(f"rlconf: {message}", file=sys.stderr)

    # -- logging -------------------------------------------------------------------------------------
    def add_scalars(self, values: dict[str, float], step: int | None = None) -> None:
        if self.run is None:
            return
        step = self.step if step is None else step
        row: dict[str, Any] = {name: float(value) for name, value in values.items()}
        row[STEP] = step
        row[FRAMES] = round(step * self.frames_per_step)
        try:
            self.run.log(row)
        except Exception as error:  # wandb's trouble is never the run's
            self.close()
            self._give_up(error)

    def video_payload(self, frames, fps, path):
        return path  # wandb copies the mp4 itself when it is logged

    def add_video(self, payload, step) -> None:
        if self.run is None:
            return
        import wandb

        try:
            self.run.log({EVAL_VIDEO: wandb.Video(str(payload), format="mp4"), STEP: step,
                          FRAMES: round(step * self.frames_per_step)})
        except Exception as error:  # wandb's trouble is never the run's
            self.close()
            self._give_up(error)

    def close(self) -> None:
        if self.run is not None:
            run, self.run = self.run, None
            try:
                run.finish()
            except Exception as error:
                self._give_up(error)

    def state_dict(self) -> dict:
        return {"step": self.step}

