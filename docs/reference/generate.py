"""The site's generated reference, written by mkdocs-gen-files at build time (mkdocs.yml: plugins: gen-files):

- reference/commands.md: each command's help, as ``rlconf ... --help`` prints it (the CLI called in-process);
- reference/config.md: every config group's options with every key, its default and its comment, read from the
  YAML files of configs/ and launchers/ by a small line reader (YAML loaders drop comments);
- results/...: every PNG and SVG under benchmarks/results/, at the same relative path, for the pages' images.

Nothing here is committed output: the pages follow the code and the configs of the checkout being built.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "configs"
LAUNCHERS = ROOT / "launchers"
RESULTS = ROOT / "benchmarks" / "results"


# -- reference/commands.md ----------------------------------------------------------------------------------
COMMANDS = [
    ("rlconf --help", "The command's usage: every subcommand and a few examples."),
    ("rlconf run --help", "Compose a run (or a sweep) from config groups and keys, check it, and train it. "
                          "The lists of options and keys below are read from the config folders."),
    ("rlconf list --help", "The options of every config group, or of one group; `rlconf list components` lists "
                           "the registered agents, environment families and other components."),
    ("rlconf list", "What `rlconf list` prints with no argument."),
    ("rlconf check-env --help", "What rlconf will make of an environment before a run: gymnasium's checker, "
                                "its spaces and which agents can play it."),
    ("rlconf status --help", "How the runs of a run directory, a sweep or a folder of them are doing."),
    ("rlconf plot --help", "Learning curves of runs and sweeps, and aggregate comparisons of agents."),
    ("rlconf eval --help", "A trained run's test agent, played again from its checkpoint."),
    ("rlconf watch --help", "A trained run's test agent playing, in a window or into a video."),
    ("rlconf export --help", "A trained run's greedy policy as a TorchScript module or an ONNX graph."),
]


def command_output(command: str) -> str:
    """What ``command`` prints (stdout, then stderr), from rlconf's own ``main`` called in this process (the help
    texts are built from the config folders, so they are this checkout's), at a terminal width of 100."""
    from rlconf.cli import main

    out, err = io.StringIO(), io.StringIO()
    columns = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"  # argparse (rlconf plot) wraps its help to the terminal
    try:
        # argparse (rlconf plot) exits after printing its help
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), contextlib.suppress(SystemExit):
            main(command.split()[1:])
    finally:
        if columns is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = columns
    return (out.getvalue() + err.getvalue()).rstrip()


def commands_page() -> str:
    lines = ["# Commands", "",
             "Every `rlconf` subcommand's help, as the command prints it. This page is generated when the "
             "site is built (`docs/reference/generate.py` calls the command line of the checkout being built), "
             "so it always matches the code.", ""]
    for command, about in COMMANDS:
        text = command_output(command)
        if text.startswith("rlconf: error"):  # a page of errors would hide that a command lost its help
            raise RuntimeError(f"{command}: {text.splitlines()[0]}")
        lines += [f"## `{command}`", "", about, "", "```text", text, "```", ""]
    return "\n".join(lines)


# -- reference/config.md ------------------------------------------------------------------------------------
GROUPS = [
    ("agent", "The learning algorithm and its hyperparameters (`agent=dqn`). Required."),
    ("env", "The environment (`env=classic/cartpole`); its family picks the body, the networks and the "
            "agent's preset. Required."),
    ("body", "What sits between the environment and the agent: frame stacks, reward clipping, hidden "
             "velocities (`body=atari`). Set by the env's family; may be overridden."),
    ("approximation", "The networks (`approximation=nature_cnn`); how every network is optimised is under "
                      "the top-level `approximation.*` keys above."),
    ("hardware", "Device, parallel environments, samplers, learners and what a launcher gives each run "
                 "(`hardware=gpu`)."),
    ("logger", "Where scalars go besides the CSV files, which are always written (`logger=[csv,tensorboard]`)."),
    ("launcher", "Where the runs of a sweep execute (`launcher=slurm` with `-m`); the files are in `launchers/`."),
    ("sweep", "A named sweep (`-m sweep=seeds`, `-m sweep=optuna_dqn`)."),
    ("experiment", "A whole setting pinned by name: agent, env, budget and the rest "
                   "(`experiment=atari_pong_ppo`)."),
    ("preset", "Per-family hyperparameters of an agent (`preset/<family>/<agent>`), and of a body that makes "
               "another task (`preset/<family>/<body>/<agent>`). Applied by the defaults list, never chosen "
               "by hand: `rlconf run --cfg job ...` prints `# preset: ...` with the ones a run gets."),
    ("family", "A family of environments: its body, networks and budgets. Set by the chosen env, never by "
               "hand."),
]


