from pathlib import Path

import pytest

from driftrag.errors import DriftRAGError
from driftrag.ingestion.loading import InputError, document_from_text, document_key, load_document


def test_crlf_cr_and_bom_are_normalised(tmp_path):
    path = tmp_path / "doc.md"
    path.write_bytes(b"\xef\xbb\xbfline one\r\nline two\rline three\n")
    doc = load_document(path, "kb1")
    assert doc.text == "line one\nline two\nline three\n"
    assert doc.title == "doc.md"
    assert doc.kb == "kb1"
    assert doc.id == f"document-{document_key(doc.path, doc.content_hash)}"


def test_same_text_same_id_whatever_the_line_endings(tmp_path):
    path = tmp_path / "a.txt"
    path.write_bytes(b"Alice\r\nRabbit\r\n")
    crlf = load_document(path, "kb")
    path.write_bytes(b"Alice\nRabbit\n")
    lf = load_document(path, "kb")
    assert crlf.id == lf.id
    assert crlf.content_hash == lf.content_hash


def test_same_text_under_two_names_is_two_documents(tmp_path):
    first, second = tmp_path / "a.txt", tmp_path / "b.txt"
    first.write_text("Alice\nRabbit\n")
    second.write_text("Alice\nRabbit\n")
    assert load_document(first, "kb").id != load_document(second, "kb").id


def test_missing_path(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        load_document(tmp_path / "nope.txt", "kb")


def test_directory(tmp_path):
    with pytest.raises(InputError, match="directory"):
        load_document(tmp_path, "kb")


@pytest.mark.parametrize("content", [b"", b"   \n\t\r\n"])
def test_empty_or_whitespace_file(tmp_path, content):
    path = tmp_path / "empty.txt"
    path.write_bytes(content)
    with pytest.raises(InputError, match="empty"):
        load_document(path, "kb")


def test_binary_file(tmp_path):
    path = tmp_path / "image.png"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    with pytest.raises(InputError, match="binary"):
        load_document(path, "kb")


def test_invalid_utf8_reports_byte_offset(tmp_path):
    path = tmp_path / "latin1.txt"
    path.write_bytes(b"hello\ncaf\xe9 au lait\n")
    with pytest.raises(InputError, match=r"byte offset 9 \(line 2\)"):
        load_document(path, "kb")


def test_invalid_utf8_offset_counts_the_bom(tmp_path):
    path = tmp_path / "bom.txt"
    path.write_bytes(b"\xef\xbb\xbfab\xff")
    with pytest.raises(InputError, match="byte offset 5"):
        load_document(path, "kb")


def test_too_big_names_size_and_limit(tmp_path):
    path = tmp_path / "big.txt"
    path.write_text("x" * 2000)
    with pytest.raises(InputError, match=r"2000 bytes.*limit of 1000 bytes.*max_bytes"):
        load_document(path, "kb", max_bytes=1000)


def test_input_error_is_a_driftrag_error():
    with pytest.raises(DriftRAGError):
        document_from_text(" \n", "kb", "blank")


def test_document_from_text_any_extension_text(tmp_path):
    path = tmp_path / "notes.csv"
    path.write_text("name,role\nAlice,girl\n", encoding="utf-8")
    assert load_document(path, "kb").text.startswith("name,role")
    assert document_from_text("Hi\r\n", "kb", "t").text == "Hi\n"


def test_folders_expand_to_their_text_files_sorted_and_files_stay(tmp_path: Path) -> None:
    from driftrag.ingestion.loading import collect_paths

    folder = tmp_path / "corpus"
    (folder / "sub").mkdir(parents=True)
    (folder / "b.md").write_text("b")
    (folder / "a.txt").write_text("a")
    (folder / "sub" / "c.md").write_text("c")
    (folder / "image.png").write_bytes(b"\x89PNG")
    (folder / ".hidden").mkdir()
    (folder / ".hidden" / "d.md").write_text("d")
    single = tmp_path / "notes.rst"
    single.write_text("x")
    assert collect_paths([folder, single, folder / "a.txt"]) == [
        folder / "a.txt",
        folder / "b.md",
        folder / "sub" / "c.md",
        single,
    ]
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InputError, match="holds no"):
        collect_paths([empty])
    with pytest.raises(InputError, match="no such file"):
        collect_paths([tmp_path / "missing"])
