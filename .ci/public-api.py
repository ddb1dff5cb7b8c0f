#!/usr/bin/env python3
"""The overload budget: every public declaration of AsyncFlow and AsyncFlowTesting, checked against
.ci/public-api.txt.

Each overload is a candidate the type checker weighs at every call of its name, in every user's
build (Benchmarks/README.md, "Type-checking time"), so a new form of a name has to say why it is
worth that. This script lists every public declaration (types, functions, initializers,
subscripts, properties, enum cases) from the symbol graphs that `swift symbolgraph-extract` writes
for the built modules, by module, by name and with its full signature (the declaration, and the
`where` clause of the extension it is in), grouped by name: the forms of a name are the
declarations of one base name (`switchToLatestFlow`, whatever its labels) in one type or protocol,
as the type checker sees them at a call. It fails when the list differs from the checked-in file,
and when a name with several forms has no reason (`why:`) there. For a name that gained a form it
also runs the type-checking benchmark once (`flow-benchmarks --typecheck --quick`) and prints the
rows of the pipelines that call it: the figure to record in the reason (and in Benchmarks/README.md
for a real change).

Usage:
  python3 .ci/public-api.py            # check (builds the two libraries first if needed)
  python3 .ci/public-api.py --update   # rewrite .ci/public-api.txt from the build, keeping every
                                       # reason; a new multi-form name gets "why: TODO", which the
                                       # check rejects until someone writes the reason
  --modules DIR    read the modules from DIR (default: `swift build --show-bin-path`/Modules)
  --no-figures     do not run the type-checking benchmark on a failure

After merging branches that add public symbols: `python3 .ci/public-api.py --update`, read the
diff of .ci/public-api.txt, replace each "why: TODO" with the reason and the figure, commit.
"""

import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUDGET = os.path.join(ROOT, ".ci", "public-api.txt")
MODULES = ["AsyncFlow", "AsyncFlowTesting"]
HEADER = """\
# The overload budget: every public declaration of AsyncFlow and AsyncFlowTesting, grouped by name
# (one base name in one type or protocol: the candidates the type checker weighs at a call of it).
# A name with more than one form says why (`why:`), with the type-checking figure where one was
# measured (Benchmarks/README.md, "Type-checking time"). Checked by `python3 .ci/public-api.py`;
# regenerated, keeping the reasons, by `python3 .ci/public-api.py --update`.
"""


def run(command, **kwargs):
  return subprocess.run(command, cwd=ROOT, check=True, text=True, capture_output=True, **kwargs).stdout


def modules_directory(explicit):
  if explicit:
    return explicit
  run(["swift", "build", "--quiet", "--target", "AsyncFlowTesting"])
  return os.path.join(run(["swift", "build", "--show-bin-path"]).strip(), "Modules")


def target_triple():
  info = json.loads(run(["swift", "-print-target-info"]))
  return info["target"]["triple"]


def extract(modules_dir):
  """{module: [symbol]}, the public symbols of each module's graphs (extension graphs included)."""
  triple = target_triple()
  found = {}
  with tempfile.TemporaryDirectory() as scratch:
    for module in MODULES:
      out = os.path.join(scratch, module)
      os.makedirs(out)
      run([
        "swift", "symbolgraph-extract", "-module-name", module, "-I", modules_dir, "-target", triple,
        "-minimum-access-level", "public", "-skip-synthesized-members", "-output-dir", out,
      ])
      symbols = []
      for name in sorted(os.listdir(out)):
        with open(os.path.join(out, name)) as f:
          symbols += json.load(f)["symbols"]
      found[module] = symbols
  return found


def constraint(c):
  return f"{c['lhs']} == {c['rhs']}" if c["kind"] == "sameType" else f"{c['lhs']}: {c['rhs']}"


def signature(symbol):
  declaration = " ".join("".join(f["spelling"] for f in symbol["declarationFragments"]).split())
  extension = symbol.get("swiftExtension", {}).get("constraints", [])
  if extension:
    declaration += " [in extension where " + ", ".join(constraint(c) for c in extension) + "]"
  return declaration


def groups(found):
  """{(module, 'Parent.base'): sorted [(kind, signature)]}."""
  result = collections.defaultdict(list)
  for module, symbols in found.items():
    for symbol in symbols:
      kind = symbol["kind"]["identifier"].removeprefix("swift.")
      if kind == "extension":
        continue
      path = symbol["pathComponents"]
      base = re.sub(r"\(.*", "", path[-1])
      name = ".".join(path[:-1] + [base])
      result[(module, name)].append((kind, signature(symbol)))
  return {key: sorted(set(value)) for key, value in result.items()}


def parse(path):
  """{(module, name): {'why': str or None, 'forms': [(kind, signature)]}} of the checked-in file."""
  entries = {}
  if not os.path.exists(path):
    return entries
  current = None
  for line in open(path):
    line = line.rstrip("\n")
    if not line or line.startswith("#"):
      continue
    if not line.startswith(" "):
      module, name = line.split()[:2]
      current = entries.setdefault((module, name), {"why": None, "forms": []})
    elif line.startswith("  why: "):
      current["why"] = line[len("  why: "):]
    elif line.startswith("    ") and current is not None and current["why"] is not None:
      current["why"] += " " + line.strip()  # a reason's continuation line
    elif line.startswith("  - "):
      kind, _, sig = line[4:].partition("  ")
      current["forms"].append((kind, sig))
  return entries