@dataclass
class Key:
    path: str  # dotted, within the file
    indent: int
    value: str = ""  # as written; "" for a mapping or a block list
    comments: list[str] = field(default_factory=list)
    items: list[str] = field(default_factory=list)  # a block list's items
    children: int = 0
    inline: bool = False  # written with a comment beside it, which a deeper comment-only line continues


@dataclass
class ConfigFile:
    header: list[str]  # the first comment's lines (no @package line)
    package: str | None  # the @package directive, if any
    defaults: list[str]  # the defaults list's entries, each with its comment
    keys: list[Key]


KEY_LINE = re.compile(r"^(?P<indent> *)(?P<key>[^\s#:-][^:#]*?|'[^']*'|\"[^\"]*\"):(?:\s+(?P<rest>.*))?$")


def split_comment(text: str) -> tuple[str, str]:
    """``value  # comment`` -> (value, comment); a ``#`` inside quotes, or not after a space, is the value's."""
    quote = None
    for i, char in enumerate(text):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (i == 0 or text[i - 1] in " \t"):
            return text[:i].rstrip(), text[i + 1:].strip()
    return text.rstrip(), ""


def read_config(path: Path) -> ConfigFile:
    """A line reader for the project's YAML: block mappings, block and flow lists and scalars, each key's
    comment beside it (and its continuation lines, indented past the key) or in a comment block above it."""
    lines = path.read_text().splitlines()
    header: list[str] = []
    package = None
    i = 0
    while i < len(lines) and lines[i].lstrip().startswith("#"):
        text = lines[i].strip().lstrip("#").strip()
        if text.startswith("@package"):
            package = text.split(None, 1)[1].strip()
        elif not text.startswith("Generated by:"):
            header.append(text)
        i += 1
    keys: list[Key] = []
    defaults: list[str] = []
    stack: list[Key] = []
    pending: list[str] = []
    last: Key | None = None
    for line in lines[i:]:
        stripped = line.strip()
        indent = len(line) - len(line.lstrip(" "))
        if not stripped:
            pending = []
            continue
        if stripped.startswith("#"):
            text = stripped.lstrip("#").strip()
            if last is not None and last.inline and not pending and indent > last.indent:
                last.comments.append(text)  # the comment beside the key, continued
            else:
                pending.append(text)
            continue
        if stripped.startswith("- ") or stripped == "-":
            item, comment = split_comment(stripped[1:].strip())
            owner = stack[-1] if stack else None
            if owner is not None and owner.path == "defaults":
                defaults.append(f"`{item}`" + (f": {markdown_text(comment)}" if comment else ""))
            elif owner is not None:
                owner.items.append(item)
                if comment:
                    owner.comments.append(comment)
            pending = []
            continue
        match = KEY_LINE.match(line)
        if not match:  # a flow collection's continuation line: part of the last key's value
            if last is not None:
                last.value = f"{last.value} {split_comment(stripped)[0]}".strip()
            continue
        while stack and stack[-1].indent >= indent:
            stack.pop()
        value, comment = split_comment(match["rest"] or "")
        name = match["key"].strip("'\"")
        parent = stack[-1] if stack else None
        if parent is not None:
            parent.children += 1
        key = Key(path=f"{parent.path}.{name}" if parent else name, indent=indent, value=value,
                  comments=[*pending, *([comment] if comment else [])], inline=bool(comment))
        pending = []
        if key.path != "defaults" and not (parent and parent.path == "defaults"):
            keys.append(key)
        if not value:
            stack.append(key)
        last = key
    return ConfigFile(header, package, defaults, keys)


