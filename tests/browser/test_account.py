"""The account page: profile, sessions, and "sign out everywhere else"."""

import re

from playwright.sync_api import expect

from conftest import assert_accessible, screenshot, sign_in


def test_sign_out_everywhere_else(page, browser, server):
    other = browser.new_context(base_url=server.base)
    try:
        elsewhere = other.new_page()
        sign_in(elsewhere, server)
        expect(elsewhere.get_by_role("heading", name="Dashboard")).to_be_visible()

        sign_in(page, server)
        page.get_by_role("link", name="Demo admin").click()
        expect(page.get_by_role("heading", name="Your account")).to_be_visible()
        expect(page.locator("dd").filter(has_text=server.email)).to_be_visible()
        sessions = page.get_by_role("table").locator("tbody tr")
        assert sessions.count() >= 2
        expect(sessions.filter(has_text="this session")).to_have_count(1)
        assert_accessible(page)
        screenshot(page, "account")

        page.get_by_role("button", name="Sign out everywhere else").click()
        expect(page.get_by_role("status")).to_have_text(re.compile(r"Signed out of \d+ other sessions?\."))
        expect(page.get_by_role("table").locator("tbody tr")).to_have_count(1)
        expect(page.get_by_text("This is your only session.")).to_be_visible()

        elsewhere.reload()
        expect(elsewhere).to_have_url(re.compile(r"/login$"))
    finally:
        other.close()
