"""Runs on this machine, each in a fresh process, as many at once as there are slots.

``launcher=local``: one slot, so one run after another; no run inherits another's CUDA context, environment
processes, torch threads or global random state. ``launcher=local_gpus``: one slot per GPU set (runs_per_gpu
per GPU), each run seeing only its own GPUs and pinned to its own cores.

Why not submitit's LocalExecutor: it starts every job at once, gives every job the same first GPUs, and on
Ctrl-C kills its jobs a second after interrupting them, before a checkpoint can be written. Here each job is
a process in its own session: Ctrl-C reaches only the launcher, which passes one SIGINT to each running job
(each writes its checkpoint and stops) and waits for them; a second Ctrl-C kills them. SIGTERM to the
launcher is passed on the same way (``_terminate``), and a launcher killed outright (``kill -9``) takes its
jobs with it: each is sent SIGTERM by the kernel as its parent ends (``rlconf.process.die_with_parent``).
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import sys
import time
from collections import deque
from pathlib import Path

from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, JobStatus

from rlconf.experiments.loop.stopping import stop_requests
from rlconf.files import log_tail, open_inside
from rlconf.launch.base import Job, RunLauncher, failed
from rlconf.launch.slots import Slot, make_slots, visible_gpus
from rlconf.text import counted

POLL_SECONDS = 0.1


class LocalRunLauncher(RunLauncher):
    kind = "local"

    def slots(self) -> list[Slot]:
        p = self.params
        gpus = p["gpus"]
        if gpus == "auto":
            gpus = visible_gpus()
            if not gpus:  # rlconf.pipeline.plan.check_launcher says so first; this is for direct users of Hydra
                raise RuntimeError("launcher=local_gpus: no GPU is visible here; name them with "
                                   "hydra.launcher.gpus=[0,1,...] or use launcher=local")
        learners = p.get("learners", 1)  # a run of several learners takes a slot of all they need
        return make_slots(gpus, p["gpus_per_run"] * learners, p["runs_per_gpu"], p["cpus_per_run"] * learners,
                          p["parallel"], p["pin_cpus"])

    def start(self, jobs: list[Job], sweep_dir: Path) -> list[JobReturn]:
        slots = self.slots()
        spool = sweep_dir / ".launcher"
        spool.mkdir(exist_ok=True)
        if len(slots) > 1 and not self.announced:
            print(f"rlconf: {counted(len(jobs), 'run')}, {len(slots)} at a time: "
                  f"{'; '.join(s.describe() for s in slots)}", file=sys.stderr)
        queue = deque(jobs)
        free = list(slots)
        running: dict[int, tuple[subprocess.Popen, Job, Slot, Path]] = {}
        results: dict[int, JobReturn] = {}
        at_once = min(len(slots), len(jobs))
        progress = self.progress(sweep_dir, jobs, at_once, f", {at_once} at a time on this machine")
        try:
            # Ctrl-C is answered at the top of the loop, never raised inside subprocess's bookkeeping: a
            # KeyboardInterrupt landing in Popen.poll() while it holds its lock would hang the wait that follows.
            with stop_requests((signal.SIGINT, signal.SIGTERM)) as stop:
                while queue or running:
                    if stop.signum == signal.SIGTERM:
                        progress.close()
                        raise SystemExit(_terminate(running, sweep_dir))
                    if stop.signum is not None:
                        raise KeyboardInterrupt
                    while queue and free:
                        job, slot = queue.popleft(), free.pop(0)
                        process, task = self._launch(job, slot, spool)
                        running[job.num] = (process, job, slot, task)
                        progress.started(job.name)
                    for num, (process, job, slot, task) in list(running.items()):
                        if process.poll() is not None:
                            results[num] = _result(process.returncode, job, task)
                            free.append(slot)
                            free.sort(key=lambda s: s.index)
                            del running[num]
                            progress.ended(job.name, results[num].status == JobStatus.FAILED,
                                           _exit(process.returncode) + f" (log: {job.run_dir / 'log.txt'})")
                    progress.tick()
                    time.sleep(POLL_SECONDS)
        except KeyboardInterrupt:
            progress.close()
            _stop(running)
            print(f"rlconf: sweep stopped; continue it with: rlconf run -m resume={shlex.quote(str(sweep_dir))}",
                  file=sys.stderr)
            raise
        finally:
            progress.close()
        return [results[job.num] if job.num in results else failed(job, "not started") for job in jobs]

    def _launch(self, job: Job, slot: Slot, spool: Path) -> tuple[subprocess.Popen, Path]:
        """The job's process, in its own session (Ctrl-C reaches the launcher only), and its task file."""
        import cloudpickle

        task = spool / f"{job.num}.pkl"
        task.write_bytes(cloudpickle.dumps((self, (job.overrides, job.num, Singleton.get_state(), slot, None))))
        log = job.run_dir / "log.txt"
        with os.fdopen(open_inside(job.run_dir, log.name, os.O_WRONLY | os.O_APPEND | os.O_CREAT), "ab") as out:
            # The slot's GPUs are the process's from its start, before anything could touch CUDA.
            process = subprocess.Popen([sys.executable, "-m", "rlconf.launch.job", str(task), str(os.getpid())],
                                       stdout=out,
                                       stderr=subprocess.STDOUT, start_new_session=True,
                                       env={**os.environ, **slot.environment()})
        self.record(job, state="started", pid=process.pid, log=str(log), slot=slot.describe(),
                    started_at=time.time())
        return process, task


