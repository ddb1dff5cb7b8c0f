#!/usr/bin/env python3
"""Compiles every ```swift block of the `///` doc comments of Sources/AsyncFlow and Sources/AsyncFlowTesting.

    python3 .ci/doc-examples.py [--root DIR] [PATH ...]

PATH (a file or folder, relative to DIR or absolute) keeps only the examples of those files. The blocks are
written into a scratch package, DIR/.build/doc-examples/ (not committed), that depends on DIR's AsyncFlow and
AsyncFlowTesting by path, and built with one `swift build`. A file is rewritten only when its text changes
and the scratch package keeps its own .build, so a second run rebuilds only what changed. Each error is
printed as `Sources/...:line:column: error: ...` at the line of the doc comment, and the exit status is 1
if any example fails.

What an example may assume (there are no hidden lines: DocC shows everything a block holds):
- the names of the shared prelude, .ci/doc-examples-prelude.swift: a few stand-ins that the examples take
  for granted (an error type, an API client, a view model). Keep it small: it is part of what a reader
  is asked to imagine, so each name in it should be obvious from the examples' wording.
- the names declared by the earlier blocks of the same source file. A type's example declares the
  `sequence` (or `subject`, `slots`, ...) that its members' one-line examples then use, as a reader of
  the type's page reads its example first. Each block is compiled inside the scope of the one before it
  (nested `do { }` scopes in file order), so a block may also redeclare a name (`var iterator`).
- an `async throws` context with no actor isolation: examples may `await` and `try` at their top level.

Declarations that Swift allows only at file scope (`extension`, `protocol`, `import`, declarations with an
access modifier such as `private let`, `@Observable` types, whose macro writes an extension, and
Swift Testing's `@Test` functions and `@Suite` types) are moved
out of the function to the generated file's top level, where the later blocks still see them.

Every example compiles or it is not there: an example that needs more than the prelude and its file's
earlier blocks says so in its own lines (a `let` with a type, a stand-in function), in view of the reader.
"""
import argparse
import pathlib
import re
import subprocess
import sys

SCRIPT_DIR = pathlib.Path(__file__).resolve().parent
PRELUDE = SCRIPT_DIR / "doc-examples-prelude.swift"
SOURCE_DIRS = ("Sources/AsyncFlow", "Sources/AsyncFlowTesting")
FENCE_OPEN = re.compile(r"^\s*///\s*```swift\s*$")  # also a fence indented in a list item
FENCE_CLOSE = re.compile(r"^\s*///\s*```\s*$")
DOC_LINE = re.compile(r"^\s*/// ?")
FILE_SCOPE = re.compile(
  r"^(?:@\w+(?:\([^)]*\))?\s+)*"
  r"(?:@(?:Observable|Test|Suite)\b|extension|protocol|import|precedencegroup|(?:public|package|internal|fileprivate|private)\b)"
)
# What every example may use without importing it: the two libraries, Swift Testing (for the examples of
# AsyncFlowTesting, which are test code) and Observation (for `@Observable` view models).
IMPORTS = ["import AsyncFlow", "import AsyncFlowTesting", "import Observation", "import Testing"]
ERROR = re.compile(r"^(?P<path>[^:\s][^:]*):(?P<line>\d+):(?P<column>\d+): error: (?P<message>.*)$")


class Block:
  def __init__(self, path: str, fence: int, lines: list):
    self.path = path  # relative to the root, e.g. Sources/AsyncFlow/Flow/Flow.swift
    self.fence = fence  # 1-based line of the opening fence
    self.lines = lines  # the code, without the `/// ` prefix; line i is source line fence + 1 + i

  @property
  def first(self) -> int:
    return self.fence + 1

  @property
  def last(self) -> int:
    return self.fence + len(self.lines)


def extract(root: pathlib.Path, path: pathlib.Path) -> list:
  blocks = []
  lines = path.read_text().splitlines()
  index = 0
  while index < len(lines):
    if FENCE_OPEN.match(lines[index]):
      fence = index + 1
      code = []
      index += 1
      while index < len(lines) and not FENCE_CLOSE.match(lines[index]):
        if not DOC_LINE.match(lines[index]):
          raise SystemExit(f"doc-examples: {path.relative_to(root)}:{fence}: unterminated ```swift block")
        code.append(DOC_LINE.sub("", lines[index], count=1))
        index += 1
      blocks.append(Block(str(path.relative_to(root)), fence, code))
    index += 1
  return blocks


def split(block: Block):
  """Splits a block into top-level items (by brace depth, ignoring braces in strings and comments),
  and returns (file-scope items, function-body items), each as a list of (first source line, lines)."""
  items = []
  depth = 0
  current = None
  for offset, line in enumerate(block.lines):
    code = re.sub(r'"(?:\\.|[^"\\])*"', '""', line.split("//", 1)[0])
    starts_item = depth == 0 and line.strip() != "" and not line[:1].isspace() and not line.lstrip().startswith(
      ("}", ")", "]", ".", "//")
    )
    if starts_item or current is None:
      current = (block.first + offset, [])
      items.append(current)
    current[1].append(line)
    depth += code.count("{") + code.count("(") - code.count("}") - code.count(")")
    depth = max(depth, 0)
  file_scope, body = [], []
  for item in items:
    # The item's code on one line, so that attributes on lines of their own (`@MainActor` above `@Observable`)
    # are read with the declaration they belong to.
    head = " ".join(line.strip() for line in item[1] if line.strip() and not line.strip().startswith("//"))
    (file_scope if FILE_SCOPE.match(head) else body).append(item)
  return file_scope, body


