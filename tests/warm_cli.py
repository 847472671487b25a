"""The real ``rlconf`` command in its own process, started warm.

A test's ``rlconf`` call used to start ``python -m rlconf`` cold: importing torch, Hydra and gymnasium, and
torch's compiler stack that an optimiser's first construction pulls in, took five to nine seconds of the ten a
short run costs, hundreds of times over in the suite. A warm server, one per pytest worker, imports all of that
once; each call is a fork of it that becomes the command: its own process, working directory, environment,
``sys.argv``, ``sys.path[0]`` and standard streams as ``python -m rlconf ARGS`` would have them, ending with
the interpreter's own exit steps (non-daemon threads joined, ``atexit`` handlers run) and its exit status.

What a fork cannot reproduce goes to a cold process instead (``run_cli_in`` in tests/conftest.py decides): a
call with a PYTHONPATH (only a fresh interpreter reads it; a ``sitecustomize`` there runs only at start-up, and
a plugin found there must not be shadowed by a module imported already).

This file is also the server: ``python warm_cli.py`` reads one JSON request a line on stdin and answers on
stdout. Its top level imports only the standard library, so a ``spawn`` child that re-imports it stays light.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path


# -- the server (a separate process) --------------------------------------------------------------------------
def serve() -> None:
    """Import what every command needs, then fork one child per request and report its pid and exit status."""
    requests = os.fdopen(os.dup(0), "r")
    replies = os.fdopen(os.dup(1), "w")
    for fd in (0, 1):  # what imports print must not corrupt the replies
        _redirect(fd, os.devnull, os.O_RDWR)
    before = dict(os.environ)
    import gymnasium  # noqa: F401
    import hydra  # noqa: F401
    import torch._dynamo  # noqa: F401  (torch.optim.Optimizer's first construction imports it: two seconds)

    import rlconf.cli  # noqa: F401
    import rlconf.experiments.run  # noqa: F401

    # What these imports set in the environment (gymnasium: PYGAME_HIDE_SUPPORT_PROMPT), as they would in a fresh
    # interpreter: each command's process gets it on top of the environment it is given.
    imported = {name: value for name, value in os.environ.items() if before.get(name) != value}
    replies.write("ready\n")
    replies.flush()
    for line in requests:
        request = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            requests.close()
            replies.close()
            _become_the_command(request, imported)  # never returns
        replies.write(json.dumps({"pid": pid}) + "\n")
        replies.flush()
        _, status = os.waitpid(pid, 0)
        replies.write(json.dumps({"returncode": os.waitstatus_to_exitcode(status)}) + "\n")
        replies.flush()


def _become_the_command(request: dict, imported: dict[str, str]) -> None:
    """In the forked child: set up the process as ``python -m rlconf ARGS`` in ``cwd`` with ``env`` would be once
    it had made the server's imports (``imported``: what they set in the environment), run it, and end as the
    interpreter ends."""
    import atexit
    import faulthandler
    import importlib.util
    import threading
    import traceback
    import types

    code = 1
    try:
        os.setpgid(0, 0)  # a group of its own, so a timeout kills what it started too
        _redirect(0, os.devnull, os.O_RDONLY)
        _redirect(1, request["stdout"], os.O_WRONLY)
        _redirect(2, request["stderr"], os.O_WRONLY)
        # A call past its timeout is first asked where its threads are (WarmCLI.run): SIGQUIT, which rlconf leaves
        # alone (SIGUSR1 and SIGUSR2 are Slurm's warnings to it).
        faulthandler.register(signal.SIGQUIT, file=sys.stderr, all_threads=True)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        os.environ.update(imported)
        spec = importlib.util.find_spec("rlconf.__main__")
        main_module = types.ModuleType("__main__")  # as -m makes it: spawn children do not re-run a main file
        main_module.__spec__, main_module.__file__ = spec, spec.origin
        sys.modules["__main__"] = main_module
        sys.argv = [spec.origin, *request["args"]]
        sys.path[0] = os.getcwd()  # -m puts the working directory first on the path
        from rlconf.cli import main

        try:
            code = main(sys.argv[1:])
        except SystemExit as stop:
            code = stop.code
        code = _exit_status(code)
    except BaseException:  # noqa: BLE001 - as the interpreter reports an uncaught exception
        traceback.print_exc()
        code = 1
    try:
        threading._shutdown()  # the interpreter's exit: non-daemon threads joined, then atexit handlers
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


def _redirect(fd: int, path: str, flags: int) -> None:
    """File descriptor ``fd`` opened on ``path``, with no other descriptor left open for it."""
    opened = os.open(path, flags)
    os.dup2(opened, fd)
    os.close(opened)


def _exit_status(code: object) -> int:
    """What ``sys.exit(code)`` makes the process's exit status."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


