#!/usr/bin/env python3
"""Manifests for the HTTP benchmark (bench/run.sh), built on fixtures/demo.json.

    seed.py base OUT
        The demo project (settings, collections, roles, folders, authors, tags, site settings)
        without its articles, plus what the benchmark needs: a `reader` role (every article, all
        files), a `posts` collection the `editor` role may create items in (the demo's articles
        have a unique `slug`, so repeated identical POSTs would be 422), and API keys with known
        secrets for `editor` and `reader`.

    seed.py full OUT ITEMS COVERS AUTHORS TAGS
        The same manifest with ITEMS seed articles. COVERS, AUTHORS and TAGS are comma-separated ids
        (the uploaded cover images, the seeded authors and tags); article i gets cover
        COVERS[i % n], author AUTHORS[i % n] and tags. Applying it onto the base project seeds the
        articles (apply seeds only into an empty collection) and changes nothing else.

Articles are deterministic: every third one is a draft (the public role's item filter hides it),
`views` is (i * 7919) % 10000, so about half of the published ones have more than 5,000 views.
"""

import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
EDITOR_SECRET = "ek_benchEditorKeyForVellumBenchmarks00001"
READER_SECRET = "ek_benchReaderKeyForVellumBenchmarks00001"

BODY = (
    "Lorem ipsum dolor sit amet, consectetur adipiscing elit. Sed do eiusmod tempor "
    "incididunt ut labore et dolore magna aliqua. "
) * 3


def base():
    manifest = json.loads((ROOT / "fixtures" / "demo.json").read_text())
    manifest["items"].pop("articles", None)
    manifest["collections"].append({
        "slug": "posts", "name": "Posts", "is_singleton": False,
        "fields": [
            {"name": "title", "type": "string", "settings": {"required": True}},
            {"name": "status", "type": "select",
             "settings": {"options": ["draft", "published"], "default_value": "draft"}},
            {"name": "views", "type": "number", "settings": {"default_value": 0}},
            {"name": "body", "type": "markdown"},
        ],
    })
    for role in manifest["roles"]:
        if role["name"] == "editor":
            role["collection_permissions"]["posts"] = {"create": True, "read": True}
    manifest["roles"].append({
        "name": "reader",
        "collection_permissions": {slug: {"read": True} for slug in
                                   ("articles", "authors", "tags", "posts", "site-settings")},
        "file_permissions": {"read": True, "read_private": True},
    })
    manifest["api_keys"] = [
        {"name": "bench-editor", "role": "editor", "secret": EDITOR_SECRET},
        {"name": "bench-reader", "role": "reader", "secret": READER_SECRET},
    ]
    return manifest


def ids(arg):
    return [int(x) for x in arg.split(",") if x]


def full(count, covers, authors, tags):
    manifest = base()
    articles = []
    for i in range(1, count + 1):
        data = {
            "title": {"en": f"Article {i}", "de": f"Artikel {i}"},
            "slug": f"article-{i}",
            "status": "draft" if i % 3 == 0 else "published",
            "views": (i * 7919) % 10000,
            "body": {"en": BODY},
        }
        if covers:
            data["cover"] = covers[i % len(covers)]
        if authors:
            data["author"] = authors[i % len(authors)]
        if tags:
            data["tags"] = [{"related_item_id": tags[i % len(tags)]}]
        articles.append({"data": data})
    manifest["items"]["articles"] = articles
    return manifest


def main(argv):
    if len(argv) == 3 and argv[1] == "base":
        manifest = base()
    elif len(argv) == 7 and argv[1] == "full":
        manifest = full(int(argv[3]), ids(argv[4]), ids(argv[5]), ids(argv[6]))
    else:
        sys.exit(__doc__)
    pathlib.Path(argv[2]).write_text(json.dumps(manifest))


if __name__ == "__main__":
    main(sys.argv)
