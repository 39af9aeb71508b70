#!/usr/bin/env python3
"""Offline check of a built HTML site's internal links (used on the mdBook in target/book).

Every relative `href` and `src` in every `.html` file must name a file inside the site, and every
`#anchor` must be an `id` (or an `<a name>`) of the page it points to. A path starting with `/` is
taken from the site's root (where it is served), and a page's `<base href>` is honoured. External
links (`http:`, `https:`, `mailto:`, protocol-relative `//host`) are counted, never fetched.

    python3 scripts/check_links.py target/book

Exits 1 and prints each broken link (page, link, reason) when any is found; Python 3 stdlib only.
"""

import os
import sys
from html.parser import HTMLParser
from urllib.parse import unquote, urlsplit

EXTERNAL_SCHEMES = {"http", "https", "mailto", "ftp", "tel", "data", "javascript"}


class Page(HTMLParser):
    """The ids a page defines and the links it makes (with their line numbers)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids = set()
        self.links = []
        self.base = None

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if value is None:
                continue
            if name == "id" or (tag == "a" and name == "name"):
                self.ids.add(value)
            elif tag == "base" and name == "href":
                self.base = value
            elif name in ("href", "src"):
                self.links.append((value, self.getpos()[0]))

    handle_startendtag = handle_starttag


def parse(path):
    page = Page()
    with open(path, encoding="utf-8") as f:
        page.feed(f.read())
    page.close()
    return page


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    root = os.path.realpath(argv[1])
    if not os.path.isdir(root):
        print(f"check_links: {root} is not a directory (build the site first)", file=sys.stderr)
        return 2

    pages = {}
    for directory, _, files in os.walk(root):
        for name in files:
            if name.endswith(".html"):
                path = os.path.join(directory, name)
                pages[path] = parse(path)

    broken = []
    checked = external = 0
    for path, page in sorted(pages.items()):
        for link, line in page.links:
            parts = urlsplit(link)
            if parts.scheme in EXTERNAL_SCHEMES or link.startswith("//"):
                external += 1
                continue
            checked += 1
            where = f"{os.path.relpath(path, root)}:{line}"
            if parts.scheme:
                broken.append((where, link, f"unknown scheme `{parts.scheme}:`"))
                continue
            directory = os.path.dirname(path)
            if page.base is not None and page.base.startswith("/"):
                directory = os.path.join(root, page.base.lstrip("/"))
            if parts.path.startswith("/"):
                target = os.path.normpath(os.path.join(root, unquote(parts.path).lstrip("/")))
                if os.path.isdir(target):
                    target = os.path.join(target, "index.html")
            elif parts.path:
                target = os.path.normpath(os.path.join(directory, unquote(parts.path)))
                if os.path.isdir(target):
                    target = os.path.join(target, "index.html")
            else:
                target = path
            if os.path.commonpath([root, os.path.realpath(target)]) != root:
                broken.append((where, link, "points outside the site"))
                continue
            if not os.path.isfile(target):
                broken.append((where, link, f"no file {os.path.relpath(target, root)}"))
                continue
            anchor = unquote(parts.fragment)
            if anchor and target.endswith(".html"):
                ids = pages[target].ids if target in pages else parse(target).ids
                if anchor not in ids:
                    broken.append(
                        (where, link, f"no id `{anchor}` in {os.path.relpath(target, root)}")
                    )

    for where, link, reason in broken:
        print(f"broken link: {where}: {link}: {reason}")
    print(
        f"check_links: {len(pages)} pages, {checked} internal links checked, "
        f"{len(broken)} broken, {external} external links not fetched"
    )
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
