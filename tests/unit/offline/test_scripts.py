"""Text written without spaces between words is refused by the offline mode, with one clear error."""

from __future__ import annotations

import pytest

from driftrag.ingestion.loading import InputError, UnextractableTextError, document_from_text
from driftrag.offline.scripts import check_document, unspaced_scripts

CHINESE = "爱丽丝靠着姐姐坐在河岸边很久了，由于没有什么事情可做，她开始感到厌倦。"
JAPANESE = "アリスは土手の上で姉さんのよこにすわって、なんにもすることがないのでとても退屈しはじめていました。"
THAI = "อลิซเริ่มรู้สึกเบื่อที่ต้องนั่งอยู่ข้างพี่สาวบนฝั่งแม่น้ำโดยไม่มีอะไรทำ"


def test_the_share_of_unspaced_letters_and_their_scripts() -> None:
    assert unspaced_scripts(CHINESE) == (1.0, ["Han"])
    share, scripts = unspaced_scripts(JAPANESE)
    assert share == 1.0 and set(scripts) == {"Hiragana", "Katakana", "Han"}
    assert unspaced_scripts(THAI)[1] == ["Thai"]
    assert unspaced_scripts("Alice sat by her sister on the bank.") == (0.0, [])
    assert unspaced_scripts("앨리스는 언니 옆에 앉아 있었다.") == (0.0, [])  # Korean is written with spaces
    assert unspaced_scripts("12 345 !?") == (0.0, [])


@pytest.mark.parametrize("text", [CHINESE, JAPANESE, THAI, f"Chapter 1\n\n{CHINESE * 3}"])
def test_a_document_mostly_in_an_unspaced_script_is_refused(text: str) -> None:
    document = document_from_text(text, "kb", "story.txt", path="/data/story.txt")
    with pytest.raises(UnextractableTextError) as raised:
        check_document(document)
    message = str(raised.value)
    assert message.startswith("/data/story.txt: ")
    assert "the offline mode does not extract entities" in message and "configured model does" in message
    assert isinstance(raised.value, InputError)  # reported like every other file that cannot be ingested


def test_a_european_text_quoting_a_few_chinese_words_goes_through() -> None:
    text = f"The sign at the Copper Market read {CHINESE[:6]}, which Pip could not read. " * 3
    check_document(document_from_text(text, "kb", "market.md"))
