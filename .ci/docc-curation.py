#!/usr/bin/env python3
"""Fails when a public symbol of a module is not reachable from a topic group of its DocC catalog.

DocC lists a symbol nobody curated under an automatic section ("Instance Methods" of the
`AsyncSequence` extension page, "Structures" of the landing page), where a reader browsing by
family never finds it. This check walks the converted archive from the landing page:

- a symbol listed in a hand-written `## Topics` group (landing page, article, extension page) is
  curated;
- the members of a curated type are curated through it (its automatic sections count);
- the members of an extended external type (the operators on `AsyncSequence`) are NOT curated
  through the extension page: each has to be listed under its family;
- the forms of one name (its overloads) are one merged page, and curating it curates them all.

Every public symbol of the symbol graphs (`<Module>.symbols.json` and the extension graphs
`<Module>@<Other>.symbols.json`) must be curated. For each one that is not, the output gives the
exact link to paste, the declaration, where it is declared, and the topic group where another
symbol from the same source file (else the same folder) is already curated.

Usage: docc-curation.py --module AsyncFlow --symbol-graphs DIR --archive X.doccarchive --catalog X.docc
"""

import argparse
import glob
import json
import os
import sys
import urllib.parse

TYPE_KINDS = {"struct", "class", "enum", "protocol", "actor", "associatedtype", "typealias"}


def load_symbols(symbol_graph_dir, module):
  paths = [os.path.join(symbol_graph_dir, f"{module}.symbols.json")]
  paths += sorted(glob.glob(os.path.join(symbol_graph_dir, f"{module}@*.symbols.json")))
  symbols, parents = {}, {}
  for path in paths:
    if not os.path.exists(path):
      sys.exit(f"docc-curation: missing symbol graph {path}")
    with open(path) as f:
      graph = json.load(f)
    for symbol in graph["symbols"]:
      if symbol["kind"]["identifier"] == "swift.extension":
        continue  # an extension block is a container page, not API
      symbols[symbol["identifier"]["precise"]] = symbol
    for relationship in graph.get("relationships", []):
      if relationship["kind"] == "memberOf":
        parents[relationship["source"]] = relationship["target"]
  return symbols, parents


def load_pages(archive):
  pages = {}
  for path in glob.glob(os.path.join(archive, "data", "documentation", "**", "*.json"), recursive=True):
    with open(path) as f:
      page = json.load(f)
    pages[page["identifier"]["url"]] = page
  return pages


def walk(pages, root):
  """Returns {page url: (curating page url, group title) or None for pages reached through a type}."""
  reached = {root: None}
  queue = [root]
  while queue:
    url = queue.pop()
    page = pages.get(url)
    if page is None:
      continue
    metadata = page.get("metadata", {})
    is_type = metadata.get("role") == "symbol" and metadata.get("symbolKind") in TYPE_KINDS
    for section in page.get("topicSections", []):
      generated = section.get("generated", False)
      if generated and not is_type:
        continue  # automatic sections of the landing page or of an extension page curate nothing
      for child in section.get("identifiers", []):
        if child not in reached:
          queue.append(child)
        elif generated or reached[child] is not None:
          continue
        # Remember a hand-written group over an automatic one: it is what the suggestions name.
        reached[child] = None if generated else (url, section.get("title", ""))
  return reached


def source_of(symbol, root_dir):
  location = symbol.get("location")
  if not location:
    return "", 0
  path = urllib.parse.unquote(urllib.parse.urlparse(location["uri"]).path)
  try:
    path = os.path.relpath(path, root_dir)
  except ValueError:
    pass
  return path, location["position"]["line"] + 1