def markdown_text(text: str) -> str:
    """A comment as table text: what Markdown or HTML would read as markup is escaped."""
    text = re.sub(r"([\\`*_\[\]])", r"\\\1", text)
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("|", "\\|")


def code(text: str) -> str:
    text = text.replace("|", "\\|")
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def comment_text(lines: list[str]) -> str:
    """Comment lines joined into one line of table text."""
    return " ".join(line for line in lines if line)


def paragraph(lines: list[str]) -> str:
    """A file's first comment as Markdown: wrapped lines joined, a line that starts a new sentence (or a new
    note: a capital after a full stop, a colon, a bracket or a word) kept on a line of its own."""
    out: list[str] = []
    for line in filter(None, lines):
        if out and not (line[:1].isupper() and re.search(r"[.:)\w]$", out[-1])):
            out[-1] = f"{out[-1]} {line}"
        else:
            out.append(line)
    return "  \n".join(markdown_text(line) for line in out)


def key_rows(config: ConfigFile, prefix: str) -> list[str]:
    """The table of a file's keys: each key fully qualified, its default as written, and its comment. A mapping
    (a key with keys below it) gets a row only where it carries a comment."""
    rows = []
    for key in config.keys:
        if key.children and not key.comments:
            continue
        dotted = f"{prefix}.{key.path}" if prefix else key.path
        if key.children:
            default = ""
        elif key.items:
            default = code("[" + ", ".join(key.items) + "]")
        else:
            default = code(key.value or "null")
        rows.append(f"| {code(dotted)} | {default} | {markdown_text(comment_text(key.comments))} |")
    if not rows:
        return []
    return ["| key | default | what it does |", "| --- | --- | --- |", *rows]


def package_prefix(config: ConfigFile, option: str, packages: dict[str, str]) -> str:
    """Where a file's keys land in the run's config: its ``@package`` (``_global_``: at the top), else the
    package a defaults list gives it (``/family/atari/game@env``), else its group (``agent``)."""
    if config.package == "_global_":
        return ""
    return config.package or packages.get(option, option.split("/")[0])


def option_section(option: str, path: Path, config: ConfigFile, prefix: str) -> list[str]:
    lines = [f"### {option}", ""]
    if config.header:
        lines += [paragraph(config.header), ""]
    lines += [f"File: `{path.relative_to(ROOT).as_posix()}`" + (
        f"; its keys are under `{prefix}`" if prefix and not prefix.startswith(option.split('/')[0]) else ""), ""]
    if config.defaults:
        lines += ["Defaults list: " + "; ".join(config.defaults) + ".", ""]
    lines += [*key_rows(config, prefix), ""]
    return lines


def group_files(group: str) -> list[tuple[str, Path]]:
    root = LAUNCHERS if (LAUNCHERS / group).is_dir() else CONFIGS
    files = sorted((root / group).glob("**/*.yaml"))
    return [(path.relative_to(root / group).with_suffix("").as_posix(), path) for path in files]


def package_overrides() -> dict[str, str]:
    """Options that the defaults lists place under another package: ``/family/atari/game@env`` -> env."""
    found: dict[str, str] = {}
    for path in [*CONFIGS.glob("**/*.yaml"), *LAUNCHERS.glob("**/*.yaml")]:
        for entry in read_config(path).defaults:
            match = re.match(r"`(?:override )?/?([\w/]+)@(\w+)", entry)
            if match and "/" in match[1]:
                found[match[1]] = match[2]
    return found


def is_generated(path: Path) -> bool:
    return "# Generated by:" in path.read_text()


