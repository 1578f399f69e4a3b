def test_an_extraction_cap_follows_its_chunk_up_to_the_setting() -> None:
    from driftrag.ingestion.llm_tasks import extraction_cap
    from driftrag.models.graph import Chunk

    def chunk(n_tokens: int) -> Chunk:
        return Chunk(id="c", document_id="d", index=0, text="x", n_tokens=n_tokens, start_char=0, end_char=1)

    # A 300-token chunk: 256 + 2 x 300 tokens, not the 4,096 of the longest chunk a model may get.
    assert extraction_cap(chunk(300), 4096) == 856
    assert extraction_cap(chunk(1200), 2048) == 2048
    assert extraction_cap(chunk(50), None) == 356