def wrap(text, width=100):
  words, lines, line = text.split(), [], ""
  for word in words:
    if line and len(line) + 1 + len(word) > width:
      lines.append(line)
      line = word
    else:
      line = f"{line} {word}" if line else word
  return lines + ([line] if line else [])


def render(current, reasons):
  out = [HEADER]
  totals = collections.Counter(module for module, _ in current)
  forms = collections.Counter()
  for (module, _), value in current.items():
    forms[module] += len(value)
  out.append("# " + "; ".join(f"{m}: {forms[m]} declarations, {totals[m]} names" for m in MODULES) + "\n")
  for key in sorted(current):
    module, name = key
    declarations = current[key]
    out.append(f"\n{module} {name}" + (f"  ({len(declarations)} forms)" if len(declarations) > 1 else "") + "\n")
    if len(declarations) > 1:
      why = reasons.get(key) or "TODO: why this name needs each of its forms, and the type-checking figure"
      lines = wrap(why)
      out.append("  why: " + lines[0] + "\n")
      out += ["    " + line + "\n" for line in lines[1:]]
    for kind, sig in declarations:
      out.append(f"  - {kind}  {sig}\n")
  return "".join(out)


def figures(names):
  """Runs the type-checking benchmark once and prints the rows of the pipelines that call a name."""
  corpus = os.path.join(ROOT, "Benchmarks", "TypeCheck")
  pipelines = set()
  for file in ["Chains.swift", "Pipelines.swift"]:
    sections = re.split(r"^// pipeline: ", open(os.path.join(corpus, file)).read(), flags=re.M)[1:]
    for section in sections:
      if any(re.search(r"\." + re.escape(n) + r"\b", section) for n in names):
        pipelines.add(section.split()[0])
  print(f"\nThe type-checking figure to record (`flow-benchmarks --typecheck --quick`; pipelines calling "
        f"{', '.join(sorted(names))}: {', '.join(sorted(pipelines)) or 'none in Benchmarks/TypeCheck: add one'}):")
  try:
    output = subprocess.run(
      ["swift", "run", "-c", "release", "flow-benchmarks", "--typecheck", "--quick"],
      cwd=ROOT, text=True, capture_output=True, check=True).stdout
  except subprocess.CalledProcessError as error:
    print(error.stdout + error.stderr)
    return
  for line in output.splitlines():
    row = line.split()
    if line.startswith("pipeline") or (row and row[0].removeprefix("T.") in pipelines):
      print("  " + line)


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--update", action="store_true")
  parser.add_argument("--modules")
  parser.add_argument("--no-figures", action="store_true")
  args = parser.parse_args()

  current = groups(extract(modules_directory(args.modules)))
  recorded = parse(BUDGET)
  reasons = {key: value["why"] for key, value in recorded.items() if value["why"]}
  text = render(current, reasons)
  count = sum(len(v) for v in current.values())

  if args.update:
    with open(BUDGET, "w") as f:
      f.write(text)
    todo = [f"{m} {n}" for (m, n), v in current.items() if len(v) > 1 and not reasons.get((m, n))]
    print(f"public-api: wrote {os.path.relpath(BUDGET, ROOT)}: {count} declarations, {len(current)} names")
    for name in todo:
      print(f"  write the reason for {name} (its \"why: TODO\")")
    return 0

  problems, grown = [], set()
  for key in sorted(set(current) | set(recorded)):
    module, name = key
    now = set(current.get(key, []))
    before = set(recorded.get(key, {}).get("forms", []))
    for kind, sig in sorted(now - before):
      label = "new form of" if len(now) > 1 else "new declaration"
      problems.append(f"{label} {module} {name}: {kind}  {sig}")
      if len(now) > 1:
        grown.add(name.split(".")[-1])
    for kind, sig in sorted(before - now):
      problems.append(f"gone from {module} {name}: {kind}  {sig}")
    if len(now) > 1 and not (reasons.get(key) and not reasons[key].startswith("TODO")):
      problems.append(f"{module} {name} has {len(now)} forms and no reason (its `why:` line)")
  if not problems and text != open(BUDGET).read():
    problems.append("the file is not as --update writes it (order, counts or wrapping)")
  if problems:
    print("public-api: the public declarations differ from .ci/public-api.txt:")
    for problem in problems:
      print("  " + problem)
    print("A new overload is a cost in every user's build: remove it, or run "
          "`python3 .ci/public-api.py --update` and write why each form is needed (with the figure below).")
    if grown and not args.no_figures:
      figures(grown)
    return 1
  print(f"public-api: {count} public declarations, {len(current)} names, as .ci/public-api.txt lists them")
  return 0


if __name__ == "__main__":
  sys.exit(main())
