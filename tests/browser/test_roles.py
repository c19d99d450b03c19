"""The roles editor: a new role with a collection grant, a field rule and an item filter, saved
with htmx, and the preview panel explaining what the saved role reads of an item."""

import re

from playwright.sync_api import expect

from conftest import assert_accessible, screenshot, sign_in


def test_a_role_is_edited_and_previewed(page, server):
    sign_in(page, server)
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Roles").click()
    expect(page.get_by_role("heading", name="Roles", exact=True)).to_be_visible()
    assert_accessible(page)
    page.get_by_role("link", name="New role").click()
    page.get_by_role("textbox", name="Name").fill("reviewer")
    page.get_by_role("checkbox", name="read Articles").check()
    page.get_by_text("Field rules and item filter · Articles").click()
    page.get_by_role("checkbox", name="read internal_notes of Articles").uncheck()
    page.get_by_label(re.compile("^Item filter of Articles")).fill('{"status": {"_eq": "published"}}')
    page.get_by_role("button", name="Create the role").click()
    expect(page.get_by_role("status")).to_contain_text("Saved.")
    expect(page.get_by_role("heading", name=re.compile("Role · reviewer"))).to_be_visible()
    expect(page.get_by_role("checkbox", name="read internal_notes of Articles")).not_to_be_checked()
    assert_accessible(page)
    screenshot(page, "role")

    # The saved role previewed on the draft (id 7 in the demo): refused by its item filter.
    page.get_by_label("Collection", exact=True).select_option("articles")
    page.get_by_label("Item id").fill("7")
    page.get_by_role("button", name="Preview").click()
    expect(page.get_by_role("heading", name="“reviewer” does not read this item")).to_be_visible()
    expect(page.get_by_text("the item does not pass it")).to_be_visible()
    page.get_by_label("Item id").fill("5")
    page.get_by_role("button", name="Preview").click()
    expect(page.get_by_role("heading", name="“reviewer” reads this item")).to_be_visible()
    expect(page.locator("#role-preview").get_by_text("internal_notes", exact=True)).to_be_visible()

    # A change saved with htmx.
    page.get_by_role("checkbox", name="update Articles").check()
    with page.expect_navigation():
        page.get_by_role("button", name="Save the role").click()
    expect(page.get_by_role("checkbox", name="update Articles")).to_be_checked()


def test_permissions_are_deleted_after_a_confirmation_and_added_back(page, server):
    sign_in(page, server)
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Permissions").click()
    expect(page.get_by_role("heading", name="Permissions", exact=True)).to_be_visible()
    assert_accessible(page)
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Delete can-show-jobs").click()
    expect(page.get_by_role("status")).to_contain_text("Permission deleted")
    expect(page.get_by_role("cell", name="can-show-jobs", exact=True)).to_have_count(0)
    page.get_by_role("button", name="Add what the catalog is missing").click()
    expect(page.get_by_role("status")).to_have_text("1 permission of the catalog added.")
    expect(page.get_by_role("cell", name="can-show-jobs", exact=True)).to_be_visible()
