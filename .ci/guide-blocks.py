#!/usr/bin/env python3
"""Keeps the code blocks of Guides/*.md equal to the regions of the compiled example sources.

A guide block is written as

    <!-- region: Coordination/ArticlesList.swift#fixed-articles -->
    ```swift
    ...
    ```

and the region is the text between `// region: fixed-articles` and `// endregion: fixed-articles`
in Guides/Examples/Coordination/ArticlesList.swift, a file that the package builds and tests. A
path under `Packages/` names a scratch package's file in Guides/Packages (built and tested by
`.ci/package-check`), and the region name `file` takes the whole file: a `Package.swift` must
begin with its tools-version line, so it cannot open with a region marker.

    .ci/guide-blocks.py          check: print every block that differs and exit 1
    .ci/guide-blocks.py --write  copy the regions into the guides

The check also fails when a ```swift block has no region (hand-written code), and when a public
operator of Sources/AsyncFlow is missing from Guides/Effects.md or from every other guide.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
GUIDES = ROOT / "Guides"
EXAMPLES = GUIDES / "Examples"
SOURCES = ROOT / "Sources" / "AsyncFlow"
BLOCK = re.compile(r"<!-- region: (?P<path>[^#]+)#(?P<name>[\w-]+) -->\n```swift\n(?P<code>.*?)```\n", re.S)


def region(path: str, name: str) -> str:
    source = ((GUIDES if path.startswith("Packages/") else EXAMPLES) / path).read_text()
    if name == "file":
        return source
    match = re.search(r"[ \t]*// region: " + re.escape(name) + r"\n(.*?)[ \t]*// endregion: " + re.escape(name), source, re.S)
    if not match:
        raise SystemExit(f"guide-blocks: no region '{name}' in Guides/Examples/{path}")
    return match.group(1)


def public_operators() -> set:
    """Names of the public functions declared in extensions of AsyncSequence and Flow, plus the
    public types (classes, structs, enums) of the library."""
    names = set()
    for path in SOURCES.rglob("*.swift"):
        depth = 0
        in_operator_extension = False
        for line in path.read_text().splitlines():
            stripped = line.strip()
            if depth == 0:
                in_operator_extension = bool(re.match(r"extension (AsyncSequence|Flow)\b", stripped))
                match = re.match(r"public (?:final )?(?:class|struct|enum) (\w+)", stripped)
                # Async...Sequence types are operators' results; their operators are checked. A
                # leading underscore means public for technical reasons, not API (STYLE.md).
                if match and not re.fullmatch(r"Async\w+Sequence|_\w+", match.group(1)):
                    names.add(match.group(1))
            if in_operator_extension and depth == 1:
                match = re.match(r"public (?:static )?(?:func|var) (\w+)", stripped)
                if match:
                    names.add(match.group(1))
            depth += line.count("{") - line.count("}")
    return names


def main() -> int:
    write = "--write" in sys.argv[1:]
    stale = []
    blocks = 0
    for guide in sorted(GUIDES.glob("*.md")) + [ROOT / "README.md"]:
        text = guide.read_text()

        def replace(match: re.Match) -> str:
            nonlocal blocks
            blocks += 1
            expected = region(match["path"], match["name"])
            if match["code"] != expected:
                stale.append(f"{guide.name}: {match['path']}#{match['name']}")
            return f"<!-- region: {match['path']}#{match['name']} -->\n```swift\n{expected}```\n"

        updated = BLOCK.sub(replace, text)
        if write and updated != text:
            guide.write_text(updated)
    problems = []
    if stale and not write:
        problems.append("guide blocks that differ from their compiled regions (run .ci/guide-blocks.py --write):")
        problems += ["  " + entry for entry in stale]
    for guide in sorted(GUIDES.glob("*.md")) + [ROOT / "README.md"]:
        text = guide.read_text()
        for match in re.finditer(r"```swift\n", text):
            if not text[: match.start()].endswith(" -->\n"):
                line = text[: match.start()].count("\n") + 1
                problems.append(f"{guide.name}:{line}: a Swift block without a region (hand-written code)")
    effects = (GUIDES / "Effects.md").read_text()
    others = "".join(g.read_text() for g in GUIDES.glob("*.md") if g.name not in ("Effects.md", "README.md"))
    for name in sorted(public_operators()):
        pattern = re.compile(r"\b" + re.escape(name) + r"\b")
        if not pattern.search(effects):
            problems.append(f"Effects.md: no row mentions the public operator or type `{name}`")
        if not pattern.search(others):
            problems.append(f"no guide besides Effects.md mentions `{name}`")
    if problems:
        print("\n".join(problems))
        return 1
    print(f"guide-blocks: {blocks} blocks {'written' if write else 'match their regions'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
