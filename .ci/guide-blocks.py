#!/usr/bin/env python3
"""Keeps the code blocks of Guides/*.md equal to the regions of the compiled example sources.

A guide block is written as

    <!-- region: Coordination/ArticlesList.swift#fixed-articles -->
    ```swift
    ...
    ```

and the region is the text between `// region: fixed-articles` and `// endregion: fixed-articles`
in Guides/Examples/Coordination/ArticlesList.swift, a file that the package builds and tests.

    .ci/guide-blocks.py          check: print every block that differs and exit 1
    .ci/guide-blocks.py --write  copy the regions into the guides
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
GUIDES = ROOT / "Guides"
EXAMPLES = GUIDES / "Examples"
BLOCK = re.compile(r"<!-- region: (?P<path>[^#]+)#(?P<name>[\w-]+) -->\n```swift\n(?P<code>.*?)```\n", re.S)


def region(path: str, name: str) -> str:
    source = (EXAMPLES / path).read_text()
    match = re.search(r"[ \t]*// region: " + re.escape(name) + r"\n(.*?)[ \t]*// endregion: " + re.escape(name), source, re.S)
    if not match:
        raise SystemExit(f"guide-blocks: no region '{name}' in Guides/Examples/{path}")
    return match.group(1)


def main() -> int:
    write = "--write" in sys.argv[1:]
    stale = []
    blocks = 0
    for guide in sorted(GUIDES.glob("*.md")):
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
    if stale and not write:
        print("guide blocks that differ from their compiled regions (run .ci/guide-blocks.py --write):")
        for entry in stale:
            print("  " + entry)
        return 1
    print(f"guide-blocks: {blocks} blocks {'written' if write else 'match their regions'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