def _result(returncode: int, job: Job, task: Path) -> JobReturn:
    """The job's JobReturn (pickled by rlconf.launch.job), or a failure naming the run and its log."""
    import cloudpickle

    result_path = task.with_suffix(".result.pkl")
    if returncode == 0 and result_path.exists():
        result = cloudpickle.loads(result_path.read_bytes())
        result_path.unlink()
        task.unlink(missing_ok=True)
        return result
    log = job.run_dir / "log.txt"
    last = log_tail(log)
    return failed(job, f"run {job.run_dir} {_exit(returncode)}{': ' + last if last else ''} (log: {log})")


def _exit(returncode: int) -> str:
    """How a run's process ended, in words: ``exited with status 1``, ``stopped by SIGKILL``."""
    if returncode < 0 or returncode > 128:
        number = -returncode if returncode < 0 else returncode - 128
        if number in signal.Signals._value2member_map_:
            return f"stopped by {signal.Signals(number).name}"
    return f"exited with status {returncode}"


def _stop(running: dict) -> None:
    """Ctrl-C in the launcher: one SIGINT to every running job (each checkpoints and stops), then wait for
    them; a second Ctrl-C kills them."""
    if not running:
        return
    print(f"rlconf: stopping {len(running)} running run(s) at their next step (Ctrl-C again to kill them)",
          file=sys.stderr)
    for process, *_ in running.values():
        _signal(process, signal.SIGINT)
    try:
        for process, *_ in running.values():
            process.wait()
    except KeyboardInterrupt:
        for process, *_ in running.values():
            _signal(process, signal.SIGKILL)
        raise


def _terminate(running: dict, sweep_dir: Path) -> int:
    """SIGTERM to the launcher (kill, a scheduler): passed on to every running job, each of which checkpoints
    and writes its status ``stopped``; the launcher waits for them (a second SIGTERM changes nothing: the
    checkpoints are not cut short), says so in one line and exits as a process stopped by SIGTERM does."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    for process, *_ in running.values():
        _signal(process, signal.SIGTERM)
    for process, *_ in running.values():
        process.wait()
    print(f"rlconf: sweep stopped by SIGTERM; {len(running)} running run(s) stopped at a checkpoint; continue it "
          f"with: rlconf run -m resume={shlex.quote(str(sweep_dir))}", file=sys.stderr)
    return 128 + signal.SIGTERM


def _signal(process: subprocess.Popen, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # it has just ended
        process.send_signal(signum)
