"""Which extracted names are aliases of another, and which are only forms of address (both modes' merge).

Names are compared as merge keys (`merge.normalise_name`: casefolded, quotes and a leading "the"
dropped). The rules, applied to the whole kb at once so the result depends only on the set of names:

- **Forms of address are not entities.** A name made only of an address word ("Majesty", "Highness",
  "Sir", "Madam", "Majesté", "Altesse", "Величество", …), optionally after a possessive ("Your
  Majesty", "Votre Altesse", "Ваше величество"), is dropped with its relationships. The lists are
  language resources, keyed by language and applied together (the merge does not know the language).
  A title that names someone ("the King", "Queen Victoria") is not a form of address.
- **A one-word name is an alias of the multi-word name it heads**, when exactly one multi-word name
  of the kb has it as head and their types are compatible (equal, or one of them `UNKNOWN`). The head
  of a multi-word name is the word before its first connector ("queen of hearts", "reine de cœur"),
  else its last word ("cheshire cat"). So "Cat" joins "Cheshire Cat" and "Queen" joins "Queen of
  Hearts", while with both "Mock Turtle" and "Green Turtle" in the kb, "Turtle" stays apart: the
  evidence does not say which one it is. A title and a name ("Miss Alice", "Father William") has
  no head in this sense: the one-word name is a given name that others may share, so it is left
  alone. Languages whose modifiers follow the noun without a
  connector ("Lapin Blanc") get no alias from the last-word rule; they only miss a merge.
- **A titled form is an alias of the name it titles**: a name that is another name of the kb plus
  leading titles or epithets ("old mattias crane", "lady maud ferrers", "captain wren halloway"), with
  compatible types, joins it. The remaining name must have at least two words: "Mr Crane" and "Mrs
  Crane", or "Father William" and "William", may be different people, so a title before a single word
  is never dropped. Only leading words are compared, never a shared surname or head word: "lady maud
  ferrers" and "tom ferrers" stay apart.

The merged entity keeps the key and id of the name absorbing the others: the multi-word name for a
one-word alias, the untitled name for its titled forms (the part every form shares, which stays the
same when a title changes or a narrator drops it). The display name of a one-word fold stays the
multi-word name's; when titled forms join, it is the form found in the most chunks (ties: the longer
form, which the graph search's substring match finds from either form). The other names are
recorded on it (`MergedEntity.aliases`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from driftrag.models.graph import UNKNOWN_ENTITY_TYPE

# Titles and honorifics that precede a name ("Queen Victoria", "Miss Alice"); the offline lexicon uses
# them as evidence of a person.
TITLES: Mapping[str, frozenset[str]] = {
    "english": frozenset(
        "mr mrs ms miss dr doctor sir lady lord madam king queen prince princess duke duchess earl count "
        "countess baron baroness emperor empress captain colonel general major lieutenant sergeant admiral "
        "professor father mother brother sister uncle aunt saint st reverend judge mayor governor president "
        "senator bishop master mistress".split()
    ),
    "french": frozenset(
        "m mme mlle monsieur madame mademoiselle docteur maître roi reine prince princesse duc duchesse "
        "comte comtesse baron baronne empereur impératrice capitaine colonel général commandant lieutenant "
        "sergent amiral professeur père mère frère sœur oncle tante saint sainte abbé juge maire président "
        "sénateur évêque".split()
    ),
}
# Words used to address someone, not to name them; casefolded, as `normalise_name` leaves them
# (quotes removed: "ma'am" becomes "maam"). Russian nouns are listed in their case forms.
ADDRESS_WORDS: Mapping[str, frozenset[str]] = {
    "english": frozenset(
        "majesty majesties highness highnesses excellency excellencies lordship ladyship worship sir madam "
        "maam sire milord milady mylord".split()
    ),
    "french": frozenset(
        "majesté majestés altesse altesses excellence excellences seigneurie éminence sainteté sire monseigneur "
        "madame mesdames monsieur messieurs mademoiselle".split()
    ),
    "russian": frozenset(
        "величество величества величеству величеством величестве высочество высочества высочеству высочеством "
        "высочестве превосходительство превосходительства превосходительству превосходительством "
        "сиятельство сиятельства сиятельству сиятельством светлость светлости светлостью благородие "
        "благородия благородию сударь сударя сударю сударем сударыня сударыни сударыне сударыню сударыней "
        "барин барина барину барыня барыни барыне барыню".split()
    ),
}
# Possessives that may precede an address word ("Your Majesty").
ADDRESS_POSSESSIVES: Mapping[str, frozenset[str]] = {
    "english": frozenset("your his her their my our".split()),
    "french": frozenset("votre vos sa son ses leur leurs mon ma mes notre nos".split()),
    "russian": frozenset("ваше вашего вашему вашим вашем ваша вашей его её ее их".split()),
}
# Epithets that precede a name as a title does ("Old Mattias Crane"); only the alias rule strips them.
EPITHETS: Mapping[str, frozenset[str]] = {
    "english": frozenset("old young little".split()),
    "french": frozenset("vieux vieil vieille jeune petit petite".split()),
}
# Lower-case words that join a head noun to its complement ("Queen of Hearts", "Reine de Cœur").
HEAD_CONNECTORS: Mapping[str, frozenset[str]] = {
    "english": frozenset({"of"}),
    "french": frozenset("de du des d".split()),
}


def _union(lists: Mapping[str, frozenset[str]]) -> frozenset[str]:
    return frozenset(word for words in lists.values() for word in words)


_ADDRESS = _union(ADDRESS_WORDS)
_POSSESSIVES = _union(ADDRESS_POSSESSIVES)
_CONNECTORS = _union(HEAD_CONNECTORS)
_TITLES = _union(TITLES)
_LEADING = _TITLES | _union(EPITHETS)


def is_form_of_address(key: str) -> bool:
    """A name made only of an address word, maybe after a possessive ("majesty", "your majesty")."""
    words = key.split()
    if len(words) == 2 and words[0] in _POSSESSIVES:
        words = words[1:]
    return len(words) == 1 and words[0] in _ADDRESS


def head_word(key: str) -> str | None:
    """The head of a multi-word name: the word before its first connector, else its last; None for one word."""
    words = key.split()
    if len(words) < 2:
        return None
    for i, word in enumerate(words[1:], start=1):
        if word in _CONNECTORS:
            return words[i - 1]
    return words[-1]


def is_titled_name(key: str) -> bool:
    """A title and a name ("miss alice", "father william", "dr. gregory"): its last word is a given name,
    which other people may share, not a noun the title modifies."""
    words = key.split()
    return len(words) >= 2 and all(word.rstrip(".") in _TITLES for word in words[:-1])


def untitled(key: str) -> str | None:
    """The name without its leading titles and epithets ("old mattias crane" -> "mattias crane"); None
    when there are none, or fewer than two words remain, or what remains starts with a connector."""
    words = key.split()
    start = 0
    while start < len(words) and words[start].rstrip(".") in _LEADING:
        start += 1
    rest = words[start:]
    if start == 0 or len(rest) < 2 or rest[0] in _CONNECTORS:
        return None
    return " ".join(rest)


def compatible(type_a: str, type_b: str) -> bool:
    return type_a == type_b or UNKNOWN_ENTITY_TYPE in (type_a, type_b)


@dataclass(frozen=True)
class AliasPlan:
    """`canonical`: key -> the key it joins (a one-word alias -> its multi-word name, a titled form -> the
    untitled name; never a key that joins another); `address`: keys that are forms of address."""

    canonical: dict[str, str]
    address: frozenset[str]

    def resolve(self, key: str) -> str | None:
        """The key an extracted name is merged under, or None when it is not an entity."""
        if key in self.address:
            return None
        return self.canonical.get(key, key)


def plan_aliases(types: Mapping[str, str]) -> AliasPlan:
    """The plan for a kb's names (`{key: type}`), by the rules of the module docstring."""
    address = frozenset(key for key in types if is_form_of_address(key))
    titled = {}
    for key, type_ in sorted(types.items()):
        base = untitled(key)
        if key not in address and base in types and base not in address and compatible(type_, types[base]):
            titled[key] = base
    heads: dict[str, list[str]] = {}
    for key in sorted(types):
        head = head_word(key)
        if head is not None and key not in address and key not in titled and not is_titled_name(key):
            heads.setdefault(head, []).append(key)
    canonical = dict(titled)
    for key, type_ in sorted(types.items()):
        if key in address or " " in key:
            continue
        candidates = heads.get(key, [])
        if len(candidates) == 1 and compatible(type_, types[candidates[0]]):
            canonical[key] = candidates[0]
    return AliasPlan(canonical=canonical, address=address)
