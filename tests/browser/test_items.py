"""Collections and items: the list with its filter builder and chips, the column picker and sort,
the item form (create, a refusal next to its field, locale tabs, save with htmx), and the bulk
actions down to a deletion for good after its confirmation."""

import re

from playwright.sync_api import expect

from conftest import assert_accessible, screenshot, sign_in


def open_articles(page):
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Collections").click()
    expect(page.get_by_role("heading", name="Collections", exact=True)).to_be_visible()
    page.get_by_role("link", name="Articles", exact=True).click()
    expect(page.get_by_role("heading", name="Articles")).to_be_visible()


def test_the_list_filters_sorts_and_picks_columns(page, server):
    sign_in(page, server)
    open_articles(page)
    expect(page.get_by_role("cell", name="Notes on the Analytical Engine")).to_be_visible()
    assert_accessible(page)
    screenshot(page, "items")

    page.get_by_label("Field").select_option("status")
    page.get_by_label("Condition").select_option("_eq")
    page.get_by_label("Value").fill("draft")
    page.get_by_role("button", name="Add filter").click()
    expect(page).to_have_url(re.compile(r"filter%5Bstatus%5D%5B_eq%5D=draft$"))
    expect(page.get_by_role("cell", name="An unfinished draft")).to_be_visible()
    expect(page.get_by_role("cell", name="Notes on the Analytical Engine")).to_have_count(0)
    expect(page.get_by_text("status is “draft”")).to_be_visible()
    page.get_by_role("link", name="Remove the filter: status is “draft”").click()
    expect(page.get_by_role("cell", name="Notes on the Analytical Engine")).to_be_visible()

    page.get_by_role("link", name="views").click()
    expect(page.get_by_role("columnheader", name="views ↑")).to_be_visible()
    first = page.locator("tbody tr").first
    expect(first).to_contain_text("An unfinished draft")

    page.get_by_text("Columns", exact=True).click()
    page.get_by_role("checkbox", name="body").check()
    page.get_by_role("checkbox", name="views").uncheck()
    page.get_by_role("button", name="Apply").first.click()
    expect(page.get_by_role("columnheader", name="body")).to_be_visible()
    expect(page.get_by_role("columnheader", name="views")).to_have_count(0)
    assert "columns=body" in page.url
    # Saved as the list's default: the plain list URL shows them.
    page.get_by_text("Columns", exact=True).click()
    page.get_by_role("button", name="Save as the default").click()
    expect(page.get_by_role("status").first).to_have_text("These columns are now the list's default.")
    page.goto("/collections/articles/items")
    expect(page.get_by_role("columnheader", name="body")).to_be_visible()
    expect(page.get_by_role("columnheader", name="views")).to_have_count(0)


def test_an_item_is_created_refused_translated_and_saved(page, server, allowed):
    sign_in(page, server)
    open_articles(page)
    page.get_by_role("link", name="New item").click()
    expect(page.get_by_role("heading", name="New item · Articles")).to_be_visible()
    assert_accessible(page)

    # No title: the form comes back with the problem next to the field and the values kept.
    page.get_by_label("slug").fill("from-the-browser")
    page.get_by_role("button", name="Create").click()
    expect(page.locator(".field-error").first).to_be_visible()
    expect(page.get_by_label("slug")).to_have_value("from-the-browser")

    page.get_by_label("title (en)").fill("Written in a browser")
    page.get_by_role("tab", name="de").click()
    expect(page.get_by_role("tab", name="de")).to_have_attribute("aria-selected", "true")
    page.get_by_label("title (de)").fill("Im Browser geschrieben")
    page.get_by_role("button", name="Create").click()
    expect(page.get_by_role("status")).to_have_text("Saved.")
    expect(page.get_by_role("heading", name=re.compile(r"Articles #\d+"))).to_be_visible()
    assert_accessible(page)
    screenshot(page, "item")
    # One locale at a time: the tabs switch which inputs are shown.
    expect(page.get_by_label("title (de)")).to_be_hidden()
    page.get_by_role("tab", name="de").click()
    expect(page.get_by_label("title (de)")).to_have_value("Im Browser geschrieben")
    expect(page.get_by_label("title (en)")).to_be_hidden()

    # Saved again with htmx: the page reloads with the new value.
    # (The URL already ends in ?saved=1 after the creation: wait for the reload itself.)
    page.get_by_label("views").fill("42")
    with page.expect_navigation():
        page.get_by_role("button", name="Save").click()
    expect(page).to_have_url(re.compile(r"\?saved=1$"))
    expect(page.get_by_label("views")).to_have_value("42")

    # A refused value comes back next to its field (422, swapped in by htmx).
    allowed.add((422, page.url.removeprefix(server.base).split("?")[0]))
    page.get_by_label("slug").fill("")
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#f-slug-error")).to_be_visible()
    expect(page.get_by_label("slug")).to_have_attribute("aria-invalid", "true")


