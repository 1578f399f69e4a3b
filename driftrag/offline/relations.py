"""Relationship types without a model: a verb of a small closed set between two names of a sentence.

Two mentions next to each other in a sentence (no other name between them, at most `MAX_BETWEEN`
words apart) are linked by the first verb form between them that the language's table knows, in the
direction of the text: "Alice asked the Caterpillar" gives Alice ASKS Caterpillar. A verb that needs a
preposition counts only with it ("spoke to", "parla à", "lived in"); a speech verb just before the
first name counts when its preposition is between them ("said the Gryphon to the Mock Turtle"). A
negation between them ("did not follow", "ne suivit pas") gives no type. LOCATED_IN needs no verb
but a place: only a locative preposition (and determiners) between a name and a name typed PLACE in
the chunk ("Pip in Harbor Town"). Anything else stays `RELATED_TO`, the co-occurrence type.

The types are a closed list (`RELATIONSHIP_TYPES`), stored as data like every relationship type.
Languages without a table (all but English and French) get no types.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

SPEAKS_TO, ASKS, TELLS, GIVES, MEETS, FOLLOWS = "SPEAKS_TO", "ASKS", "TELLS", "GIVES", "MEETS", "FOLLOWS"
HELPS, VISITS, LOOKS_AT, FIGHTS, OWNS, WORKS_FOR = "HELPS", "VISITS", "LOOKS_AT", "FIGHTS", "OWNS", "WORKS_FOR"
LIVES_IN, LOCATED_IN = "LIVES_IN", "LOCATED_IN"
RELATIONSHIP_TYPES = (
    SPEAKS_TO, ASKS, TELLS, GIVES, MEETS, FOLLOWS, HELPS, VISITS, LOOKS_AT, FIGHTS, OWNS, WORKS_FOR, LIVES_IN,
    LOCATED_IN,
)  # fmt: skip
MAX_BETWEEN = 6


def _forms(table: Mapping[str, str]) -> dict[str, tuple[tuple[str, str | None], ...]]:
    """`{"said to": SPEAKS_TO, "asked": ASKS}` -> `{"said": ((SPEAKS_TO, "to"),), "asked": ((ASKS, None),)}`:
    each key is verb forms separated by `|`, optionally followed by one preposition."""
    forms: dict[str, list[tuple[str, str | None]]] = {}
    for phrase, type_ in table.items():
        verbs, _, preposition = phrase.partition(" ")
        for verb in verbs.split("|"):
            forms.setdefault(verb, []).append((type_, preposition or None))
    # Forms with a preposition first: "spoke to" is more telling than a bare "spoke".
    return {verb: tuple(sorted(entries, key=lambda e: e[1] is None)) for verb, entries in forms.items()}


@dataclass(frozen=True)
class VerbTable:
    verbs: Mapping[str, tuple[tuple[str, str | None], ...]]
    negations: frozenset[str]
    locatives: frozenset[str]
    determiners: frozenset[str]


ENGLISH = VerbTable(
    verbs=_forms(
        {
            "said|says|say|spoke|speaks|speak|speaking|talked|talks|talk|talking|whispered|shouted|cried|called|"
            "replied|muttered|explained|complained|sang|sung to": SPEAKS_TO,
            "spoke|speaks|talked|talks|argued|argues|chatted with": SPEAKS_TO,
            "answered|answers|addressed|addresses|thanked|greeted|interrupted": SPEAKS_TO,
            "asked|asks|ask|asking|questioned|begged|begs|implored|inquired|enquired": ASKS,
            "told|tells|tell|telling|informed|warned|ordered|orders|commanded|promised|reminded": TELLS,
            "gave|gives|give|giving|handed|hands|offered|offers|lent": GIVES,
            "met|meets|meet|meeting|encountered|joined|joins": MEETS,
            "followed|follows|follow|following|chased|chases|pursued|pursues": FOLLOWS,
            "helped|helps|help|helping|saved|saves|rescued|rescues|protected|protects": HELPS,
            "visited|visits|visit|visiting": VISITS,
            "looked|looks|looking|stared|stares|staring|glanced|gazed|peeped|smiled|frowned|nodded|winked at": LOOKS_AT,
            "watched|watches|watching|eyed|observed": LOOKS_AT,
            "attacked|attacks|fought|fights|struck|strikes|hit|beat|beats|kicked|bit|pinched|slapped": FIGHTS,
            "fought|fights|fighting|quarrelled|quarreled with": FIGHTS,
            "owned|owns|own|possessed|possesses": OWNS,
            "worked|works|working for": WORKS_FOR,
            "served|serves|serving|employed|employs": WORKS_FOR,
            "lived|lives|live|living|dwelt|dwells|stayed|stays in": LIVES_IN,
            "lived|lives|live|living|dwelt|dwells|stayed|stays at": LIVES_IN,
        }
    ),
    negations=frozenset("not never n't nor cannot".split()),
    locatives=frozenset("in at inside within on near".split()),
    determiners=frozenset("the a an this that".split()),
)

FRENCH = VerbTable(
    verbs=_forms(
        {
            "dit|dis|disait|parla|parle|parlait|répondit|répond|cria|crie|murmura|chuchota|expliqua|"
            "chanta à": SPEAKS_TO,
            "parla|parle|parlait|discuta|discute|bavarda|causa|causait avec": SPEAKS_TO,
            "salua|remercia|interrompit|interpella": SPEAKS_TO,
            "demanda|demande|demandait|interrogea|pria|supplia|questionna": ASKS,
            "raconta|raconte|ordonna|ordonne|annonça|avertit|prévint|promit|rappela": TELLS,
            "donna|donne|donnait|tendit|tend|offrit|offre|prêta|remit": GIVES,
            "rencontra|rencontre|rejoignit|rejoint|retrouva|retrouve|croisa": MEETS,
            "suivit|suit|suivait|poursuivit|poursuit|pourchassa": FOLLOWS,
            "aida|aide|aidait|sauva|sauve|secourut|protégea|protège": HELPS,
            "visita|visite|visitait": VISITS,
            "regarda|regarde|regardait|observa|observe|contempla|fixa|dévisagea": LOOKS_AT,
            "attaqua|attaque|combattit|frappa|frappe|battit|mordit|gifla": FIGHTS,
            "possédait|possède|posséda": OWNS,
            "travaillait|travaille|travailla pour": WORKS_FOR,
            "servait|sert|servit": WORKS_FOR,
            "habitait|habite|habita|vivait|vit|vécut|demeurait|logeait à": LIVES_IN,
            "habitait|habite|habita|vivait|vit|vécut|demeurait|logeait dans": LIVES_IN,
            "habitait|habite|habita": LIVES_IN,
        }
    ),
    negations=frozenset("ne n' pas jamais ni".split()),
    locatives=frozenset("à au aux dans en sur près".split()),
    determiners=frozenset("le la les l' un une du des de".split()),
)

TABLES = {"english": ENGLISH, "french": FRENCH}


def relation_type(
    between: Sequence[str], table: VerbTable | None, *, before: Sequence[str] = (), target_is_place: bool = False
) -> tuple[str, str] | None:
    """(type, the verb that gave it) for the casefolded words between two names (`before`: the words
    just before the first name), or None."""
    if table is None or len(between) > MAX_BETWEEN or any(_negation(word, table) for word in between):
        return None
    for i, word in enumerate(between):
        for type_, preposition in table.verbs.get(word, ()):
            if preposition is None or preposition in between[i + 1 :]:
                return type_, word if preposition is None else f"{word} {preposition}"
    for word in before:
        for type_, preposition in table.verbs.get(word, ()):
            if type_ == SPEAKS_TO and preposition is not None and between[:1] == [preposition]:
                return type_, f"{word} {preposition}"
    if target_is_place and between and between[0] in table.locatives:
        if all(word in table.locatives or word in table.determiners for word in between):
            return LOCATED_IN, between[0]
    return None


def _negation(word: str, table: VerbTable) -> bool:
    return word in table.negations or word.endswith(("n't", "n’t"))
