"""--op-mapping parsing follows Flink's validation rules."""

from __future__ import annotations

import pytest

from cdc.core.errors import UsageError
from cdc.core.kinds import DELETE, INSERT, UPDATE_AFTER, UPDATE_BEFORE
from cdc.core.mapping import (
    is_upsert_mapping,
    parse_from_mapping,
    parse_kinds,
    parse_to_mapping,
    reverse_mapping,
    split_codes,
)
from cdc.core.presets import PRESETS


def test_comma_keys_are_split_and_trimmed() -> None:
    assert parse_from_mapping(["c, r=INSERT", " ub =UPDATE_BEFORE", "d= DELETE "]) == {
        "c": INSERT,
        "r": INSERT,
        "ub": UPDATE_BEFORE,
        "d": DELETE,
    }


def test_trailing_empty_parts_are_dropped_like_java_split() -> None:
    assert split_codes("c,") == ["c"]
    assert split_codes(",c") == ["", "c"]


def test_short_kind_codes_are_accepted_as_values() -> None:
    assert parse_from_mapping(["I=+I", "D=-D"]) == {"I": INSERT, "D": DELETE}


def test_json_object_form() -> None:
    assert parse_from_mapping(['{"c, r": "INSERT", "u": "UPDATE_AFTER"}']) == {
        "c": INSERT,
        "r": INSERT,
        "u": UPDATE_AFTER,
    }


def test_default_mappings_are_the_long_names() -> None:
    assert parse_from_mapping([]) == {
        "INSERT": INSERT,
        "UPDATE_BEFORE": UPDATE_BEFORE,
        "UPDATE_AFTER": UPDATE_AFTER,
        "DELETE": DELETE,
    }
    assert parse_to_mapping([])[UPDATE_BEFORE] == "UPDATE_BEFORE"


def test_a_kind_mapped_twice_tells_the_user_to_use_a_comma_list() -> None:
    with pytest.raises(UsageError) as err:
        parse_from_mapping(["c=INSERT", "r=INSERT"])
    assert "duplicate change operation 'INSERT'" in err.value.message
    assert err.value.hint is not None and "'c, r=INSERT'" in err.value.hint
    assert err.value.exit_code == 2


def test_unknown_kind_names_are_usage_errors_and_case_sensitive() -> None:
    with pytest.raises(UsageError, match="unknown change operation 'insert'"):
        parse_from_mapping(["c=insert"])
    with pytest.raises(UsageError, match="unknown change operation 'INVALID_KIND'"):
        parse_to_mapping(["INVALID_KIND=X"])


def test_to_mapping_duplicates_count_across_comma_keys() -> None:
    with pytest.raises(UsageError, match="duplicate change operation 'DELETE'"):
        parse_to_mapping(["INSERT, DELETE=A", "DELETE=B"])


def test_deletion_flag_pattern() -> None:
    assert parse_to_mapping(["INSERT, UPDATE_AFTER=false", "DELETE=true"]) == {
        INSERT: "false",
        UPDATE_AFTER: "false",
        DELETE: "true",
    }


def test_malformed_entries() -> None:
    with pytest.raises(UsageError, match="expected KEY=VALUE"):
        parse_from_mapping(["INSERT"])
    with pytest.raises(UsageError, match="invalid JSON object"):
        parse_from_mapping(["{c: INSERT"])


def test_upsert_mapping_detection() -> None:
    assert is_upsert_mapping([INSERT, UPDATE_AFTER, DELETE])
    assert not is_upsert_mapping([INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE])
    assert not is_upsert_mapping([INSERT, DELETE])


def test_reversed_preset_writes_the_first_code_of_each_kind() -> None:
    assert reverse_mapping(PRESETS["debezium"].mapping) == {INSERT: "c", UPDATE_AFTER: "u", DELETE: "d"}


def test_drop_kinds_accepts_both_spellings() -> None:
    assert parse_kinds(["UPDATE_BEFORE", "-D"], "--drop") == {UPDATE_BEFORE, DELETE}
