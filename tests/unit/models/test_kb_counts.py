from driftrag.models.graph import KbCounts


def test_more_than_half_unusable_chunks_is_a_warning() -> None:
    counts = KbCounts(chunks=20, offline_extracted_chunks=20)
    assert counts.extraction_warning is not None
    assert counts.extraction_warning.startswith("20 of 20 chunks got no usable model extraction (20 extracted offline")
    mixed = KbCounts(chunks=5, offline_extracted_chunks=1, empty_extracted_chunks=2)
    assert mixed.extraction_warning is not None and "3 of 5 chunks" in mixed.extraction_warning


def test_half_or_fewer_unusable_chunks_is_no_warning() -> None:
    assert KbCounts(chunks=4, offline_extracted_chunks=1, empty_extracted_chunks=1).extraction_warning is None
    assert KbCounts().extraction_warning is None


def test_the_warning_is_derived_again_from_a_dump() -> None:
    counts = KbCounts(chunks=2, empty_extracted_chunks=2)
    again = KbCounts.model_validate(counts.model_dump())
    assert again == counts
    stale = {**counts.model_dump(), "empty_extracted_chunks": 0, "extraction_warning": "old"}
    assert KbCounts.model_validate(stale).extraction_warning is None
