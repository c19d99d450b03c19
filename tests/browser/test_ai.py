"""AI chat in the browser (issue 22): a streamed answer appears token by token, the conversation
gets its address and a place in the list, Stop cuts an answer short (kept, marked incomplete),
and the page passes axe. The provider is the suite's fake (conftest.FakeAi)."""

import time

from playwright.sync_api import expect

from conftest import assert_accessible, screenshot, sign_in


def test_a_streamed_answer_appears_token_by_token(page, server):
    sign_in(page, server)
    page.goto("/ai")
    expect(page.get_by_role("heading", name="AI chat")).to_be_visible()
    expect(page.get_by_role("heading", name="No conversations yet")).to_be_visible()
    assert_accessible(page)
    screenshot(page, "ai-empty")

    box = page.get_by_role("textbox", name="Message")
    box.fill("Tell me a story")
    box.press("Enter")
    answer = page.locator('#messages li[data-role="assistant"] .body')
    # Sample the answer while it streams: it must grow through several partial states.
    seen = []
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        text = answer.text_content() if answer.count() else ""
        if text and (not seen or seen[-1] != text):
            seen.append(text)
        if text == "Once upon a time there was a CMS.":
            break
        time.sleep(0.05)
    assert seen[-1] == "Once upon a time there was a CMS.", seen
    assert len(seen) >= 4, f"the answer arrived in {len(seen)} steps: {seen}"
    assert seen[0] in ("Once ", "Once upon "), seen
    page.wait_for_url("**/ai/*")
    expect(page.locator("#ai-stop")).to_be_hidden()
    expect(page.get_by_role("textbox", name="Message")).to_be_focused()

    # After a reload the conversation is in the list, titled by the prompt, with both messages.
    page.reload()
    expect(page.locator("#conversations li")).to_have_count(1)
    expect(page.locator("#conversations li").first).to_contain_text("Tell me a story")
    expect(page.locator("#messages li[data-role]")).to_have_count(2)
    assert_accessible(page)
    screenshot(page, "ai-conversation")


def test_stop_keeps_the_partial_answer(page, server, aborted):
    aborted.add("/ai/chat")
    sign_in(page, server)
    page.goto("/ai")
    box = page.get_by_role("textbox", name="Message")
    box.fill("Count slowly [slow]")
    box.press("Enter")
    answer = page.locator('#messages li[data-role="assistant"]').last
    expect(answer.locator(".body")).to_contain_text("t2 ", timeout=5000)
    page.get_by_role("button", name="Stop").click()
    expect(answer).to_contain_text("(stopped)")
    expect(page.get_by_role("button", name="Stop")).to_be_hidden()
    page.wait_for_url("**/ai/*")
    # The server kept what was said, marked incomplete.
    time.sleep(0.5)
    page.reload()
    kept = page.locator('#messages li[data-role="assistant"]').last
    expect(kept).to_contain_text("(incomplete)")
    expect(kept.locator(".body")).to_contain_text("t0 t1 t2")
    assert "t199" not in kept.locator(".body").text_content()


def test_errors_are_shown_in_place(page, server, allowed):
    allowed.add((422, "/ai/attachments"))
    sign_in(page, server)
    page.goto("/ai")
    page.locator("#ai-file").set_input_files(
        files=[{"name": "photo.png", "mimeType": "image/png", "buffer": b"\x89PNG...."}]
    )
    alert = page.locator("#ai-error")
    expect(alert).to_contain_text("photo.png: The file must be a file of type: csv, txt, xlsx, pdf.")
    page.locator("#ai-file").set_input_files(
        files=[{"name": "notes.txt", "mimeType": "text/plain", "buffer": b"The launch is on Friday."}]
    )
    expect(page.locator("#ai-uploads li")).to_contain_text("notes.txt")
    page.get_by_role("button", name="Remove notes.txt").click()
    expect(page.locator("#ai-uploads li")).to_have_count(0)
