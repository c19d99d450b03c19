"""Team chat in the browser (issue 21): two users in two browser contexts start a conversation,
see each other's messages, reactions and unread badges live (each in under a second), and a
50 MiB attachment goes up in chunks and resumes after a chunk fails."""

import json

from playwright.sync_api import expect

from conftest import assert_accessible, screenshot, sign_in

LIVE_MS = 1000
PASSWORD = "correct horse battery staple"


def make_user(page, name, email):
    res = page.request.post(
        "/users",
        headers={"Accept": "application/json", "Content-Type": "application/json"},
        data=json.dumps(
            {"name": name, "email": email, "password": PASSWORD, "roles": ["admin"], "email_verified": True}
        ),
    )
    assert res.status == 201, res.text()
    return res.json()["data"]["id"]


def second_page(browser, server):
    context = browser.new_context(base_url=server.base, viewport={"width": 1280, "height": 800})
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    return context, page, errors


def test_two_users_chat_live(page, browser, server):
    sign_in(page, server)
    make_user(page, "Bob Builder", "bob@chat.test")
    bob_context, bob, bob_errors = second_page(browser, server)
    try:
        sign_in(bob, server, "bob@chat.test", PASSWORD)
        bob.goto("/chat?tab=private")
        expect(bob.get_by_role("heading", name="No conversations yet")).to_be_visible()

        # The admin starts a conversation with Bob through the picker, by keyboard.
        page.goto("/chat?tab=private")
        assert_accessible(page)
        people = page.get_by_label("New conversation with")
        people.fill("Bob")
        expect(page.get_by_role("option", name="Bob Builder")).to_be_visible()
        people.press("ArrowDown")
        people.press("Enter")
        page.get_by_role("button", name="Start").click()
        page.wait_for_url("**/chat/*")
        # Bob's list gets the new conversation without a reload.
        expect(bob.locator("#threads li")).to_have_count(1, timeout=LIVE_MS)

        page.get_by_role("textbox", name="Message").fill("Hello Bob, see https://example.com <b>now</b>")
        page.get_by_role("textbox", name="Message").press("Enter")
        expect(page.locator("#messages li[data-message]")).to_have_count(1)
        # Bob's unread badge counts it, live.
        expect(bob.locator("#threads [data-unread]")).to_have_text("1", timeout=LIVE_MS)
        expect(bob.locator("#chat-total")).to_have_text("1", timeout=LIVE_MS)

        bob.locator("#threads a").first.click()
        bob.wait_for_url("**/chat/*")
        message = bob.locator("#messages li[data-message]").first
        expect(message.locator(".body")).to_contain_text("<b>now</b>")
        expect(message.locator(".body a")).to_have_attribute("href", "https://example.com")
        expect(bob.locator("#chat-total")).to_be_hidden(timeout=2000)
        # Presence: each sees the other here.
        expect(page.locator("#presence")).to_contain_text("Bob Builder", timeout=2000)

        # Bob answers: the admin sees it live; the admin reacts: Bob sees it live.
        bob.get_by_role("textbox", name="Message").fill("Hi!")
        bob.get_by_role("textbox", name="Message").press("Enter")
        expect(page.locator("#messages li[data-message]")).to_have_count(2, timeout=LIVE_MS)
        answer = page.locator("#messages li[data-message]").nth(1)
        answer.hover()
        answer.get_by_role("button", name="React with 👍").click()
        expect(bob.locator("#messages li[data-message]").nth(1).locator(".reactions")).to_contain_text(
            "👍 1", timeout=LIVE_MS
        )
        screenshot(page, "chat")
        assert not bob_errors, bob_errors
    finally:
        bob_context.close()


def test_a_large_attachment_goes_up_in_chunks_and_resumes(browser, server, tmp_path):
    # A context of its own: the chunk cut off on purpose is a failed request the `page`
    # fixture would count as a problem.
    context, page, errors = second_page(browser, server)
    try:
        upload_resumes(page, server, tmp_path)
        assert not errors, errors
    finally:
        context.close()


def upload_resumes(page, server, tmp_path):
    sign_in(page, server)
    carl = make_user(page, "Carl Chunk", "carl@chat.test")
    res = page.request.put(
        "/settings/project",
        headers={"Accept": "application/json", "Content-Type": "application/json"},
        data=json.dumps({"chat_max_upload_bytes": None}),
    )
    assert res.status == 200, res.text()
    res = page.request.post(
        "/chat/threads",
        headers={"Accept": "application/json", "Content-Type": "application/json"},
        data=json.dumps({"kind": "direct", "user_ids": [carl]}),
    )
    assert res.status in (200, 201), res.text()
    chat = res.json()["data"]["id"]
    page.goto(f"/chat/{chat}?tab=private")

    failed = []

    def fail_chunk_once(route):
        # The first attempt at chunk 3 is cut off, as a dropped connection would be.
        if "/chunks/3" in route.request.url and not failed:
            failed.append(route.request.url)
            route.abort()
        else:
            route.continue_()

    page.route("**/uploads/*/chunks/*", fail_chunk_once)
    size = 50 * 1024 * 1024
    big = tmp_path / "big.bin"
    with open(big, "wb") as out:
        out.truncate(size)
    page.set_input_files("#composer-file", str(big))
    expect(page.locator("#uploads li[data-attachment]")).to_have_count(1, timeout=60_000)
    assert failed, "the interrupted chunk was not tried"
    page.get_by_role("textbox", name="Message").fill("the file")
    page.get_by_role("button", name="Send").click()
    link = page.locator("#messages .attachments a").first
    expect(link).to_have_text("big.bin")
    head = page.request.head(link.get_attribute("href"))
    assert head.status == 200
    assert int(head.headers["content-length"]) == size


def test_mentions_autocomplete_in_a_group_conversation(page, server):
    sign_in(page, server)
    dora = make_user(page, "Dora Mention", "dora@chat.test")
    eve = make_user(page, "Eve Other", "eve@chat.test")
    res = page.request.post(
        "/chat/threads",
        headers={"Accept": "application/json", "Content-Type": "application/json"},
        data=json.dumps({"kind": "direct", "user_ids": [dora, eve]}),
    )
    chat = res.json()["data"]["id"]
    page.goto(f"/chat/{chat}?tab=private")
    box = page.get_by_role("textbox", name="Message")
    box.press_sequentially("Thanks @Dor")
    expect(page.get_by_role("option", name="Dora Mention")).to_be_visible()
    box.press("ArrowDown")
    box.press("Enter")
    expect(box).to_have_value("Thanks @Dora Mention ")
    box.press("Enter")
    mention = page.locator("#messages li[data-message] .mention")
    expect(mention).to_have_text("@Dora Mention")
    assert_accessible(page)
