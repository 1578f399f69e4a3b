"""Scripts written without spaces between words, which the offline extractor cannot read.

The offline mode finds names as runs of capitalised words between spaces; Han, Hiragana, Katakana,
Thai, Lao, Khmer, Myanmar and Tibetan text has neither capitals nor spaces between words, so it would
give an empty graph without a word. Such a document is refused at ingest instead
(`check_document`): one error naming the file, before anything is written, saying that a configured
model extracts from it. A document counts as such when most of its letters are in these scripts
(`UNSPACED_SHARE`), so a European text quoting a few Chinese words still goes through.
"""

from __future__ import annotations

from collections import Counter

from driftrag.ingestion.loading import UnextractableTextError
from driftrag.models.graph import SourceDocument

UNSPACED_SHARE = 0.5
# Letters read (from the start): enough to tell the script of a document, cheap on a large one.
SAMPLE_CHARS = 100_000
# (first, last code point, script) of the scripts written without spaces between words.
_RANGES = (
    (0x0E00, 0x0E7F, "Thai"),
    (0x0E80, 0x0EFF, "Lao"),
    (0x0F00, 0x0FFF, "Tibetan"),
    (0x1000, 0x109F, "Myanmar"),
    (0x1780, 0x17FF, "Khmer"),
    (0x3040, 0x309F, "Hiragana"),
    (0x30A0, 0x30FF, "Katakana"),
    (0x31F0, 0x31FF, "Katakana"),
    (0x3400, 0x4DBF, "Han"),
    (0x4E00, 0x9FFF, "Han"),
    (0xF900, 0xFAFF, "Han"),
    (0xFF66, 0xFF9F, "Katakana"),
    (0x20000, 0x3134F, "Han"),
)


def _script(char: str) -> str | None:
    code = ord(char)
    if code < 0x0E00:
        return None
    for first, last, script in _RANGES:
        if first <= code <= last:
            return script
    return None


def unspaced_scripts(text: str) -> tuple[float, list[str]]:
    """(share of the letters in unspaced scripts, those scripts by frequency) over the text's sample."""
    letters = 0
    scripts: Counter[str] = Counter()
    for char in text[:SAMPLE_CHARS]:
        if char.isalpha():
            letters += 1
            script = _script(char)
            if script is not None:
                scripts[script] += 1
    if not letters:
        return 0.0, []
    return sum(scripts.values()) / letters, [script for script, _ in scripts.most_common()]


def check_document(document: SourceDocument) -> None:
    """Raise `UnextractableTextError` for a document mostly written without spaces between words."""
    share, scripts = unspaced_scripts(document.text)
    if share < UNSPACED_SHARE:
        return
    raise UnextractableTextError(
        f"{document.path or document.title}: {share:.0%} of its letters are {'/'.join(scripts)}, written "
        "without spaces between words; the offline mode does not extract entities from such text. A "
        "configured model does: set OPENAI_API_KEY (and OPENAI_BASE_URL for a local OpenAI-compatible "
        "server) to ingest it"
    )
