"""Each table's column list is defined once (``reappraisal.table_contracts``) and the writers emit it."""

from __future__ import annotations

import ast
from pathlib import Path

import pandas as pd

from reappraisal import table_contracts
from reappraisal.evaluation.draw import draw_contests
from reappraisal.evaluation.human_pairs import human_pairs

SRC = Path(table_contracts.__file__).parent
CONTRACTS = {name: list(value) for name, value in vars(table_contracts).items() if name.isupper()}


def _literal_lists(tree: ast.Module):
    """Module-level ``NAME = [...]`` / ``(...)`` assignments of string literals (names of columns, typically)."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, (ast.List, ast.Tuple)):
            values = node.value.elts
            if values and all(isinstance(v, ast.Constant) and isinstance(v.value, str) for v in values):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        yield target.id, [v.value for v in values], node.lineno


def test_no_module_types_a_contract_again_or_reuses_its_name():
    repeats = []
    for path in sorted(SRC.rglob("*.py")):
        if path.name == "table_contracts.py":
            continue
        for name, values, line in _literal_lists(ast.parse(path.read_text())):
            where = f"{path.relative_to(SRC)}:{line} {name}"
            same = [c for c, cols in CONTRACTS.items() if cols == values or (len(values) > 2 and set(values) == set(cols))]
            if same:
                repeats.append(f"{where} repeats table_contracts.{same[0]}")
            elif name in CONTRACTS:
                repeats.append(f"{where} reuses the name of table_contracts.{name} for other columns")
    assert not repeats, "\n".join(repeats)


def test_contracts_are_distinct_and_keys_come_first():
    lists = [tuple(v) for v in CONTRACTS.values()]
    assert len(set(lists)) == len(lists)
    for name in ("VERDICT_COLUMNS", "SCORE_COLUMNS"):
        assert CONTRACTS[name][: len(table_contracts.CONTEST_KEYS)] == table_contracts.CONTEST_KEYS
    # every contest key and every scoring column is a column of the tables it is read from
    assert set(table_contracts.VERDICT_COLUMNS) <= set(table_contracts.JUDGMENT_COLUMNS)
    assert set(table_contracts.SCORE_COLUMNS) <= set(table_contracts.CONTEST_COLUMNS)
    assert set(table_contracts.RATED_PAIR_COLUMNS) <= set(table_contracts.GRM_PAIR_COLUMNS)


def test_writers_emit_their_contract_in_order():
    answers = pd.DataFrame({"vignette_id": ["v1", "v1"], "pool": ["train", "train"], "sample": [0, 1],
                            "answer_id": ["a0", "a1"], "answer": ["Maybe they were busy.", "Perhaps it was late."]})
    opponent = {"v1": pd.DataFrame({"answer_id": ["g0", "g1"], "text": ["It may not be about you.", "They forgot."]})}
    contests = draw_contests(answers, opponent, arm="committee", opponent="gpt-4-0314", run=1, seed=0, pools=("train",))
    assert list(contests.columns) == table_contracts.DRAWN_CONTEST_COLUMNS and len(contests) == 2
    targets = pd.DataFrame({"reappraisal_id": [f"r{i}" for i in range(6)], "vignette_id": ["v1"] * 6,
                            "author_type": ["human"] * 6, "split": ["val"] * 6, "text": [f"text {i}" for i in range(6)],
                            "z_success": [0.1 * i for i in range(6)]})
    pairs = human_pairs(targets, dimension="success", judge_train_fraction=0.5, seed=0)
    assert list(pairs.columns) == table_contracts.HUMAN_PAIR_COLUMNS and len(pairs) > 0
