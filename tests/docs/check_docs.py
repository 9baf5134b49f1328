#!/usr/bin/env python3
"""Checks the Markdown documentation against the repository and the `normnet` command, so that a
guide cannot drift from the code it describes. Standard library only; each check takes well
under a second.

    check_docs.py links     --root SRC
    check_docs.py options   --root SRC --normnet BIN
    check_docs.py shell     --root SRC --normnet BIN
    check_docs.py generated --root SRC [--normnet BIN]
    check_docs.py history   --root SRC

links      every relative link or image of every Markdown file (README.md, docs/, apps/, data/,
           tests/) names a file that exists; a #fragment into a Markdown file names one of its
           headings (GitHub's anchors).
options    every option that `normnet [SUB ...] --help` lists appears in docs/cli.md, inside a
           section whose heading names that subcommand in code (`normnet train`, `normnet lm
           sample`; a heading may name several). Top-level options may appear anywhere.
shell      every command line of a ```sh / ```bash / ```console block, every `$ ...` line of any
           block and every inline code span starting with `normnet ` that runs normnet uses only
           subcommands and options that its --help lists.
history    README.md has at most 400 lines, and no prose line of README.md or of a guide in docs/
           carries a date outside a generated block (history belongs in git).
generated  every <!-- generated: BLOCK --> is closed by <!-- end: BLOCK --> and names a block of
           docs/generate.py, the program that rewrites it; with --normnet, every command that
           program runs uses options that exist.

Exit status 0 when everything holds; otherwise one line per problem (file:line: what) and 1.
"""
import argparse
import functools
import importlib.util
import os
import pathlib
import re
import shlex
import subprocess
import sys

SKIP_DIRS = {".git", "runs", "node_modules", "__pycache__"}


def markdown_files(root):
    """Every Markdown file of the source tree, build folders and run outputs excluded."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        rel = pathlib.Path(dirpath).relative_to(root)
        dirnames[:] = sorted(d for d in dirnames
                             if d not in SKIP_DIRS and not d.startswith("build")
                             and not (rel == pathlib.Path("data") and d == "mnist")
                             and not (pathlib.Path(dirpath, d, "CMakeCache.txt").exists()))
        if rel == pathlib.Path(".") and "compare" in dirnames:
            dirnames.remove("compare")  # `normnet compare`'s default output folder
        out += [pathlib.Path(dirpath, f) for f in sorted(filenames) if f.endswith(".md")]
    return out


FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*([^\s`]*)")


def split_blocks(text):
    """Yields (kind, info, first_line_number, lines): kind "text" for prose, "code" for a fenced
    block's body (info: its language word, lower case)."""
    lines = text.split("\n")
    i, start, prose = 0, 1, []
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            prose.append(lines[i])
            i += 1
            continue
        if prose:
            yield "text", "", start, prose
        fence, info = m.group(2), m.group(3).lower()
        body, j = [], i + 1
        while j < len(lines) and not lines[j].strip().startswith(fence[0] * len(fence)):
            body.append(lines[j])
            j += 1
        yield "code", info, i + 2, body
        i, start, prose = j + 1, j + 2, []
    if prose:
        yield "text", "", start, prose


INLINE_CODE = re.compile(r"(`+)(.+?)\1")


def without_inline_code(line):
    return INLINE_CODE.sub(lambda m: " " * len(m.group(0)), line)


# ---------------------------------------------------------------------------------------- links

LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def github_anchor(heading):
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text only
    text = text.replace("`", "").strip().lower()
    text = "".join(c for c in text if c.isalnum() or c in " -_")
    return text.replace(" ", "-")


@functools.lru_cache(maxsize=None)
def anchors_of(path):
    seen, out = {}, set()
    for kind, _, _, lines in split_blocks(pathlib.Path(path).read_text(encoding="utf-8")):
        if kind != "text":
            continue
        for line in lines:
            m = HEADING.match(line)
            if m:
                a = github_anchor(m.group(2))
                n = seen.get(a, 0)
                seen[a] = n + 1
                out.add(a if n == 0 else f"{a}-{n}")
    for m in re.finditer(r"<a\s+(?:name|id)=\"([^\"]+)\"", pathlib.Path(path).read_text(encoding="utf-8")):
        out.add(m.group(1))
    return frozenset(out)


