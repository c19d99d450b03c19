"""The users and groups lists and the activity log: the demo admin listed, search with an empty state, the trash
views, and the menu leading there."""

import re

from playwright.sync_api import expect

from conftest import assert_accessible, screenshot, sign_in


def test_users_list_search_and_trash(page, server):
    sign_in(page, server)
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Users").click()
    expect(page.get_by_role("heading", name="Users", exact=True)).to_be_visible()
    expect(page.get_by_role("cell", name=server.email)).to_be_visible()
    assert_accessible(page)
    screenshot(page, "users")

    page.get_by_label("Search users").fill("nobody-by-this-name")
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name="No users match “nobody-by-this-name”")).to_be_visible()
    expect(page).to_have_url(server.base + "/users?search=nobody-by-this-name")
    page.get_by_role("link", name="Clear the search").click()
    expect(page.get_by_role("cell", name=server.email)).to_be_visible()

    page.get_by_role("link", name="Show deleted users").click()
    expect(page.get_by_role("heading", name="Deleted users", exact=True)).to_be_visible()
    expect(page.get_by_role("heading", name="No deleted users")).to_be_visible()
    assert_accessible(page)


def test_groups_list_with_its_empty_state_and_a_group_made_and_deleted(page, server):
    sign_in(page, server)
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Groups").click()
    expect(page.get_by_role("heading", name="Groups", exact=True)).to_be_visible()
    expect(page.get_by_role("heading", name="No groups yet")).to_be_visible()
    assert_accessible(page)
    page.get_by_role("link", name="Show deleted groups").click()
    expect(page.get_by_role("heading", name="No deleted groups")).to_be_visible()

    page.get_by_role("link", name="Show active groups").click()
    page.get_by_role("link", name="New group").click()
    page.get_by_label("Name", exact=True).fill("Writers")
    page.get_by_role("checkbox", name="editor").check()
    page.get_by_role("checkbox", name=re.compile("Demo admin")).check()
    page.get_by_role("button", name="Create the group").click()
    expect(page.get_by_role("status")).to_have_text("Saved.")
    assert_accessible(page)
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Delete the group").click()
    expect(page.get_by_role("heading", name="Deleted groups")).to_be_visible()
    page.get_by_role("row").filter(has_text="Writers").get_by_role("button", name="Restore").click()
    expect(page.get_by_role("heading", name="Writers")).to_be_visible()


def test_activity_log_with_filters(page, server):
    sign_in(page, server)
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Activity").click()
    expect(page.get_by_role("heading", name="Activity", exact=True)).to_be_visible()
    expect(page.get_by_role("cell", name="signed_in").first).to_be_visible()
    assert_accessible(page)
    screenshot(page, "activity")
    page.get_by_label("Log", exact=True).fill("no-such-log")
    page.get_by_role("button", name="Filter").click()
    expect(page.get_by_role("heading", name="No activity matches these filters")).to_be_visible()
    page.get_by_role("link", name="Clear the filters").click()
    expect(page.get_by_role("cell", name="signed_in").first).to_be_visible()


def test_a_user_is_created_edited_deleted_and_restored(page, server, allowed):
    sign_in(page, server)
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Users").click()
    page.get_by_role("link", name="New user").click()
    expect(page.get_by_role("heading", name="New user")).to_be_visible()
    assert_accessible(page)
    page.get_by_label("Name", exact=True).fill("Grace Hopper")
    page.get_by_label("Email", exact=True).fill("grace@example.com")
    page.get_by_label(re.compile("^Password")).fill("short")
    page.get_by_role("checkbox", name="editor").check()
    page.get_by_role("button", name="Create the user").click()
    expect(page.locator("#u-password-error")).to_be_visible()
    expect(page.get_by_role("checkbox", name="editor")).to_be_checked()
    page.get_by_label(re.compile("^Password")).fill("a long enough passphrase")
    page.get_by_role("button", name="Create the user").click()
    expect(page.get_by_role("status")).to_have_text("Saved.")
    screenshot(page, "user")

    page.get_by_label("Name", exact=True).fill("Grace B. Hopper")
    with page.expect_navigation():
        page.get_by_role("button", name="Save the user").click()
    expect(page.get_by_role("heading", name="Grace B. Hopper")).to_be_visible()

    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Delete the user").click()
    expect(page.get_by_role("heading", name="Deleted users")).to_be_visible()
    page.get_by_role("row").filter(has_text="grace@example.com").get_by_role("button", name="Restore").click()
    expect(page.get_by_role("heading", name="Grace B. Hopper")).to_be_visible()