# -- the client (in the pytest worker) ------------------------------------------------------------------------
class CommandTimeout(subprocess.TimeoutExpired):
    """subprocess.TimeoutExpired that says what the command was doing: its processes then (state, kernel wait,
    command line) and the end of its stderr, where its threads' stacks were printed before it was killed."""

    def __init__(self, cmd: list[str], timeout: float, output: str, stderr: str, processes: str):
        super().__init__(cmd, timeout, output, stderr)
        self.processes = processes

    def __str__(self) -> str:
        tail = "\n".join((self.stderr or "").splitlines()[-60:])
        return f"{super().__str__()}\nits processes:\n{self.processes}\nthe end of its stderr:\n{tail}"


def process_stat(pid: int | str) -> tuple[str, int] | None:
    """Process ``pid``'s state letter (``Z``: a zombie) and parent pid, from /proc; None once it is gone."""
    try:
        fields = (Path("/proc") / str(pid) / "stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None
    return fields[0], int(fields[1])


def _processes(pid: int) -> str:
    """Process ``pid`` and its descendants (whatever their session), a line each: pid, state, what the kernel
    has it wait on, command line."""
    stats = {int(entry.name): stat for entry in Path("/proc").glob("[0-9]*") if (stat := process_stat(entry.name))}
    children: dict[int, list[int]] = {}
    for child, (_, parent) in stats.items():
        children.setdefault(parent, []).append(child)
    lines, todo = [], [pid]
    while todo:
        current = todo.pop()
        todo += children.get(current, [])
        stat = stats.get(current)
        if stat is None:  # gone before the listing
            continue
        proc = Path("/proc") / str(current)
        with contextlib.suppress(OSError):
            wchan = (proc / "wchan").read_text() or "-"
            command = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")[:160]
            lines.append(f"  {current} {stat[0]} {wchan} {command}")
    return "\n".join(lines)


class WarmCLI:
    """One warm server; ``run`` returns what ``subprocess.run([python, -m, rlconf, *args], capture_output=True,
    text=True, timeout=...)`` would."""

    def __init__(self, env: dict[str, str]) -> None:
        self._scratch = tempfile.TemporaryDirectory(prefix="rlconf-warm-")
        self._server = subprocess.Popen([sys.executable, __file__], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        cwd=self._scratch.name, env=env)
        self._replies = b""
        ready = self._reply(timeout=600)
        if ready != "ready":
            raise RuntimeError(f"the warm rlconf server did not start (it said {ready!r})")

    def run(self, args: list[str], cwd: Path, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess:
        command = [sys.executable, "-m", "rlconf", *args]
        out, err = (Path(self._scratch.name) / name for name in ("stdout", "stderr"))
        out.write_text("")
        err.write_text("")
        request = {"args": list(args), "cwd": str(cwd), "env": env, "stdout": str(out), "stderr": str(err)}
        self._server.stdin.write((json.dumps(request) + "\n").encode())
        self._server.stdin.flush()
        pid = json.loads(self._reply(timeout=60))["pid"]
        finished = self._reply(timeout)
        timed_out = finished is None
        processes = ""
        if timed_out:  # as subprocess.run's timeout: the command (and what it started) killed, once seen
            processes = _processes(pid)
            finished = self._traced(pid, err)
            with contextlib.suppress(ProcessLookupError):  # it ended just now
                os.killpg(pid, signal.SIGKILL)
            finished = finished or self._reply(timeout=60)
        stdout, stderr = out.read_text(), err.read_text()
        if timed_out or finished is None:
            raise CommandTimeout(command, timeout, stdout, stderr, processes)
        return subprocess.CompletedProcess(command, json.loads(finished)["returncode"], stdout, stderr)

    def _traced(self, pid: int, err: Path) -> str | None:
        """Have the command print its threads' stacks to its stderr (SIGQUIT: faulthandler), waiting a few
        seconds for them; the server's reply if the command ended meanwhile."""
        before = err.stat().st_size
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGQUIT)
        for _ in range(50):
            if err.stat().st_size > before:
                break
            time.sleep(0.1)
        return self._reply(timeout=1)

    def _reply(self, timeout: float) -> str | None:
        """The server's next line, or None when none came within ``timeout`` seconds."""
        fd = self._server.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self._replies:
            if not select.select([fd], [], [], max(0.0, deadline - time.monotonic()))[0]:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                raise RuntimeError(f"the warm rlconf server ended (exit {self._server.wait()})")
            self._replies += chunk
        line, self._replies = self._replies.split(b"\n", 1)
        return line.decode()

    def close(self) -> None:
        self._server.stdin.close()
        self._server.wait()
        self._scratch.cleanup()


if __name__ == "__main__":
    serve()