def check_links(root):
    problems = []
    for md in markdown_files(root):
        for kind, _, first, lines in split_blocks(md.read_text(encoding="utf-8")):
            if kind != "text":
                continue
            for n, line in enumerate(lines, first):
                for m in LINK.finditer(without_inline_code(line)):
                    target = m.group(1)
                    if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # http:, mailto:, ...
                        continue
                    path, _, fragment = target.partition("#")
                    dest = (md.parent / path).resolve() if path else md.resolve()
                    where = f"{md.relative_to(root)}:{n}"
                    if not dest.exists():
                        problems.append(f"{where}: link to {target}: {dest.relative_to(root.resolve()) if dest.is_relative_to(root.resolve()) else dest} does not exist")
                    elif fragment and dest.suffix == ".md" and fragment not in anchors_of(str(dest)):
                        problems.append(f"{where}: link to {target}: no heading with anchor #{fragment} in {dest.name}")
    return problems


# ------------------------------------------------------------------------------ the command line

HELP_OPTION = re.compile(r"^\s{2}(-[^\s]*)")
SUBCOMMAND_LINE = re.compile(r"^\s{2}([a-z][a-z0-9-]*)\s{2,}\S")


@functools.lru_cache(maxsize=None)
def cli_tree(normnet, path=()):
    """{"options": set of --names, "subcommands": {name: tree}} of `normnet PATH --help`."""
    res = subprocess.run([normnet, *path, "--help"], capture_output=True, text=True, timeout=30)
    if res.returncode != 0:
        raise SystemExit(f"check_docs: `normnet {' '.join(path)} --help` failed ({res.returncode}): {res.stderr.strip()}")
    options, subs, in_subs = set(), {}, False
    for line in res.stdout.splitlines():
        if not line.strip():
            continue
        if not line.startswith(" "):
            in_subs = line.startswith("Subcommands")
            continue
        if in_subs:
            m = SUBCOMMAND_LINE.match(line)
            if m:
                subs[m.group(1)] = None
            continue
        m = HELP_OPTION.match(line)
        if m:
            for name in m.group(1).split(","):
                name = re.sub(r"\{.*$", "", name)
                if name.startswith("--"):
                    options.add(name)
    return {"options": options, "subcommands": {s: cli_tree(normnet, path + (s,)) for s in subs}}


def every_command(tree, path=()):
    yield path, tree
    for name, sub in tree["subcommands"].items():
        yield from every_command(sub, path + (name,))


def sections(text):
    """(heading text, level, body) for every heading of a Markdown text; the body runs to the next
    heading of the same or a higher level, so it holds the subsections."""
    heads, lines, in_code = [], text.split("\n"), False
    for i, line in enumerate(lines):
        if FENCE.match(line):
            in_code = not in_code
        m = None if in_code else HEADING.match(line)
        if m:
            heads.append((i, len(m.group(1)), m.group(2)))
    for k, (i, level, title) in enumerate(heads):
        end = next((j for j, lv, _ in heads[k + 1:] if lv <= level), len(lines))
        yield title, level, "\n".join(lines[i:end])


def mentions(text, option):
    return re.search(r"(?<![\w-])" + re.escape(option) + r"(?![\w-])", text) is not None


