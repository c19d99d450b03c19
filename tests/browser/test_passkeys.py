"""Passkeys: register one on the account page with Chromium's virtual authenticator (resident
keys on), sign out, sign in without a username, then remove it."""

import re

from playwright.sync_api import expect

from conftest import assert_accessible, screenshot, sign_in


def virtual_authenticator(page):
    cdp = page.context.new_cdp_session(page)
    cdp.send("WebAuthn.enable")
    authenticator = cdp.send(
        "WebAuthn.addVirtualAuthenticator",
        {
            "options": {
                "protocol": "ctap2",
                "transport": "internal",
                "hasResidentKey": True,
                "hasUserVerification": True,
                "isUserVerified": True,
                "automaticPresenceSimulation": True,
            }
        },
    )
    return cdp, authenticator["authenticatorId"]


def test_register_sign_in_with_and_remove_a_passkey(page, server):
    cdp, authenticator = virtual_authenticator(page)
    sign_in(page, server)
    page.goto("/account")
    page.get_by_label("Name for a new passkey").fill("Test laptop")
    page.get_by_role("button", name="Add a passkey").click()
    passkeys = page.get_by_role("region", name="Passkeys")
    row = passkeys.get_by_role("row").filter(has_text="Test laptop")
    expect(row).to_have_count(1)
    expect(row.get_by_role("cell", name="never")).to_be_visible()
    stored = cdp.send("WebAuthn.getCredentials", {"authenticatorId": authenticator})
    assert any(c["isResidentCredential"] for c in stored["credentials"]), stored
    assert_accessible(page)
    screenshot(page, "account-passkeys")

    page.get_by_role("button", name="Sign out", exact=True).click()
    expect(page).to_have_url(re.compile(r"/login$"))
    page.get_by_role("button", name="Sign in with a passkey").click()
    expect(page.get_by_role("heading", name="Dashboard")).to_be_visible()

    page.goto("/account")
    expect(row.get_by_role("cell", name="never")).to_have_count(0)
    page.once("dialog", lambda dialog: dialog.accept())
    row.get_by_role("button", name="Remove").click()
    expect(row).to_have_count(0)


def test_a_passkey_the_server_does_not_know_is_refused(page, server, allowed):
    allowed.add((422, "/login/passkey"))
    virtual_authenticator(page)
    # A resident credential for this site that was never registered with the server.
    sign_in(page, server)
    page.goto("/account")
    page.get_by_label("Name for a new passkey").fill("Forgotten")
    page.get_by_role("button", name="Add a passkey").click()
    row = page.get_by_role("region", name="Passkeys").get_by_role("row").filter(has_text="Forgotten")
    expect(row).to_have_count(1)
    page.once("dialog", lambda dialog: dialog.accept())
    row.get_by_role("button", name="Remove").click()
    expect(row).to_have_count(0)
    # The authenticator still holds it; the server no longer does.
    page.get_by_role("button", name="Sign out", exact=True).click()
    with page.expect_response("**/login/passkey") as answer:
        page.get_by_role("button", name="Sign in with a passkey").click()
    assert answer.value.status == 422
    expect(page.get_by_role("alert")).to_have_text("The passkey could not be verified.")
    expect(page).to_have_url(re.compile(r"/login$"))
