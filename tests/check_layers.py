#!/usr/bin/env python3
"""The folders of src/core include one way only, in the order src/core/LAYERS gives.

Fails, naming each file:line, on an include of a folder on the including file's
line of LAYERS or above it, on a src/core folder LAYERS does not place, on an
include of src/driver, src/preload or tools (core/ is what they build on), and
when the drawing in docs/design.md's "## Layers" section differs from LAYERS.

  check_layers.py ROOT              check the tree at ROOT
  check_layers.py ROOT --drawing    print the drawing the docs must hold
"""
import re
import sys
from pathlib import Path

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^">]+)[">]')
# What the drawing is found by in docs/design.md.
DOC_SECTION = "## Layers"
DOC_FENCE = "```text"


def read_layers(path):
    """Each layer's folders, lowest layer first."""
    layers = []
    for line in path.read_text().splitlines():
        folders = line.split("#", 1)[0].split()
        if folders:
            layers.append(folders)
    return layers


def drawing(layers):
    """The layers highest first, as docs/design.md draws them."""
    return ["  ".join(folders) for folders in reversed(layers)]


def doc_drawing(doc):
    """The lines of the first text block of the Layers section, or None."""
    lines = doc.read_text().splitlines()
    try:
        start = lines.index(DOC_SECTION)
    except ValueError:
        return None
    section = []
    for line in lines[start + 1:]:
        if line.startswith("## "):
            break
        section.append(line)
    try:
        begin = section.index(DOC_FENCE) + 1
        end = section.index("```", begin)
    except ValueError:
        return None
    return [" ".join(line.split()) for line in section[begin:end] if line.strip()]


def folder_of(relative, rank):
    """The longest folder LAYERS names that holds `relative` (a path under src/core)."""
    parts = relative.split("/")[:-1]
    while parts:
        folder = "/".join(parts)
        if folder in rank:
            return folder
        parts.pop()
    return None


def check(root):
    core = root / "src" / "core"
    layers = read_layers(core / "LAYERS")
    rank = {}
    problems = []
    for level, folders in enumerate(layers):
        for folder in folders:
            if folder in rank:
                problems.append(f"src/core/LAYERS: {folder} is named twice")
            rank[folder] = level
            if not (core / folder).is_dir():
                problems.append(f"src/core/LAYERS: {folder} is no folder of src/core")

    sources = sorted(p for p in core.rglob("*") if p.suffix in (".h", ".cpp") and p.is_file())
    for source in sources:
        relative = source.relative_to(core).as_posix()
        own = folder_of(relative, rank)
        if own is None:
            problems.append(f"src/core/{relative}: its folder is not placed in src/core/LAYERS")
            continue
        for number, line in enumerate(source.read_text(errors="replace").splitlines(), start=1):
            match = INCLUDE.match(line)
            if not match:
                continue
            quoted, name = match.group(1) == '"', match.group(2)
            where = f"src/core/{relative}:{number}"
            if name.startswith(("driver/", "preload/", "tools/", "src/")):
                problems.append(f"{where}: includes {name}: src/core builds on nothing of src/driver, src/preload or tools")
                continue
            if not quoted:
                continue
            if name.startswith("core/"):
                target = name[len("core/"):]
                if not (core / target).is_file():
                    problems.append(f"{where}: includes {name}, which src/core does not hold")
                    continue
            elif (root / "include" / name).is_file():
                continue  # the public C API
            elif (source.parent / name).is_file():
                target = (source.parent / name).resolve().relative_to(core.resolve()).as_posix()
            else:
                problems.append(f"{where}: includes {name}, which is neither core/ nor include/")
                continue
            other = folder_of(target, rank)
            if other is None or other == own:
                continue  # an unplaced folder is reported by its own files
            if rank[other] >= rank[own]:
                relation = "beside" if rank[other] == rank[own] else "above"
                problems.append(f"{where}: {own} includes {name}, of {other}, which src/core/LAYERS puts {relation} it")

    doc = root / "docs" / "design.md"
    drawn = doc_drawing(doc)
    expected = [" ".join(line.split()) for line in drawing(layers)]
    if drawn != expected:
        problems.append(f"docs/design.md: the {DOC_SECTION} section's {DOC_FENCE} block must draw src/core/LAYERS, "
                        "highest first:\n" + "\n".join(drawing(layers)))
    return problems, len(sources)


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    root = Path(argv[1])
    if argv[2:] == ["--drawing"]:
        print("\n".join(drawing(read_layers(root / "src" / "core" / "LAYERS"))))
        return 0
    problems, files = check(root)
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} against the layers of src/core ({files} files read)")
        return 1
    print(f"src/core keeps its layers ({files} files read)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
