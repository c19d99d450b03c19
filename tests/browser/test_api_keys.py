"""API keys: create one from the form, see its secret once with a copy button, and revoke it
after the confirmation."""

import re

from playwright.sync_api import expect

from conftest import assert_accessible, screenshot, sign_in


def test_a_key_is_created_shown_once_and_revoked(page, server):
    sign_in(page, server)
    page.get_by_role("navigation", name="Main").get_by_role("link", name="API keys").click()
    expect(page.get_by_role("heading", name="API keys", exact=True)).to_be_visible()
    assert_accessible(page)

    page.get_by_label("Name").fill("browser key")
    page.get_by_label("Role").select_option("editor")
    page.get_by_label("Allowed addresses").fill("not an address")
    page.get_by_role("button", name="Create the key").click()
    expect(page.locator("#key-ips-error")).to_be_visible()
    page.get_by_label("Allowed addresses").fill("10.0.0.0/8")
    page.get_by_role("button", name="Create the key").click()

    secret = page.get_by_role("textbox", name="Secret")
    expect(secret).to_have_value(re.compile(r"^ek_"))
    page.get_by_role("button", name="Copy").click()
    expect(page.locator("[data-copied=secret]")).not_to_have_text("")
    assert_accessible(page)
    screenshot(page, "api-keys")

    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Revoke browser key").click()
    expect(page.get_by_text("Key revoked.")).to_be_visible()
    expect(page.get_by_role("textbox", name="Secret")).to_have_count(0)
    row = page.get_by_role("row").filter(has_text="browser key")
    expect(row.get_by_text("revoked", exact=True)).to_be_visible()
