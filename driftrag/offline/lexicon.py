"""Small word lists the offline entity detector uses as evidence, per language (English, French).

They are cues, not a dictionary of names: titles and honorifics mark people, speech verbs next to a
name mark speakers, place and organisation words inside a name mark its kind, and locative
prepositions before a name hint at a place. Languages without lists get only the language-neutral
rules (capitalisation and frequency).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from driftrag.ingestion.aliases import TITLES


def _set(text: str) -> frozenset[str]:
    return frozenset(text.split())


@dataclass(frozen=True)
class Lexicon:
    titles: frozenset[str] = field(default_factory=frozenset)
    speech_verbs: frozenset[str] = field(default_factory=frozenset)
    place_words: frozenset[str] = field(default_factory=frozenset)
    organisation_words: frozenset[str] = field(default_factory=frozenset)
    locatives: frozenset[str] = field(default_factory=frozenset)
    # Prepositions that suggest a place only with a determiner ("to the Lighthouse", not "to Alice"),
    # unless a speech or addressing verb precedes them ("said to the Queen", "looked at the Cat").
    directionals: frozenset[str] = field(default_factory=frozenset)
    addressing_verbs: frozenset[str] = field(default_factory=frozenset)
    determiners: frozenset[str] = field(default_factory=frozenset)
    # Lower-case words allowed inside a name between capitalised words ("Queen of Hearts").
    connectors: frozenset[str] = field(default_factory=frozenset)
    # Capitalised words that are never name words (interjections, most months and days).
    never_names: frozenset[str] = field(default_factory=frozenset)
    # Month and weekday names: never a name on their own, though they may head one ("March Hare").
    calendar_words: frozenset[str] = field(default_factory=frozenset)
    # Where the head noun of a name sits: last in English ("Amber Lighthouse"), first in French ("Phare Rouge").
    head_first: bool = False


ENGLISH = Lexicon(
    titles=TITLES["english"],
    speech_verbs=_set(
        "said says say asked asks cried cries replied replies answered answers shouted whispered exclaimed "
        "added continued thought remarked repeated muttered screamed sighed called observed inquired "
        "enquired interrupted explained insisted pleaded sobbed growled snapped declared announced began "
        "yelled murmured retorted"
    ),
    place_words=_set(
        "street road lane avenue square bridge market lighthouse wood woods forest house garden gardens hall "
        "castle palace river lake island isle harbor harbour town city village mountain mount hill park "
        "church abbey cathedral tower port bay sea ocean valley court inn tavern station quay pier reef "
        "cove cape point shore coast field fields farm mill monastery chapel school"
    ),
    organisation_words=_set(
        "company corporation inc ltd society university college council bank guild club party ministry "
        "committee association institute agency department foundation"
    ),
    locatives=_set("in into inside within across through throughout beyond"),
    directionals=_set("to from at towards toward near"),
    addressing_verbs=_set(
        "looked looking look stared staring glanced smiled smiling laughed nodded bowed pointed turned "
        "waved frowned spoke speaking talking talked listened belonged gave given handed sent wrote "
        "written"
    ),
    determiners=_set("the a an this that these those"),
    connectors=_set("of"),
    never_names=_set(
        "oh ah alas yes no well hush hm hmm eh o ay aye nay ha hey please dear thanks goodbye "
        "hello january february april june july august september october november december monday "
        "tuesday wednesday thursday friday saturday sunday"
    ),
    calendar_words=_set(
        "january february march april may june july august september october november december monday "
        "tuesday wednesday thursday friday saturday sunday"
    ),
)

FRENCH = Lexicon(
    titles=TITLES["french"],
    speech_verbs=_set(
        "dit dis disait demanda demande répondit répond cria crie s'écria ajouta murmura reprit pensa "
        "déclara chuchota hurla expliqua insista soupira continua lança annonça s'exclama"
    ),
    place_words=_set(
        "rue route avenue boulevard place pont marché phare bois forêt maison jardin jardins château palais "
        "rivière fleuve lac île port baie mer océan vallée village ville montagne mont colline parc église "
        "abbaye cathédrale tour quai gare auberge côte cap plage champ ferme moulin monastère chapelle école"
    ),
    organisation_words=_set(
        "société compagnie université collège conseil banque guilde club parti ministère comité association "
        "institut agence fondation"
    ),
    locatives=_set("dans en sur sous"),
    directionals=_set("à au aux de du des vers près chez"),
    addressing_verbs=_set("regarda regardait sourit parla parlait écrivit donna tendit envoya"),
    determiners=_set("le la les l' un une des du au aux ce cette ces"),
    connectors=_set("de du des d' la le"),
    never_names=_set(
        "ah oh hélas oui non eh bon bien merci adieu bonjour janvier février mars avril mai juin juillet "
        "août septembre octobre novembre décembre lundi mardi mercredi jeudi vendredi samedi dimanche"
    ),
    calendar_words=_set(
        "janvier février mars avril mai juin juillet août septembre octobre novembre décembre lundi mardi "
        "mercredi jeudi vendredi samedi dimanche"
    ),
    head_first=True,
)

LEXICONS = {"english": ENGLISH, "french": FRENCH}
EMPTY = Lexicon()


def lexicon_for(language: str) -> Lexicon:
    return LEXICONS.get(language, EMPTY)


def is_title(word: str) -> bool:
    """A title or honorific in any language with a lexicon ("Queen", "Mr.", "Madame")."""
    folded = word.casefold().rstrip(".")
    return any(folded in lexicon.titles for lexicon in LEXICONS.values())
