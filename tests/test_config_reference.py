"""Every setting of the config schema is described, and docs/configuration-reference.md is the page the schema implies."""

from __future__ import annotations

import textwrap

from reappraisal.config import REPO_ROOT, SCHEMA_PATH
from reappraisal.config_reference import COMMAND, PAGE, leaves, load_schema, missing_descriptions, render


def test_every_schema_leaf_has_a_description():
    missing = missing_descriptions(load_schema())
    assert not missing, (f"{len(missing)} setting(s) of {SCHEMA_PATH.relative_to(REPO_ROOT)} have no description "
                         "(what the value means; its unit or allowed values where useful):\n" + "\n".join(missing))


def test_the_reference_page_is_generated_from_the_schema():
    committed = (REPO_ROOT / PAGE).read_text(encoding="utf-8") if (REPO_ROOT / PAGE).is_file() else ""
    assert committed == render(load_schema()), f"{PAGE} is out of date with the schema: run `{COMMAND}`"


def test_the_leaf_walk_finds_an_undescribed_setting(tmp_path):
    """Leaves under sections, list entries, named mappings, $defs and oneOf branches are all checked."""
    schema = tmp_path / "schema.yaml"
    schema.write_text(textwrap.dedent("""\
        type: object
        properties:
          seed: {type: integer}
          section:
            type: object
            properties:
              described: {type: number, default: 1, description: "a described leaf"}
              nested:
                type: object
                properties:
                  bare: {type: string}
              entries:
                type: array
                description: "a list of objects"
                items:
                  type: object
                  properties:
                    entry_key: {type: string}
              named:
                type: object
                description: "name -> object"
                additionalProperties:
                  type: object
                  properties:
                    named_key: {type: string}
              source: {$ref: "#/$defs/field"}
        $defs:
          field:
            oneOf:
              - {type: string}
              - type: object
                properties:
                  branch_key: {type: string}
        """))
    loaded = load_schema(schema)
    assert missing_descriptions(loaded) == ["seed", "section.nested.bare", "section.entries[].entry_key",
                                            "section.named.<name>.named_key", "section.source", "$defs.field.branch_key"]
    assert "section.nested" not in {leaf.key for leaf in leaves(loaded)}  # an object of settings is no leaf
    page = render(loaded)
    assert "| `section.described` | number | `1` | a described leaf |" in page
    assert "[field](#field)" in page


def test_the_page_has_a_row_per_leaf():
    schema = load_schema()
    page = render(schema)
    absent = [leaf.key for leaf in leaves(schema) if f"| `{leaf.key}` |" not in page]
    assert not absent, absent
