"""The schema editor: a collection created from the collections page, a field added, a type
change confirmed after its dry run, and a field deleted after its own."""

import re

from playwright.sync_api import expect

from conftest import assert_accessible, screenshot, sign_in


def test_a_collection_and_its_fields_are_edited(page, server):
    sign_in(page, server)
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Collections").click()
    page.get_by_label("Name", exact=True).fill("Events")
    page.get_by_label(re.compile("^Slug")).fill("events")
    page.get_by_role("button", name="Create the collection").click()
    expect(page.get_by_role("heading", name=re.compile("Schema · Events"))).to_be_visible()
    expect(page.get_by_text("No fields yet")).to_be_visible()

    page.get_by_label("Name", exact=True).fill("seats")
    page.get_by_label("Type", exact=True).select_option("number")
    page.get_by_role("button", name="Add the field").click()
    expect(page.get_by_role("status")).to_have_text("Field added: seats.")
    assert_accessible(page)
    screenshot(page, "schema")

    # An item with a value, then a type change: its dry run says what converts.
    page.goto("/collections/events/items/new")
    page.get_by_label("seats").fill("12")
    page.get_by_role("button", name="Create").click()
    expect(page.get_by_role("status")).to_have_text("Saved.")
    page.goto("/collections/events")
    page.get_by_text("Change seats").click()
    page.get_by_label("Type", exact=True).first.select_option("string")
    page.get_by_role("button", name="Save seats").click()
    expect(page.get_by_role("heading", name="Change seats?")).to_be_visible()
    expect(page.get_by_text("1 stored value will be converted")).to_be_visible()
    assert_accessible(page)
    with page.expect_navigation():
        page.get_by_role("button", name="Convert the values").click()
    expect(page.get_by_role("status")).to_have_text("Field saved: seats.")
    expect(page.get_by_role("row", name=re.compile("seats string"))).to_be_visible()

    # A second field, moved above the first.
    page.locator("#new-name").fill("venue")
    page.get_by_role("button", name="Add the field").click()
    page.get_by_role("button", name="Move venue up").click()
    expect(page.get_by_role("status")).to_have_text("Field moved: venue.")
    expect(page.locator("table.schema th[scope=row] code")).to_have_text(["venue", "seats"])

    page.get_by_role("button", name="Delete the field seats").click()
    expect(page.get_by_role("heading", name="Delete the field seats?")).to_be_visible()
    with page.expect_navigation():
        page.get_by_role("button", name="Delete the field seats").click()
    expect(page.get_by_role("status")).to_have_text("Field deleted: seats.")


BLOCKS = (
    '{"max_blocks_depth": 2, "block_types": ['
    '{"key": "hero", "label": "Hero", "fields": [{"name": "title", "type": "string"}]},'
    '{"key": "quote", "label": "Quote", "fields": [{"name": "text", "type": "textarea"}]}]}'
)


def test_blocks_are_added_reordered_and_removed(page, server):
    sign_in(page, server)
    page.goto("/collections")
    page.get_by_label("Name", exact=True).fill("Pages")
    page.get_by_label(re.compile("^Slug")).fill("pages")
    page.get_by_role("button", name="Create the collection").click()
    page.get_by_label("Name", exact=True).fill("body")
    page.get_by_label("Type", exact=True).select_option("blocks")
    page.get_by_label(re.compile("^Settings")).last.fill(BLOCKS)
    page.get_by_role("button", name="Add the field").click()
    expect(page.get_by_role("status")).to_have_text("Field added: body.")

    page.goto("/collections/pages/items/new")
    adder = page.get_by_label("Type of the block to add to data[body]")
    expect(page.get_by_text("No blocks yet.")).to_be_visible()
    adder.select_option("hero")
    page.get_by_role("button", name="Add a block").click()
    page.get_by_label("Data of block 1 (JSON)").fill('{"title": "Welcome"}')
    adder.select_option("quote")
    page.get_by_role("button", name="Add a block").click()
    adder.select_option("quote")
    page.get_by_role("button", name="Add a block").click()
    page.get_by_role("button", name="Remove block 3 (Quote)").click()
    page.get_by_role("button", name="Move up block 2 (Quote)").click()
    expect(page.locator(".block-head strong")).to_have_text(["1. Quote", "2. Hero"])
    assert_accessible(page)
    screenshot(page, "blocks")
    page.get_by_role("button", name="Create").click()
    expect(page.get_by_role("status")).to_have_text("Saved.")
    expect(page.locator(".block-head strong")).to_have_text(["1. Quote", "2. Hero"])
    expect(page.get_by_label("Data of block 2 (JSON)")).to_have_value('{\n  "title": "Welcome"\n}')


def test_a_refused_htmx_action_shows_why(page, server, allowed):
    # Authors is the target of Articles' author field: deleting it is refused (422), and the
    # refusal replaces the page's content instead of the click seeming to do nothing.
    allowed.add((422, "/collections/authors"))
    sign_in(page, server)
    page.goto("/collections/authors")
    page.get_by_role("button", name="Delete Authors…").click()
    expect(page.get_by_role("heading", name="Check your input")).to_be_visible()
    expect(page.get_by_text(re.compile("target this collection: articles.author"))).to_be_visible()
    assert_accessible(page)
