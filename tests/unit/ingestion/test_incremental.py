"""Which keys a delete re-merges: whole alias groups, titled forms included."""

from driftrag.ingestion.incremental import _stored_plan, widen_to_alias_groups
from driftrag.ingestion.merge import entity_id
from driftrag.models.graph import StoredEntityKey


def _stored(key: str, name: str, aliases: list[str]) -> StoredEntityKey:
    return StoredEntityKey(id=entity_id(key), normalised_name=key, name=name, aliases=aliases)


def test_a_titled_form_widens_to_its_untitled_name_and_the_group_of_its_head():
    stored = [
        _stored("mattias crane", "Mattias Crane", ["Crane", "Old Mattias Crane"]),
        _stored("tom ferrers", "Tom Ferrers", []),
        _stored("lady maud ferrers", "Lady Maud Ferrers", []),
    ]
    holder = _stored_plan(stored)
    expected = {"old mattias crane", "mattias crane", "crane"}
    assert widen_to_alias_groups({"old mattias crane"}, stored, holder) == expected
    assert widen_to_alias_groups({"mattias crane"}, stored, holder) == expected
    assert widen_to_alias_groups({"crane"}, stored, holder) == expected
    assert widen_to_alias_groups({"tom ferrers"}, stored, holder) == {"tom ferrers"}