def generate(root: pathlib.Path, path: str, blocks: list) -> str:
  """One Swift file for one source file: its file-scope items, then one function whose body nests each
  block's statements in the scope of the previous block's."""
  top, body = [], []
  for block in blocks:
    file_scope, statements = split(block)
    for line, lines in file_scope:
      top += [f'#sourceLocation(file: "{path}", line: {line})'] + lines + ["#sourceLocation()"]
    body.append("do {")
    for line, lines in statements:
      body += [f'#sourceLocation(file: "{path}", line: {line})'] + lines + ["#sourceLocation()"]
  name = re.sub(r"\W", "_", path)
  text = ["// Generated by .ci/doc-examples.py from " + path + "; do not edit."] + IMPORTS + [""]
  text += top
  text += ["", f"func example_{name}() async throws {{"] + body + ["}" * len(blocks), "}", ""]
  return "\n".join(text)


def write_if_changed(path: pathlib.Path, text: str) -> None:
  if not path.exists() or path.read_text() != text:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def main() -> int:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--root", default=str(SCRIPT_DIR.parent), help="the package whose doc comments to check")
  parser.add_argument("paths", nargs="*", help="files or folders to keep (default: all)")
  parser.add_argument("-v", "--verbose", action="store_true", help="print the whole build output")
  arguments = parser.parse_args()
  root = pathlib.Path(arguments.root).resolve()
  filters = [(pathlib.Path(p) if pathlib.Path(p).is_absolute() else root / p).resolve() for p in arguments.paths]

  sources = [p for d in SOURCE_DIRS for p in sorted((root / d).rglob("*.swift"))]
  if filters:
    sources = [p for p in sources if any(p == f or f in p.parents for f in filters)]
  by_file = {}
  for source in sources:
    blocks = extract(root, source)
    if blocks:
      by_file[str(source.relative_to(root))] = blocks
  count = sum(len(b) for b in by_file.values())
  if count == 0:
    print("doc-examples: no examples found")
    return 0

  package = root / ".build" / "doc-examples"
  examples = package / "Sources" / "DocExamples"
  write_if_changed(package / "Package.swift", f"""// swift-tools-version: 6.2
// Generated by .ci/doc-examples.py; do not edit.
import PackageDescription

let package = Package(
  name: "DocExamples",
  platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
  dependencies: [.package(path: {str(root)!r})],
  targets: [
    .target(
      name: "DocExamples",
      dependencies: [
        .product(name: "AsyncFlow", package: {root.name!r}),
        .product(name: "AsyncFlowTesting", package: {root.name!r}),
      ],
      swiftSettings: [.unsafeFlags(["-suppress-warnings"])]
    )
  ],
  swiftLanguageModes: [.v6]
)
""".replace("'", '"'))
  wanted = {"Prelude.swift"}
  prelude = PRELUDE.read_text()
  write_if_changed(examples / "Prelude.swift", f'#sourceLocation(file: ".ci/doc-examples-prelude.swift", line: 1)\n{prelude}')
  for path, blocks in by_file.items():
    name = path.replace("/", "_")
    wanted.add(name)
    write_if_changed(examples / name, generate(root, path, blocks))
  for stale in examples.glob("*.swift"):
    if stale.name not in wanted:
      stale.unlink()

  print(f"doc-examples: building {count} examples of {len(by_file)} files in {package.relative_to(root)}", flush=True)
  build = subprocess.run(["swift", "build", "--package-path", str(package)], capture_output=True, text=True)
  output = build.stdout + build.stderr
  if arguments.verbose:
    print(output)

  blocks_at = {}
  for path, blocks in by_file.items():
    for block in blocks:
      for line in range(block.first, block.last + 1):
        blocks_at[(path, line)] = block
  failing = {}
  other = []
  seen = set()
  for line in output.splitlines():
    match = ERROR.match(line.strip())
    if not match or line in seen:
      continue
    seen.add(line)
    path = match["path"]
    if path.startswith(str(root) + "/"):
      path = path[len(str(root)) + 1:]
    block = blocks_at.get((path, int(match["line"])))
    if block is None:
      other.append(line.strip())
      continue
    failing.setdefault((block.path, block.fence), []).append(
      f"{path}:{match['line']}:{match['column']}: error: {match['message']}"
    )
  for (path, fence), errors in sorted(failing.items()):
    print(f"\n{path}:{fence}: example does not compile")
    for error in errors:
      print("  " + error)
  if other:
    print("\nerrors outside the examples (prelude or generated code):")
    for error in other:
      print("  " + error)
  if build.returncode != 0 and not failing and not other:
    print(output)
    print("doc-examples: the build failed without an error this script recognises (output above)")
    return 1
  if failing or other or build.returncode != 0:
    print(f"\ndoc-examples: {len(failing)} of {count} examples do not compile")
    return 1
  print(f"doc-examples: {count} examples compile")
  return 0


if __name__ == "__main__":
  sys.exit(main())