def catalog_file_for(page, catalog, module):
  """The markdown file of the catalog that produces `page` (the landing page, an article or an extension file)."""
  title = page.get("metadata", {}).get("title", "")
  url = page["identifier"]["url"]
  if url.endswith(f"/documentation/{module}"):
    candidates = [os.path.join(catalog, f"{module}.md")]
  else:
    candidates = []
  for path in sorted(glob.glob(os.path.join(catalog, "**", "*.md"), recursive=True)):
    with open(path) as f:
      first = f.readline().strip()
    heading = first.lstrip("#").strip().strip("`")
    name = os.path.splitext(os.path.basename(path))[0]
    if heading == title or heading.split("/")[-1] == title or name == url.rsplit("/", 1)[-1]:
      candidates.append(path)
  return candidates[0] if candidates else f"{catalog} (page {url})"


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--module", required=True)
  parser.add_argument("--symbol-graphs", required=True)
  parser.add_argument("--archive", required=True)
  parser.add_argument("--catalog", required=True)
  args = parser.parse_args()
  root_dir = os.getcwd()

  symbols, parents = load_symbols(args.symbol_graphs, args.module)
  pages = load_pages(args.archive)
  by_usr = {}
  for url, page in pages.items():
    usr = page.get("metadata", {}).get("externalID")
    if usr:
      by_usr[usr] = url
  roots = [url for url in pages if url.endswith(f"/documentation/{args.module}")]
  if len(roots) != 1:
    sys.exit(f"docc-curation: no landing page for {args.module} in {args.archive}")
  reached = walk(pages, roots[0])
  # DocC's merged overload pages (`--enable-experimental-overloaded-symbol-presentation`): a page
  # for one name whose forms (the overloads) it shows as declarations. Curating that page curates
  # every form: the one it is made from (its externalID without the suffix) and the others.
  for url, place in list(reached.items()):
    usr = pages.get(url, {}).get("metadata", {}).get("externalID", "")
    if not usr.endswith("::OverloadGroup"):
      continue
    forms = [by_usr.get(usr.removesuffix("::OverloadGroup"))]
    for section in pages[url].get("primaryContentSections", []):
      for declaration in section.get("declarations", []) if section.get("kind") == "declarations" else []:
        forms += [other.get("identifier") for other in declaration.get("otherDeclarations", {}).get("declarations", [])]
    for form in forms:
      if form is not None and reached.get(form) is None:
        reached[form] = place
  prefix = roots[0] + "/"

  # Where each source file's / folder's curated symbols are listed, to suggest a group.
  group_by_file, group_by_dir = {}, {}
  for usr, symbol in symbols.items():
    url = by_usr.get(usr)
    if url in reached and reached[url] is not None:
      path, _ = source_of(symbol, root_dir)
      group_by_file.setdefault(path, (reached[url], url))
      group_by_dir.setdefault(os.path.dirname(path), (reached[url], url))

  # A default implementation that a type inherits from an underscored protocol (`_FlowIterator`'s
  # `next()`, which writes the `next()`/`next(isolation:)` pair once) is the type's own
  # `AsyncIteratorProtocol` requirement, documented on the protocol's extension: not a symbol to
  # curate once more per type. Known by its declaration sitting in the file of that protocol.
  # (The symbol graph leaves underscored protocols out, so their files are found by their text.)
  underscored_protocol_files = set()
  for symbol in symbols.values():
    path = source_of(symbol, root_dir)[0]
    if path and path not in underscored_protocol_files and os.path.exists(path):
      with open(path) as f:
        if "public protocol _" in f.read():
          underscored_protocol_files.add(path)

  def is_inherited_from_underscored_protocol(usr):
    symbol = symbols[usr]
    return usr in parents and source_of(symbol, root_dir)[0] in underscored_protocol_files \
      and parents[usr] in symbols and source_of(symbols[parents[usr]], root_dir)[0] not in underscored_protocol_files

  missing_usrs = {
    usr for usr in symbols if by_usr.get(usr) not in reached and not is_inherited_from_underscored_protocol(usr)
  }

  def uncurated_ancestor(usr):
    """The outermost uncurated type that `usr` is nested in, if any."""
    outermost, parent = None, parents.get(usr)
    while parent is not None:
      if parent in missing_usrs:
        outermost = parent
      parent = parents.get(parent)
    return outermost

  # A member of an uncurated type is curated with it: name the type only, with its member count.
  folded = {}
  for usr in missing_usrs:
    ancestor = uncurated_ancestor(usr)
    if ancestor is not None:
      folded[ancestor] = folded.get(ancestor, 0) + 1
  missing = []
  for usr in missing_usrs:
    if uncurated_ancestor(usr) is not None:
      continue
    symbol = symbols[usr]
    path, line = source_of(symbol, root_dir)
    missing.append((path, line, usr, symbol, by_usr.get(usr)))
  missing.sort(key=lambda m: (m[0], m[1]))

  print(f"docc curation: {args.module}: {len(symbols)} public symbols, "
        f"{len(symbols) - len(missing_usrs)} reachable from a topic group, {len(missing_usrs)} not")
  if not missing:
    return 0
  for path, line, usr, symbol, url in missing:
    declaration = "".join(fragment["spelling"] for fragment in symbol.get("declarationFragments", []))
    members = folded.get(usr, 0)
    with_members = f"  (and its {members} member{'s' if members != 1 else ''}, curated with it)" if members else ""
    print(f"\n  {path}:{line}: {declaration}{with_members}")
    if url is None:
      print(f"    DocC made no page for it (USR {usr}).")
      continue
    link = url[len(prefix):] if url.startswith(prefix) else url
    print(f"    curate it as:  - ``{link}``")
    suggestion = group_by_file.get(path)
    where = "from the same file"
    if suggestion is None:
      suggestion = group_by_dir.get(os.path.dirname(path))
      where = "from the same folder"
    if suggestion is not None:
      (page_url, group), neighbour = suggestion
      neighbour_link = neighbour[len(prefix):] if neighbour.startswith(prefix) else neighbour
      file = catalog_file_for(pages[page_url], args.catalog, args.module)
      print(f"    next to ``{neighbour_link}`` ({where}): group \"{group}\" in {file}")
    else:
      print(f"    no symbol {where.replace('from', 'of')} is curated yet: add it to a family group in "
            f"{os.path.join(args.catalog, args.module + '.md')}")
  print(f"\ndocc curation: {len(missing_usrs)} public symbol(s) of {args.module} are in no topic group; "
        f"listing the {len(missing)} link(s) above, each under its family, curates them all.")
  return 1


if __name__ == "__main__":
  sys.exit(main())