def check_options(root, normnet):
    cli = root / "docs" / "cli.md"
    if not cli.exists():
        return ["docs/cli.md does not exist"]
    text = cli.read_text(encoding="utf-8")
    secs = list(sections(text))
    problems = []
    for path, tree in every_command(cli_tree(normnet)):
        options = sorted(tree["options"] - {"--help"})
        if not path:
            problems += [f"docs/cli.md: `normnet --help` lists {o}, which the guide never mentions"
                         for o in options if not mentions(text, o)]
            continue
        if not options:  # `normnet lm`: subcommands only
            continue
        name = "normnet " + " ".join(path)
        mine = [body for title, _, body in secs if f"`{name}`" in title]
        if not mine:
            problems.append(f"docs/cli.md: no section heading names `{name}` (e.g. \"## `{name}`\")")
            continue
        body = "\n".join(mine)
        problems += [f"docs/cli.md: `{name} --help` lists {o}, missing from the sections on `{name}`"
                     for o in options if not mentions(body, o)]
    return problems


SHELL_INFO = {"sh", "bash", "shell", "console", "shell-session"}
SEPARATORS = {"&&", "||", ";", "|", "&", "(", ")", "$(", ">", ">>", "<", "2>", "2>&1", "|&"}


def logical_lines(lines, every_line):
    """Command lines of a block, continuations joined; `$ ` prompts stripped. every_line: a shell
    block, where each line is a command; otherwise only `$ ` lines are."""
    out, current, first = [], None, 0
    for n, raw in enumerate(lines):
        line = raw.rstrip()
        if current is None:
            s = line.lstrip()
            if s.startswith("$ "):
                s = s[2:]
            elif not every_line:
                continue
            current, first = s, n
        else:
            current += " " + line.strip()
        if current.endswith("\\"):
            current = current[:-1]
            continue
        out.append((first, current))
        current = None
    if current is not None:
        out.append((first, current))
    return out


def commands_of(line):
    """The token lists of the simple commands in a shell line (split at && || ; | and parentheses)."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars="();<>|&")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    try:
        tokens = list(lexer)
    except ValueError:  # an unclosed quote: prose, not a command
        return []
    out, cmd = [], []
    for t in tokens:
        if t in SEPARATORS or set(t) <= set("();<>|&"):
            if cmd:
                out.append(cmd)
            cmd = []
        else:
            cmd.append(t)
    if cmd:
        out.append(cmd)
    return out


def check_invocation(tokens, cli):
    """What is wrong with one command's use of normnet (empty if it does not run normnet)."""
    # The program itself, not a value (`--normnet PATH`, `--order normnet`, `--prefix /opt/normnet`).
    at = next((i for i, t in enumerate(tokens) if os.path.basename(t) == "normnet" and "$" not in t
               and not t.startswith("-") and "=" not in t and not (i and tokens[i - 1].startswith("-"))),
              None)
    if at is None:
        return []
    tree, path, problems = cli, [], []
    rest = tokens[at + 1:]
    while rest and not rest[0].startswith("-") and rest[0] in tree["subcommands"]:
        path.append(rest[0])
        tree = tree["subcommands"][rest[0]]
        rest = rest[1:]
    if rest and not rest[0].startswith("-") and not re.fullmatch(r"[a-z][a-z0-9-]*", rest[0]):
        return []  # a placeholder: `normnet SUBCOMMAND --help`, `normnet ...`
    if rest and tree["subcommands"] and not rest[0].startswith("-") and not path:
        problems.append(f"`normnet {rest[0]}`: no such subcommand (normnet has {', '.join(tree['subcommands'])})")
    elif rest and tree["subcommands"] and not rest[0].startswith("-"):
        problems.append(f"`normnet {' '.join(path)} {rest[0]}`: no such subcommand")
    for t in rest:
        if t.startswith("--") and len(t) > 2:
            name = t.split("=", 1)[0]
            if name != "--help" and name not in tree["options"]:
                problems.append(f"`{' '.join(['normnet', *path])}` has no option {name}")
    return problems


def check_shell(root, normnet):
    cli = cli_tree(normnet)
    problems = []
    for md in markdown_files(root):
        for kind, info, first, lines in split_blocks(md.read_text(encoding="utf-8")):
            if kind == "code":
                candidates = logical_lines(lines, info in SHELL_INFO)
            else:
                candidates = [(n, m.group(2)) for n, line in enumerate(lines)
                              for m in INLINE_CODE.finditer(line) if m.group(2).startswith("normnet ")]
            for n, line in candidates:
                for cmd in commands_of(line):
                    problems += [f"{md.relative_to(root)}:{first + n}: {p}" for p in check_invocation(cmd, cli)]
    return problems


