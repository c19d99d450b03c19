"""Project settings: saved with htmx and shown again; a refused value next to its field."""

from playwright.sync_api import expect

from conftest import assert_accessible, screenshot, sign_in


def test_settings_are_saved_and_refused_next_to_their_field(page, server, allowed):
    sign_in(page, server)
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Project").click()
    expect(page.get_by_role("heading", name="Project settings")).to_be_visible()
    expect(page.get_by_label("Enabled locales")).to_have_value("en, de")
    assert_accessible(page)
    screenshot(page, "project")

    page.get_by_label("AI prompts per user and day").fill("25")
    page.get_by_role("button", name="Save the settings").click()
    expect(page.get_by_role("status")).to_contain_text("Saved.")
    expect(page.get_by_label("AI prompts per user and day")).to_have_value("25")

    allowed.add((422, "/settings/project"))
    page.get_by_label("Default locale").fill("xx")
    page.get_by_role("button", name="Save the settings").click()
    expect(page.locator("#s-default_locale-error")).to_be_visible()
    expect(page.get_by_label("Default locale")).to_have_attribute("aria-invalid", "true")
    assert_accessible(page)
