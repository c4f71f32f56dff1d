"""Loading a corpus folder and a JSONL golden set; the bundled demo dataset."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from ragexp.config import DatasetConfig
from ragexp.config.hydra import bundled_data_dir
from ragexp.data.dataset import Case, Dataset, load_cases, load_corpus, load_dataset
from ragexp.errors import DatasetError, RagexpWarning

DEMO = bundled_data_dir() / "demo"


def write_lines(path: Path, *lines: str) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def row(**fields: Any) -> str:
    return json.dumps(fields)


def dataset_error(path: Path) -> str:
    with pytest.raises(DatasetError) as info:
        load_cases(path)
    message = str(info.value)
    assert "\n" not in message
    assert info.value.exit_code == 2
    return message


# -- load_cases ---------------------------------------------------------------------------


def test_load_cases_reads_every_field(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "cases.jsonl",
        row(id="a", question="Q1?", reference="R1", relevant_docs=["x.md", "sub/y.md"]),
        row(id="b", question="Q2?"),
        row(id="c", question="Q3?", relevant_docs=[]),
    )
    cases = load_cases(path)
    assert cases == [
        Case("a", "Q1?", "R1", ("x.md", "sub/y.md"), cluster="x.md"),  # its first relevant doc
        Case("b", "Q2?", None, None),
        Case("c", "Q3?", None, ()),
    ]


def test_a_case_s_cluster_is_its_field_else_its_first_relevant_document(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "cases.jsonl",
        row(id="a", question="Q1?", relevant_docs=["x.md", "y.md"], cluster="topic-1"),
        row(id="b", question="Q2?", relevant_docs=["x.md"]),
        row(id="c", question="Q3?", cluster=7),
        row(id="d", question="Q4?"),
    )
    assert [c.cluster for c in load_cases(path)] == ["topic-1", "x.md", "7", None]
    assert [c.cluster for c in load_cases(path, "off")] == [None, None, None, None]


def test_a_named_cluster_field_is_allowed_and_read(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "cases.jsonl",
        row(id="a", question="Q1?", source="report-2"),
        row(id="b", question="Q2?"),
    )
    with pytest.raises(DatasetError, match="unknown field"):
        load_cases(path)
    assert [c.cluster for c in load_cases(path, "source")] == ["report-2", None]


def test_the_cluster_is_not_part_of_the_dataset_fingerprint(tmp_path: Path) -> None:
    plain = write_lines(tmp_path / "a.jsonl", row(id="a", question="Q1?"))
    tagged = write_lines(tmp_path / "b.jsonl", row(id="a", question="Q1?", cluster="t"))
    docs = {"x.md": "text"}
    assert (
        Dataset("d", docs, load_cases(plain)).fingerprint()
        == Dataset("d", docs, load_cases(tagged)).fingerprint()
    )


def test_blank_lines_are_skipped_and_line_numbers_kept(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "cases.jsonl",
        row(id="a", question="Q1?"),
        "",
        "   ",
        row(id="b", question="Q2?"),
        "",
    )
    assert [c.id for c in load_cases(path)] == ["a", "b"]

    bad = write_lines(tmp_path / "bad.jsonl", row(id="a", question="Q1?"), "", "", "{oops")
    assert dataset_error(bad).startswith(f"{bad}:4: ")


def test_malformed_json_line(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "cases.jsonl", row(id="a", question="Q?"), '{"id": "b",')
    message = dataset_error(path)
    assert message.startswith(f"{path}:2: not valid JSON")


def test_duplicate_id_mentions_the_first_line(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "cases.jsonl",
        row(id="a", question="Q1?"),
        row(id="b", question="Q2?"),
        row(id="a", question="Q3?"),
    )
    message = dataset_error(path)
    assert message.startswith(f"{path}:3: duplicate id 'a'")
    assert "first on line 1" in message


@pytest.mark.parametrize(
    "fields",
    [
        {"id": "a"},
        {"id": "a", "question": ""},
        {"id": "a", "question": "   "},
        {"id": "a", "question": None},
    ],
    ids=["absent", "empty", "blank", "null"],
)
def test_missing_question(tmp_path: Path, fields: dict[str, Any]) -> None:
    path = write_lines(tmp_path / "cases.jsonl", json.dumps(fields))
    message = dataset_error(path)
    assert message.startswith(f"{path}:1: missing 'question'")


def test_question_of_another_type_says_what_it_got(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "cases.jsonl", row(id="a", question=3))
    assert dataset_error(path) == f"{path}:1: 'question' must be a string, got 3"


def test_missing_id(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "cases.jsonl", row(question="Q?"))
    assert dataset_error(path).startswith(f"{path}:1: missing 'id'")


def test_integer_ids_are_read_as_their_decimal_text(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "cases.jsonl",
        row(id=7, question="Q7?"),
        row(id=0, question="Q0?"),
        row(id="x", question="Qx?"),
    )
    assert [c.id for c in load_cases(path)] == ["7", "0", "x"]


def test_an_integer_id_and_its_text_are_the_same_case(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "cases.jsonl", row(id=7, question="Q?"), row(id="7", question="Q?")
    )
    assert dataset_error(path).startswith(f"{path}:2: duplicate id '7' (first on line 1)")


@pytest.mark.parametrize(
    ("value", "shown"),
    [(7.5, "7.5"), (True, "true"), (["a"], '["a"]'), ({"n": 1}, '{"n": 1}')],
    ids=["float", "bool", "list", "object"],
)
def test_id_of_another_type_says_what_it_got(tmp_path: Path, value: Any, shown: str) -> None:
    path = write_lines(
        tmp_path / "cases.jsonl", row(id="a", question="Q?"), row(id=value, question="Q?")
    )
    assert dataset_error(path) == (
        f"{path}:2: 'id' must be a string or a whole number, got {shown}"
    )


def test_a_long_value_is_cut_short_in_the_message(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "cases.jsonl", row(id=["x" * 500], question="Q?"))
    message = dataset_error(path)
    assert message.endswith("…") and len(message) < len(str(path)) + 100


def test_cases_file_not_utf8_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl"
    latin1 = '{"id": "b", "question": "Caf\u00e9?"}'.encode("latin-1")
    path.write_bytes(row(id="a", question="Q?").encode() + b"\n" + latin1 + b"\n")
    assert dataset_error(path) == (
        f"{path}:2: not UTF-8 text (byte 0xe9 at offset 28); re-save the file as UTF-8"
    )


def test_cases_file_with_a_byte_order_mark_and_crlf(tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_bytes(
        b"\xef\xbb\xbf"
        + row(id="a", question="Q?").encode()
        + b"\r\n\r\n"
        + row(id="b", question="R?").encode()
    )
    assert [c.id for c in load_cases(path)] == ["a", "b"]
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(row(id="a", question="Q?").encode() + b"\r\n\r\n{oops\r\n")
    assert dataset_error(bad).startswith(f"{bad}:3: not valid JSON")


def test_unknown_field(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "cases.jsonl",
        row(id="a", question="Q?"),
        row(id="b", question="Q?", answer="42"),
    )
    message = dataset_error(path)
    assert message.startswith(f"{path}:2: unknown field(s) answer")
    assert "allowed: id, question, reference, relevant_docs" in message


@pytest.mark.parametrize("value", ["doc.md", {"doc.md": 1}, ["doc.md", 3]])
def test_relevant_docs_must_be_a_list_of_strings(tmp_path: Path, value: Any) -> None:
    path = write_lines(tmp_path / "cases.jsonl", row(id="a", question="Q?", relevant_docs=value))
    message = dataset_error(path)
    assert message.startswith(f"{path}:1: ")
    assert "'relevant_docs' must be a list" in message


def test_reference_must_be_a_string(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "cases.jsonl", row(id="a", question="Q?", reference=["x"]))
    assert dataset_error(path).startswith(f"{path}:1: 'reference' must be a string")


def test_a_line_must_be_an_object(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "cases.jsonl", '["a", "Q?"]')
    assert dataset_error(path).startswith(f"{path}:1: expected a JSON object, got list")


def test_file_without_cases(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "cases.jsonl", "", "  ")
    assert dataset_error(path).startswith(f"{path}: no cases")


# -- load_corpus --------------------------------------------------------------------------


def make_corpus(root: Path) -> Path:
    (root / "guides" / "hiking").mkdir(parents=True)
    (root / "a.md").write_text("# A\n\nAlpha.\n", encoding="utf-8")
    (root / "b.txt").write_text("Bravo.\n", encoding="utf-8")
    (root / "guides" / "c.md").write_text("Charlie.\n", encoding="utf-8")
    (root / "guides" / "hiking" / "d.txt").write_text("Delta.\n", encoding="utf-8")
    (root / "notes.rst").write_text("ignored", encoding="utf-8")
    (root / "data.json").write_text("{}", encoding="utf-8")
    (root / "guides" / "e.docx").write_bytes(b"PK\x03\x04 ignored")
    (root / "guides" / "hiking" / "README").write_text("ignored", encoding="utf-8")
    return root


def test_load_corpus_ids_are_relative_posix_paths(tmp_path: Path) -> None:
    docs = load_corpus(make_corpus(tmp_path / "corpus"))
    assert docs == {
        "a.md": "# A\n\nAlpha.\n",
        "b.txt": "Bravo.\n",
        "guides/c.md": "Charlie.\n",
        "guides/hiking/d.txt": "Delta.\n",
    }


def test_empty_folder_is_an_error(tmp_path: Path) -> None:
    folder = tmp_path / "empty"
    folder.mkdir()
    with pytest.raises(DatasetError, match=r"no \.md, \.txt, \.html or \.pdf documents") as info:
        load_corpus(folder)
    assert str(folder) in str(info.value)


def test_folder_with_only_other_files_is_an_error(tmp_path: Path) -> None:
    folder = tmp_path / "other"
    folder.mkdir()
    (folder / "x.docx").write_bytes(b"PK\x03\x04")
    (folder / "notes.rst").write_text("Notes.\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"no \.md, \.txt, \.html or \.pdf documents"):
        load_corpus(folder)


def test_a_folder_of_blank_documents_names_them(tmp_path: Path) -> None:
    folder = tmp_path / "blank"
    folder.mkdir()
    (folder / "blank.md").write_text("  \n\n", encoding="utf-8")
    with pytest.raises(DatasetError) as info:
        load_corpus(folder)
    assert str(info.value) == (
        f"{folder}: no document left: skipped 1 file that yields no text: blank.md (blank); "
        "point dataset.corpus at documents with text"
    )


LATIN1 = "Caf\u00e9 cr\u00e8me".encode("latin-1")
BINARY = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"
UTF16 = "hello".encode("utf-16-le")  # decodes as UTF-8 by luck (h\0e\0...): binary


def test_undecodable_documents_are_skipped_with_one_warning_naming_them(tmp_path: Path) -> None:
    folder = make_corpus(tmp_path / "corpus")
    (folder / "caf\u00e9.md").write_bytes(LATIN1)
    (folder / "guides" / "logo.txt").write_bytes(BINARY)
    (folder / "wide.txt").write_bytes(UTF16)
    with pytest.warns(RagexpWarning) as caught:
        docs = load_corpus(folder)
    assert sorted(docs) == ["a.md", "b.txt", "guides/c.md", "guides/hiking/d.txt"]
    [warning] = caught
    message = str(warning.message)
    assert "\n" not in message
    assert message == (
        f"{folder}: skipped 3 files that cannot be read as UTF-8 text: "
        "caf\u00e9.md (byte 0xe9 at offset 3), guides/logo.txt (binary), wide.txt (binary); "
        "using the other 4; re-save them as UTF-8 to include them"
    )


def test_a_binary_file_that_happens_to_decode_is_skipped(tmp_path: Path) -> None:
    folder = make_corpus(tmp_path / "corpus")
    (folder / "nul.txt").write_bytes(b"plain ascii\x00\x01\x02")
    with pytest.warns(RagexpWarning) as caught:
        assert "nul.txt" not in load_corpus(folder)
    assert str(caught[0].message) == (
        f"{folder}: skipped 1 file that cannot be read as UTF-8 text: nul.txt (binary); "
        "using the other 4; re-save it as UTF-8 to include it"
    )


def test_a_long_list_of_skipped_files_is_cut_short(tmp_path: Path) -> None:
    folder = make_corpus(tmp_path / "corpus")
    for i in range(8):
        (folder / f"old{i}.txt").write_bytes(LATIN1)
    with pytest.warns(RagexpWarning) as caught:
        load_corpus(folder)
    message = str(caught[0].message)
    assert "skipped 8 files" in message
    assert "old4.txt (byte 0xe9 at offset 3) and 3 more;" in message
    assert "old5.txt" not in message


@pytest.mark.parametrize("content", [LATIN1, BINARY], ids=["latin-1", "binary"])
def test_no_document_left_is_an_error_naming_the_files(tmp_path: Path, content: bytes) -> None:
    folder = tmp_path / "bad"
    folder.mkdir()
    (folder / "only.md").write_bytes(content)
    (folder / "blank.md").write_text("\n", encoding="utf-8")
    with pytest.raises(DatasetError) as info:
        load_corpus(folder)
    message = str(info.value)
    assert "\n" not in message and info.value.exit_code == 2
    reason = "byte 0xe9 at offset 3" if content == LATIN1 else "binary"
    assert message == (
        f"{folder}: no document left: skipped 1 file that cannot be read as UTF-8 text: "
        f"only.md ({reason}) and 1 file that yields no text: blank.md (blank); "
        "re-save as UTF-8 (e.g. iconv -f latin1 -t utf-8 old.md > new.md)"
    )


def test_document_newlines_are_normalised_as_before(tmp_path: Path) -> None:
    folder = tmp_path / "crlf"
    folder.mkdir()
    (folder / "win.md").write_bytes(b"one\r\ntwo\rthree\n")
    assert load_corpus(folder) == {"win.md": "one\ntwo\nthree\n"}


# -- load_dataset -------------------------------------------------------------------------


def tiny_dataset(tmp_path: Path, **options: Any) -> DatasetConfig:
    corpus = make_corpus(tmp_path / "corpus")
    cases = write_lines(
        tmp_path / "cases.jsonl",
        *(row(id=f"q{i}", question=f"Question {i}?") for i in range(1, 6)),
    )
    return DatasetConfig(name="tiny", corpus=corpus, cases=cases, **options)


def test_load_dataset(tmp_path: Path) -> None:
    dataset = load_dataset(tiny_dataset(tmp_path))
    assert dataset.name == "tiny"
    assert len(dataset.documents) == 4
    assert [c.id for c in dataset.cases] == ["q1", "q2", "q3", "q4", "q5"]


def test_only_keeps_file_order(tmp_path: Path) -> None:
    dataset = load_dataset(tiny_dataset(tmp_path, only=["q4", "q2"]))
    assert [c.id for c in dataset.cases] == ["q2", "q4"]


def test_only_with_unknown_id(tmp_path: Path) -> None:
    with pytest.raises(DatasetError) as info:
        load_dataset(tiny_dataset(tmp_path, only=["q1", "q9"]))
    message = str(info.value)
    assert message.startswith("dataset.only: ")
    assert "q9" in message
    assert "q1" not in message.split(" in ")[0]


def test_limit(tmp_path: Path) -> None:
    assert [c.id for c in load_dataset(tiny_dataset(tmp_path, limit=2)).cases] == ["q1", "q2"]


def test_limit_larger_than_the_set(tmp_path: Path) -> None:
    assert len(load_dataset(tiny_dataset(tmp_path, limit=50)).cases) == 5


def test_only_then_limit(tmp_path: Path) -> None:
    dataset = load_dataset(tiny_dataset(tmp_path, only=["q5", "q3", "q1"], limit=2))
    assert [c.id for c in dataset.cases] == ["q1", "q3"]


# -- the bundled demo ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def demo() -> Dataset:
    config = DatasetConfig(name="demo", corpus=DEMO / "corpus", cases=DEMO / "cases.jsonl")
    return load_dataset(config)


def test_demo_has_enough_documents_and_cases(demo: Dataset) -> None:
    assert len(demo.documents) >= 15
    assert len(demo.cases) >= 20
    assert all(doc_id.endswith((".md", ".txt")) for doc_id in demo.documents)


def test_demo_cases_are_complete(demo: Dataset) -> None:
    for case in demo.cases:
        assert case.id.strip(), case
        assert case.question.strip(), case
        assert case.reference is not None and case.reference.strip(), case.id
        assert case.relevant_docs is not None, case.id
        for doc_id in case.relevant_docs:
            assert doc_id in demo.documents, f"{case.id}: {doc_id} is not in the corpus"


def test_demo_has_unanswerable_cases(demo: Dataset) -> None:
    unanswerable = [
        c for c in demo.cases if c.relevant_docs is not None and len(c.relevant_docs) == 0
    ]
    assert len(unanswerable) >= 3


def test_demo_ids_are_unique(demo: Dataset) -> None:
    ids = [c.id for c in demo.cases]
    assert len(ids) == len(set(ids))


def test_fingerprint_is_stable_and_tracks_changes(tmp_path: Path, demo: Dataset) -> None:
    corpus = tmp_path / "corpus"
    shutil.copytree(DEMO / "corpus", corpus)
    config = DatasetConfig(name="demo", corpus=corpus, cases=DEMO / "cases.jsonl")
    copied = load_dataset(config)
    assert copied.fingerprint() == demo.fingerprint()
    assert len(demo.fingerprint()) == 12

    doc = sorted(corpus.glob("*.md"))[0]
    doc.write_text(doc.read_text(encoding="utf-8") + "\nOne more sentence.\n", encoding="utf-8")
    changed = load_dataset(config)
    assert changed.fingerprint() != demo.fingerprint()


def test_fingerprint_tracks_cases(demo: Dataset) -> None:
    fewer = Dataset(demo.name, demo.documents, demo.cases[:-1])
    assert fewer.fingerprint() != demo.fingerprint()
    edited = Dataset(
        demo.name,
        demo.documents,
        [Case(demo.cases[0].id, demo.cases[0].question + " ", None, None), *demo.cases[1:]],
    )
    assert edited.fingerprint() != demo.fingerprint()


def test_a_link_out_of_the_corpus_is_skipped_with_a_warning(tmp_path: Path) -> None:
    """A symlink that leads out of the corpus folder would send whatever it points at to the
    LLMs and MLflow: skipped and named; a link inside is read; a linked folder is not walked."""
    folder = make_corpus(tmp_path / "corpus")
    outside = tmp_path / "private"
    outside.mkdir()
    (outside / "keys.md").write_text("the secret is 42\n")
    (folder / "keys.md").symlink_to(outside / "keys.md")
    (folder / "elsewhere").symlink_to(outside, target_is_directory=True)
    (folder / "alias.md").symlink_to(folder / "a.md")
    with pytest.warns(RagexpWarning) as caught:
        docs = load_corpus(folder)
    assert sorted(docs) == ["a.md", "alias.md", "b.txt", "guides/c.md", "guides/hiking/d.txt"]
    assert not any("secret" in text for text in docs.values())
    [warning] = caught
    assert str(warning.message) == (
        f"{folder}: skipped 1 link that leads out of the corpus folder (copy the file in to "
        f"include it): keys.md (-> {outside.resolve() / 'keys.md'}); using the other 5"
    )


def test_relevant_docs_that_name_no_document_are_one_warning(tmp_path: Path) -> None:
    folder = make_corpus(tmp_path / "corpus")
    cases = write_lines(
        tmp_path / "cases.jsonl",
        row(id="q1", question="?", relevant_docs=["a.md"]),
        row(id="q2", question="?", relevant_docs=["guides/c.md", "c.md"]),
        row(id="q3", question="?", relevant_docs=["b.md"]),
        row(id="q4", question="?"),
    )
    config = DatasetConfig(name="custom", corpus=folder, cases=cases)
    with pytest.warns(RagexpWarning) as caught:
        dataset = load_dataset(config)
    assert len(dataset.cases) == 4
    [warning] = caught
    assert str(warning.message) == (
        f"{cases}: 2 relevant_docs name no document of the corpus (q2: c.md, q3: b.md); the "
        "retrieval metrics count them as misses. Write each as its path relative to "
        "dataset.corpus, e.g. guides/fees.md"
    )
