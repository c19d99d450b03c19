"""The file manager: a folder, an upload with its progress bar, the file's page with the
focal-point picker, metadata saved with htmx, a replace, favorites and the trash."""

import pathlib
import re
import struct
import tempfile
import zlib

from playwright.sync_api import expect

from conftest import assert_accessible, screenshot, sign_in


def png(width, height, color):
    """A plain RGB PNG of one color."""
    row = b"\x00" + bytes(color) * width
    raw = zlib.compress(row * height)

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", raw) + chunk(b"IEND", b"")


def test_upload_focal_point_replace_and_trash(page, server):
    work = pathlib.Path(tempfile.mkdtemp())
    first, second = work / "sunrise.png", work / "sunrise-2.png"
    first.write_bytes(png(120, 80, (250, 180, 40)))
    second.write_bytes(png(90, 60, (40, 120, 250)))

    sign_in(page, server)
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Files").click()
    expect(page.get_by_role("heading", name="Files", exact=True)).to_be_visible()
    page.get_by_label("New folder").fill("Browser uploads")
    page.get_by_role("button", name="Create the folder").click()
    expect(page.get_by_role("heading", name="Browser uploads")).to_be_visible()
    expect(page.get_by_role("heading", name="This folder is empty")).to_be_visible()
    assert_accessible(page)

    # Choosing the file sends it at once, with a progress bar, then the folder reloads.
    page.get_by_label("Drop files here, or choose them").set_input_files(str(first))
    expect(page.get_by_role("link", name=re.compile("sunrise.png"))).to_be_visible()
    screenshot(page, "files")
    page.get_by_role("link", name=re.compile("sunrise.png")).click()
    expect(page.get_by_role("heading", name="sunrise.png")).to_be_visible()
    expect(page.get_by_text("120 × 80 px")).to_be_visible()

    # The focal point: a click on the preview fills the inputs (a quarter across, half down).
    image = page.get_by_role("img", name="sunrise.png", exact=True)
    box = image.bounding_box()
    page.mouse.click(box["x"] + box["width"] * 0.25, box["y"] + box["height"] * 0.5)
    expect(page.get_by_label("Horizontal")).to_have_value("0.25")
    expect(page.get_by_label("Vertical")).to_have_value("0.5")
    page.get_by_label("Alternative text").fill("A sunrise over the hills")
    with page.expect_navigation():
        page.get_by_role("button", name="Save the details").click()
    expect(page.get_by_role("status")).to_have_text("Saved.")
    expect(page.get_by_label("Horizontal")).to_have_value("0.25")
    expect(page.get_by_label("Alternative text")).to_have_value("A sunrise over the hills")
    assert_accessible(page)
    screenshot(page, "file")

    page.get_by_label("Replace the file's bytes").set_input_files(str(second))
    page.get_by_role("button", name="Replace", exact=True).click()
    expect(page.get_by_role("status")).to_contain_text("Replaced")
    expect(page.get_by_text("90 × 60 px")).to_be_visible()
    expect(page.get_by_label("Alternative text")).to_have_value("A sunrise over the hills")

    page.get_by_role("button", name="☆ Add to favorites").click()
    expect(page.get_by_role("button", name="★ Remove from favorites")).to_be_visible()

    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Move to the trash").click()
    expect(page.get_by_role("heading", name="Browser uploads")).to_be_visible()
    expect(page.get_by_role("heading", name="This folder is empty")).to_be_visible()
    page.get_by_role("link", name="Show the trash").click()
    expect(page.get_by_role("link", name=re.compile("sunrise.png"))).to_be_visible()
