"""Webhooks and jobs: a webhook created from its form (a refusal next to its field first), its
secret shown once; the item that follows queues a delivery, which the jobs page shows under its
status tab and which is cancelled and retried with the keyboard."""

import json
import re
import time

from playwright.sync_api import expect

from conftest import assert_accessible, screenshot, sign_in


def test_a_webhook_is_created_and_its_delivery_cancelled_and_retried(page, server, allowed):
    sign_in(page, server)
    menu = page.get_by_role("navigation", name="Main")
    menu.get_by_role("link", name="Jobs").click()
    expect(page.get_by_role("heading", name="Jobs", exact=True)).to_be_visible()
    expect(page.get_by_text("No jobs yet. Webhook deliveries appear here.")).to_be_visible()
    assert_accessible(page)
    screenshot(page, "jobs-empty")

    menu.get_by_role("link", name="Webhooks").click()
    expect(page.get_by_role("heading", name="Webhooks", exact=True)).to_be_visible()
    expect(page.get_by_role("heading", name="No webhooks yet")).to_be_visible()
    assert_accessible(page)
    screenshot(page, "webhooks-empty")

    # No event ticked: the form comes back (422) with the problem under the events.
    allowed.add((422, "/settings/webhooks"))
    page.get_by_label("Name", exact=True).fill("site rebuild")
    # .invalid never resolves: every delivery fails, quickly, and stays in the queue to retry.
    page.get_by_label("URL").fill("https://hooks.example.invalid/vellum")
    page.get_by_role("button", name="Create the webhook").click()
    expect(page.locator("#hook-events-error")).to_be_visible()
    expect(page.get_by_label("URL")).to_have_value("https://hooks.example.invalid/vellum")
    assert_accessible(page)

    page.get_by_label("item.created").check()
    page.get_by_label("item.updated").check()
    page.get_by_role("checkbox", name="Tags (tags)").check()
    page.get_by_role("button", name="Create the webhook").click()
    secret = page.get_by_role("textbox", name="Secret")
    expect(secret).to_have_value(re.compile(r"^whsec_"))
    row = page.get_by_role("row").filter(has_text="site rebuild")
    expect(row.get_by_text("enabled", exact=True)).to_be_visible()
    assert_accessible(page)
    screenshot(page, "webhooks")

    # A tag created: its delivery queued; the worker tries it and it fails (no such host).
    res = page.request.post(
        "/collections/tags/items",
        headers={"Accept": "application/json", "Content-Type": "application/json"},
        data=json.dumps({"data": {"label": "from the browser"}}),
    )
    assert res.status == 201, res.text()

    menu.get_by_role("link", name="Jobs").click()
    failed_tab = page.get_by_role("navigation", name="Job status").get_by_role("link", name=re.compile(r"^Failed"))
    deadline = time.monotonic() + 30
    while failed_tab.inner_text().strip().endswith(" 0") and time.monotonic() < deadline:
        page.wait_for_timeout(200)
        page.reload()
    tabs = page.get_by_role("navigation", name="Job status").inner_text()
    assert re.search(r"Failed\s+[1-9]", tabs), f"no failed delivery within 30 s: {tabs}"
    # The tabs are links: the keyboard follows one.
    failed_tab.focus()
    page.keyboard.press("Enter")
    expect(failed_tab).to_have_attribute("aria-current", "page")
    first = page.locator("table.jobs tbody tr").first
    expect(first.get_by_text("item.created")).to_be_visible()
    short_id = first.locator("code").inner_text()
    job = page.get_by_role("row").filter(has_text=short_id)
    expect(job.get_by_text("failed", exact=True)).to_be_visible()

    # Cancelled with the keyboard after the confirmation, then retried.
    page.once("dialog", lambda dialog: dialog.accept())
    job.get_by_role("button", name=f"Cancel job {short_id}").focus()
    page.keyboard.press("Enter")
    expect(page.get_by_text("Job cancelled: it will not run.")).to_be_visible()
    expect(job.get_by_text("cancelled", exact=True)).to_be_visible()
    job.get_by_role("button", name=f"Retry job {short_id}").click()
    expect(page.get_by_text("Job queued again")).to_be_visible()
    expect(job).to_have_count(1)
    assert_accessible(page)
    screenshot(page, "jobs")

    # The webhook's page: its delivery log, and Replay.
    menu.get_by_role("link", name="Webhooks").click()
    page.get_by_role("link", name="site rebuild").click()
    expect(page.get_by_role("heading", name="site rebuild")).to_be_visible()
    page.get_by_text("Show the signing secret").click()
    expect(page.get_by_role("textbox", name="Secret")).to_have_value(re.compile(r"^whsec_"))
    replay = page.get_by_role("button", name=re.compile(r"^Replay delivery")).first
    expect(replay).to_be_visible()
    assert_accessible(page)
    screenshot(page, "webhook")
    replay.click()
    expect(page.get_by_text("Delivery queued again")).to_be_visible()
