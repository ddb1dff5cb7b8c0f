#!/usr/bin/env python3
"""Fails when a reader of the API reference would meet an operator twice, or a link told apart by a hash.

Reads the converted archive (the pages `docc convert` writes under `data/documentation/`):

- on the landing page, every function, initializer or subscript listed in a hand-written topic
  section is named once, by its base name (`switchToLatestFlow`, whatever its labels): its other
  forms are on its page (DocC's merged page of its overloads, and the `## Topics` of its extension
  file in the catalog);
- in every hand-written topic section of every page, no link is told apart by a hash
  (`switchToLatestFlow(_:)-33gld`) or by its types (`timeoutFlow(after:)->...`): a link names a
  page by its name alone.

Prints the landing page's entry count (links in its hand-written sections).

Usage: docc-landing.py --module AsyncFlow --archive .build/docs/AsyncFlow.doccarchive
"""

import argparse
import collections
import glob
import json
import os
import re
import sys

# DocC's disambiguation suffixes: a hash of the symbol (`-33gld`), a kind (`-swift.struct`), or the
# parameter and return types (`-(Int)`, `->Flow<...>`).
DISAMBIGUATED = re.compile(r"(\)-[0-9a-z]{3,6}$)|(-swift\.[a-z.]+$)|(->)|(\)-\()")


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--module", required=True)
  parser.add_argument("--archive", required=True)
  args = parser.parse_args()

  data = os.path.join(args.archive, "data", "documentation")
  landing_path = os.path.join(data, args.module.lower() + ".json")
  if not os.path.exists(landing_path):
    sys.exit(f"docc-landing: no landing page {landing_path}")
  problems = []

  with open(landing_path) as f:
    landing = json.load(f)
  references = landing.get("references", {})
  entries, named = 0, collections.defaultdict(list)
  for section in landing.get("topicSections", []):
    if section.get("generated"):
      continue
    for identifier in section.get("identifiers", []):
      entries += 1
      reference = references.get(identifier, {})
      title = reference.get("title", identifier.rsplit("/", 1)[-1])
      if reference.get("kind") == "symbol" and "(" in title:
        named[title.split("(")[0]].append((section.get("title", ""), identifier.split("/documentation/", 1)[-1]))
  for name, places in sorted(named.items()):
    if len(places) > 1:
      listed = "; ".join(f"\"{group}\": ``{link}``" for group, link in places)
      problems.append(f"the landing page names `{name}` {len(places)} times ({listed}): list it once, and its "
                      f"other forms in the `## Topics` of its page's extension file")

  for path in sorted(glob.glob(os.path.join(data, "**", "*.json"), recursive=True)):
    with open(path) as f:
      page = json.load(f)
    for section in page.get("topicSections", []):
      if section.get("generated"):
        continue
      for identifier in section.get("identifiers", []):
        last = identifier.rsplit("/", 1)[-1]
        if DISAMBIGUATED.search(last):
          problems.append(f"{page['identifier']['url'].split('/documentation/', 1)[-1]}, topic group "
                          f"\"{section.get('title', '')}\": ``{identifier.split('/documentation/', 1)[-1]}`` is told "
                          f"apart by a hash or its types: link the name's merged page, without the suffix")

  print(f"docc landing: {args.module}: {entries} entries on the landing page, {len(named)} operators and "
        f"functions, each named once" if not problems else f"docc landing: {args.module}: {entries} entries")
  for problem in problems:
    print("  " + problem)
  return 1 if problems else 0


if __name__ == "__main__":
  sys.exit(main())
