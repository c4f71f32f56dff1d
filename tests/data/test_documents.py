"""Reading corpus files by type: Markdown and text as written, an HTML page's main text, a PDF's
pages (made by `tests.data.pdf`), and why a file that yields no text is skipped."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragexp.data.dataset import load_corpus
from ragexp.data.documents import PAGE_BREAK, Skipped, is_document, read_document
from ragexp.errors import RagexpWarning
from tests.data.pdf import pdf_bytes

ARTICLE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Opening hours | Museum</title>
<style>body { font-family: serif }</style>
<script>window.analytics = "TRACKING-SCRIPT";</script></head>
<body>
<nav><ul><li><a href="/">Home</a></li><li><a href="/shop">Shop</a></li>
<li><a href="/visit">Plan your visit</a></li></ul></nav>
<main>
<h1>Opening hours</h1>
<p>The museum opens at <b>ten</b> in the morning and closes at six, every day but Monday.</p>
<p>Guided tours of the east wing leave from the main hall at eleven and at three.</p>
<ol><li>Buy a ticket at the desk by the north entrance.</li>
<li>Leave large bags in the cloakroom downstairs.</li></ol>
<script>trackPageView("INLINE-SCRIPT");</script>
</main>
<footer><p>Copyright 2026 City Museum. All rights reserved. FOOTER-TEXT</p></footer>
</body></html>
"""


def write(path: Path, data: bytes | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode("utf-8")
    path.write_bytes(data)
    return path


def test_the_types_read_are_md_txt_html_htm_and_pdf_in_any_case() -> None:
    readable = ["a.md", "a.txt", "a.html", "a.htm", "a.pdf", "A.PDF", "b.HTML"]
    assert all(is_document(Path(name)) for name in readable)
    assert not any(is_document(Path(n)) for n in ["a.docx", "a.rst", "a.json", "README"])


def test_an_html_page_yields_its_main_text_without_navigation_scripts_or_footer(
    tmp_path: Path,
) -> None:
    text = read_document(write(tmp_path / "hours.html", ARTICLE))
    assert isinstance(text, str)
    assert "The museum opens at ten in the morning and closes at six" in text
    assert "Guided tours of the east wing leave from the main hall" in text
    assert "Buy a ticket at the desk by the north entrance." in text
    for boilerplate in ("TRACKING-SCRIPT", "INLINE-SCRIPT", "FOOTER-TEXT", "font-family"):
        assert boilerplate not in text
    assert "Plan your visit" not in text and "Shop" not in text
    lines = text.splitlines()
    assert "Opening hours" in lines  # the heading keeps a line of its own


def test_an_html_page_in_another_encoding_is_read_as_it_says(tmp_path: Path) -> None:
    page = (
        '<html><head><meta charset="iso-8859-1"></head><body><main><p>Le caf\u00e9 ouvre '
        "\u00e0 huit heures, la cr\u00e8me br\u00fbl\u00e9e est servie jusqu'\u00e0 midi.</p>"
        "</main></body></html>"
    )
    text = read_document(write(tmp_path / "cafe.htm", page.encode("latin-1")))
    assert text == page.split("<p>")[1].split("</p>")[0]


def test_an_html_page_with_no_text_is_skipped_as_empty(tmp_path: Path) -> None:
    app = "<html><body><div id='root'></div><script>render(App)</script></body></html>"
    assert read_document(write(tmp_path / "app.html", app)) == Skipped(
        "empty", "no main text found"
    )


def test_a_pdf_yields_its_pages_joined_by_form_feeds(tmp_path: Path) -> None:
    pages = ["The shuttle (line 4) leaves at nine.\nCaf\u00e9 hours: 8 to 5.", "", "Page three."]
    text = read_document(write(tmp_path / "manual.pdf", pdf_bytes(pages)))
    assert isinstance(text, str)
    assert text.split(PAGE_BREAK) == [
        "The shuttle (line 4) leaves at nine.\nCaf\u00e9 hours: 8 to 5.",
        "",  # the empty page stays, so page three is still the third
        "Page three.",
    ]


def test_a_pdf_without_text_is_skipped_naming_its_pages(tmp_path: Path) -> None:
    scan = write(tmp_path / "scan.pdf", pdf_bytes(["", ""]))
    assert read_document(scan) == Skipped("empty", "no text on its 2 pages: a scan? OCR it first")


@pytest.mark.parametrize(
    "data", [b"%PDF-1.4 not really", pdf_bytes(["cut short"])[:150], b""], ids=str
)
def test_a_damaged_pdf_is_skipped_saying_pypdf_cannot_read_it(tmp_path: Path, data: bytes) -> None:
    skipped = read_document(write(tmp_path / "broken.pdf", data))
    assert isinstance(skipped, Skipped) and skipped.kind == "pdf"
    assert skipped.reason.startswith("not a PDF pypdf can read: ")
    assert "\n" not in skipped.reason


def test_a_mixed_corpus_warns_once_naming_every_file_without_text(tmp_path: Path) -> None:
    folder = tmp_path / "corpus"
    write(folder / "guide.md", "# Guide\n\nRead me.\n")
    write(folder / "web" / "hours.html", ARTICLE)
    write(folder / "manual.pdf", pdf_bytes(["Page one.", "Page two."]))
    write(folder / "scan.pdf", pdf_bytes([""]))
    write(folder / "web" / "app.html", "<html><body><script>x()</script></body></html>")
    write(folder / "old.txt", "caf\u00e9".encode("latin-1"))
    write(folder / "broken.pdf", b"%PDF-1.4 not really")
    with pytest.warns(RagexpWarning) as caught:
        documents = load_corpus(folder)
    assert sorted(documents) == ["guide.md", "manual.pdf", "web/hours.html"]
    assert documents["manual.pdf"] == f"Page one.{PAGE_BREAK}Page two."
    [warning] = caught
    message = str(warning.message)
    assert "\n" not in message
    assert message.startswith(
        f"{folder}: skipped 1 file that cannot be read as UTF-8 text: old.txt (byte 0xe9 at "
        "offset 3) and 1 file that is not a PDF pypdf can read: broken.pdf (not a PDF pypdf can "
        "read: "
    )
    assert message.endswith(
        "and 2 files that yield no text: scan.pdf (no text on its 1 page: a scan? OCR it "
        "first), web/app.html (no main text found); using the other 3; re-save the file not in "
        "UTF-8 as UTF-8 to include it"
    )