def test_bulk_actions_trash_and_delete_for_good_after_a_confirmation(page, server):
    sign_in(page, server)
    open_articles(page)
    page.get_by_role("checkbox", name=re.compile(r"Select item \d+")).last.check()
    page.get_by_label("With the selected items").select_option("delete")
    page.get_by_role("button", name="Apply").last.click()
    expect(page.get_by_role("status").first).to_have_text("1 item moved to the trash.")

    page.get_by_role("link", name="Show the trash").click()
    expect(page.get_by_role("heading", name="Articles · trash")).to_be_visible()
    page.get_by_role("checkbox", name=re.compile(r"Select item \d+")).first.check()
    page.get_by_label("With the selected items").select_option("force_delete")
    page.get_by_role("button", name="Apply").last.click()
    expect(page.get_by_role("heading", name="Delete 1 item for good?")).to_be_visible()
    assert_accessible(page)
    page.get_by_role("button", name="Delete 1 item for good").click()
    expect(page.get_by_role("status").first).to_have_text("1 item deleted for good.")
    expect(page.get_by_role("heading", name="The trash is empty")).to_be_visible()


def test_history_restores_and_preview_as_a_role_explains(page, server):
    sign_in(page, server)
    open_articles(page)
    page.get_by_role("link", name=re.compile(r"^\d+$")).first.click()
    page.get_by_label("views").fill("1844")
    with page.expect_navigation():
        page.get_by_role("button", name="Save").click()
    expect(page).to_have_url(re.compile(r"\?saved=1$"))

    page.get_by_role("link", name="History").click()
    expect(page.get_by_role("heading", name=re.compile(r"^History"))).to_be_visible()
    expect(page.locator("td.after", has_text="1844")).to_be_visible()
    assert_accessible(page)
    screenshot(page, "history")
    page.get_by_role("button", name="Restore this revision").first.click()
    expect(page.get_by_role("status")).to_contain_text("Restored")

    page.get_by_role("link", name="Back to the item").click()
    expect(page.get_by_label("views")).to_have_value("1843")
    page.get_by_role("link", name="Preview as a role").click()
    page.get_by_label("Role", exact=True).select_option("public")
    page.get_by_role("button", name="Preview").click()
    expect(page.get_by_role("heading", name="“public” reads this item")).to_be_visible()
    expect(page.get_by_text("internal_notes", exact=True)).to_be_visible()
    assert_accessible(page)


def test_relation_and_file_pickers_fill_their_inputs(page, server):
    sign_in(page, server)
    page.goto("/collections/articles/items/5")
    expect(page.get_by_role("img", name="The chosen image")).to_be_visible()
    expect(page.get_by_role("link", name="Set its focal point")).to_be_visible()

    author = page.get_by_label("author")
    author.fill("")
    page.locator('button[data-for="f-author"]').click()
    page.get_by_role("button", name="Alan Turing (#2)").click()
    expect(author).to_have_value("2")

    tags = page.get_by_label("tags")
    page.locator('button[data-for="f-tags"]').click()
    page.get_by_label("Search the choices").last.fill("Comp")
    page.get_by_role("button", name="Computing (#4)").click()
    # The link is added to the JSON (whose key order is the database's: PostgreSQL sorts them).
    expect(tags).to_have_value(re.compile(r'"related_item_id": 4'))
    links = page.evaluate("JSON.parse(document.getElementById('f-tags').value)")
    assert [link["related_item_id"] for link in links] == [3, 4]

    page.locator('button[data-for="f-cover"]').click()
    expect(page.locator('[data-picker-panel="f-cover"] li').first).to_be_visible()
    assert_accessible(page)
