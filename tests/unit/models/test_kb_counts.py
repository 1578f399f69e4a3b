from driftrag.models.graph import KbCounts


def test_more_than_half_unusable_chunks_is_a_warning() -> None:
    counts = KbCounts(chunks=20, offline_extracted_chunks=20)
    [warning] = counts.warnings()
    assert warning.startswith("20 of 20 chunks got no usable model extraction (20 extracted offline, 0 with no entity)")
    mixed = KbCounts(chunks=5, offline_extracted_chunks=1, empty_extracted_chunks=2)
    assert "3 of 5 chunks" in (mixed.extraction_warning() or "")


def test_half_or_fewer_unusable_chunks_is_no_warning() -> None:
    assert KbCounts(chunks=4, offline_extracted_chunks=1, empty_extracted_chunks=1).warnings() == []
    assert KbCounts().extraction_warning() is None
