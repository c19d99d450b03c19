"""Sign-in by password and by mailed code, sign-out, and the redirect to sign-in."""

import re

from playwright.sync_api import expect

from conftest import assert_accessible, screenshot, sign_in


def test_the_site_root_lands_on_sign_in(page):
    page.goto("/")
    expect(page).to_have_url(re.compile(r"/login$"))
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    assert_accessible(page)
    screenshot(page, "sign-in")


def test_password_sign_in_then_sign_out(page, server):
    sign_in(page, server)
    expect(page).to_have_url(server.base + "/")
    expect(page.get_by_role("heading", name="Dashboard")).to_be_visible()
    expect(page.get_by_role("navigation", name="Main").get_by_role("link", name="Dashboard")).to_have_attribute(
        "aria-current", "page"
    )
    assert_accessible(page)
    screenshot(page, "dashboard")
    page.get_by_role("button", name="Sign out", exact=True).click()
    expect(page).to_have_url(re.compile(r"/login$"))
    page.goto("/")
    expect(page).to_have_url(re.compile(r"/login$"))


def test_a_wrong_password_is_shown_next_to_the_email(page, server):
    sign_in(page, server, password="not the password", expect_dashboard=False)
    expect(page.locator("#email-error")).to_have_text(re.compile("credentials", re.I))
    expect(page.get_by_label("Email")).to_have_value(server.email)
    expect(page.get_by_label("Email")).to_have_attribute("aria-invalid", "true")
    assert_accessible(page)


def test_sign_in_with_a_mailed_code(page, server):
    page.goto("/login")
    page.get_by_role("link", name="Email code").click()
    page.get_by_label("Email").fill(server.email)
    mark = len(server.log_text())
    page.get_by_role("button", name="Email me a code").click()
    expect(page.get_by_role("status")).to_contain_text("sign-in code is on its way")
    page.get_by_label("Code").fill("000000")
    page.get_by_role("button", name="Sign in", exact=True).click()
    expect(page.locator("#code-error")).to_be_visible()
    code = server.mailed_code(server.email, after=mark)
    page.get_by_label("Code").fill(code)
    page.get_by_role("button", name="Sign in", exact=True).click()
    expect(page.get_by_role("heading", name="Dashboard")).to_be_visible()


def test_the_keyboard_reaches_the_sign_in_form(page, server):
    page.goto("/login")
    # The email field has focus on load; Tab moves to the password, Enter submits.
    expect(page.get_by_label("Email")).to_be_focused()
    page.keyboard.type(server.email)
    page.keyboard.press("Tab")
    page.keyboard.type(server.password)
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name="Dashboard")).to_be_visible()