def generated_table(group: str, files: list[tuple[str, Path]]) -> list[str]:
    """Options generated from one template (the Atari games: only their name and id differ): one table."""
    folder = files[0][0].rsplit("/", 1)[0]
    lines = [f"### {group}/{folder} (the games)", "",
             f"{len(files)} options generated from one template (each file says by which command), each setting "
             f"only `env.name` and `env.id`; the keys they share are those of `family/atari/game` below "
             "(`env.kwargs.*`).", "",
             "| option | what it is | `env.id` |", "| --- | --- | --- |"]
    for option, path in files:
        config = read_config(path)
        ids = [k.value for k in config.keys if k.path == "env.id"]
        lines.append(f"| {code(f'{group}/{option}')} | {markdown_text(comment_text(config.header))} | "
                     f"{code(ids[0]) if ids else ''} |")
    return [*lines, ""]


def config_page() -> str:
    top = read_config(CONFIGS / "config.yaml")
    lines = ["# Config keys", "",
             "Every config group, every option of each, and every key an option sets, with its default and the "
             "comment written beside it in the YAML file. This page is generated from `configs/` and `launchers/` "
             "when the site is built (`docs/reference/generate.py`). On the command line, `rlconf list GROUP` "
             "lists a group's options, and `rlconf run ... --cfg job` prints every key of one run as composed.",
             "", "## Top-level keys", "",
             "`configs/config.yaml`, the primary config:", "", paragraph(top.header), "",
             "Its defaults list (the order in which the groups compose; `???`: must be chosen):", ""]
    lines += [f"- {entry}" for entry in top.defaults]
    top.keys = [k for k in top.keys if not k.path.startswith("hydra")]
    lines += ["", *key_rows(top, ""), "",
              "The `hydra:` block of `configs/config.yaml` sets where Hydra writes; rlconf makes run and sweep "
              "directories itself (`logdir`).", ""]
    packages = package_overrides()
    for group, about in GROUPS:
        files = group_files(group)
        lines += [f"## {group}", "", about, ""]
        generated: dict[str, list[tuple[str, Path]]] = {}
        for option, path in files:
            if is_generated(path) and "/" in option and group == "env":
                generated.setdefault(option.rsplit("/", 1)[0], []).append((option, path))
        shown = set()
        for option, path in files:
            folder = option.rsplit("/", 1)[0]
            if folder in generated:
                if folder not in shown:
                    lines += generated_table(group, generated[folder])
                    shown.add(folder)
                continue
            config = read_config(path)
            full = f"{group}/{option}"
            prefix = package_prefix(config, full, packages)
            lines += option_section(full, path, config, prefix)
    return "\n".join(lines)


# -- results/ -----------------------------------------------------------------------------------------------
def result_images() -> list[Path]:
    """The PNG and SVG files under benchmarks/results/ that git tracks or would (ignored files left out)."""
    try:
        listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "--",
                                 "benchmarks/results"], cwd=ROOT, capture_output=True, text=True, check=True)
        paths = [ROOT / line for line in listed.stdout.splitlines()]
    except (OSError, subprocess.CalledProcessError):  # no git, or not a checkout: every file there
        paths = list(RESULTS.rglob("*"))
    return sorted(p for p in paths if p.suffix.lower() in (".png", ".svg") and p.is_file())


def main() -> None:
    import mkdocs_gen_files  # here, so tests/test_docs.py imports this file's functions without the docs extra

    with mkdocs_gen_files.open("reference/commands.md", "w") as page:
        page.write(commands_page())
    mkdocs_gen_files.set_edit_path("reference/commands.md", "reference/generate.py")
    with mkdocs_gen_files.open("reference/config.md", "w") as page:
        page.write(config_page())
    mkdocs_gen_files.set_edit_path("reference/config.md", "reference/generate.py")
    for image in result_images():
        with mkdocs_gen_files.open(f"results/{image.relative_to(RESULTS).as_posix()}", "wb") as copy:
            copy.write(image.read_bytes())


if __name__ in ("<run_path>", "__main__"):  # mkdocs-gen-files runs this file with runpy.run_path
    main()