# ------------------------------------------------------------------------------ generated blocks

GENERATED = re.compile(r"<!-- generated: ([a-z0-9-]+) -->")
END = re.compile(r"<!-- end: ([a-z0-9-]+) -->")


def check_generated(root, normnet):
    spec = importlib.util.spec_from_file_location("generate", root / "docs" / "generate.py")
    generate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generate)
    known = set(generate.BLOCKS)
    problems = []
    for md in markdown_files(root):
        open_at = None
        for n, line in enumerate(md.read_text(encoding="utf-8").split("\n"), 1):
            where = f"{md.relative_to(root)}:{n}"
            m, e = GENERATED.search(line), END.search(line)
            if m:
                if open_at:
                    problems.append(f"{where}: generated block {m.group(1)} opens inside {open_at[0]}")
                if m.group(1) not in known:
                    problems.append(f"{where}: generated block {m.group(1)}: docs/generate.py has no such block")
                open_at = (m.group(1), n)
            elif e:
                if not open_at or open_at[0] != e.group(1):
                    problems.append(f"{where}: <!-- end: {e.group(1)} --> closes no open block of that name")
                open_at = None
        if open_at:
            problems.append(f"{md.relative_to(root)}:{open_at[1]}: generated block {open_at[0]} is never closed")
    if normnet:  # the commands that will write the blocks use options that exist
        cli = cli_tree(normnet)
        for command in generate.COMMANDS:
            for cmd in commands_of(command):
                problems += [f"docs/generate.py: `{command}`: {p}" for p in check_invocation(cmd, cli)]
    return problems


# ------------------------------------------------------------------------------- no diaries

README_LINES = 400
DATE = re.compile(r"\b20\d\d-[01]\d-[0-3]\d\b")


def check_history(root):
    """The README stays a front door (at most 400 lines), and neither it nor a guide carries dated
    prose: measurement history belongs in git. Dates may appear only inside generated blocks (whose
    provenance line names the machine and the date) and in the generated reports of docs/experiments/*/."""
    problems = []
    readme = root / "README.md"
    n = len(readme.read_text(encoding="utf-8").splitlines())
    if n > README_LINES:
        problems.append(f"README.md: {n} lines, more than {README_LINES}: move the detail into a guide of docs/")
    guides = [readme] + [p for p in sorted((root / "docs").rglob("*.md")) if p.parent.parent != root / "docs" / "experiments"]
    for md in guides:
        generated = False
        for kind, _, first, lines in split_blocks(md.read_text(encoding="utf-8")):
            for k, line in enumerate(lines, first):
                if GENERATED.search(line):
                    generated = True
                elif END.search(line):
                    generated = False
                elif kind == "text" and not generated and DATE.search(without_inline_code(line)):
                    problems.append(f"{md.relative_to(root)}:{k}: a dated line outside a generated block: "
                                    "history goes in commit messages, figures in generated blocks")
    return problems


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("check", choices=["links", "options", "shell", "generated", "history"])
    p.add_argument("--root", type=pathlib.Path, default=pathlib.Path(__file__).resolve().parents[2])
    p.add_argument("--normnet", help="the normnet program (options, shell; generated: also check its commands)")
    a = p.parse_args()
    root = a.root.resolve()
    if a.check in ("options", "shell") and not a.normnet:
        p.error(f"{a.check} needs --normnet")
    problems = {"links": lambda: check_links(root),
                "options": lambda: check_options(root, a.normnet),
                "shell": lambda: check_shell(root, a.normnet),
                "generated": lambda: check_generated(root, a.normnet),
                "history": lambda: check_history(root)}[a.check]()
    for line in problems:
        print(line)
    print(f"check_docs {a.check}: {len(problems)} problem(s) in {len(markdown_files(root))} Markdown files")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
