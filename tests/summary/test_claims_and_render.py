import pandas as pd
import pytest

from reappraisal.summary.claims import card_interval, evaluate_claims, rule_text
from reappraisal.summary.render import escape_latex, to_latex, to_markdown
from reappraisal.summary.summary_table import Table, not_computable


def _table():
    frame = pd.DataFrame({"arm": ["a", "a", "b"], "opponent": ["x", "y", "x"], "low": [0.7, 0.4, None],
                          "note": [None, None, "too few scenarios"]})
    return Table("t", "T", "caption", "estimand", frame, [("f1",), ("f2",), ("f3",)])


def _claim(rule, **extra):
    return {"id": "c", "text": "text", "rule": rule, **extra}


@pytest.mark.parametrize(
    "where, verdict, lineage",
    [({"arm": "a", "opponent": "x"}, "holds", ["f1"]), ({"arm": "a", "opponent": "y"}, "fails", ["f2"]),
     ({"arm": "a"}, "not_computable", []), ({"arm": "c"}, "not_computable", []),
     ({"arm": "b"}, "not_computable", ["f3"])],
)
def test_a_rule_selects_exactly_one_row_and_inherits_its_sources(where, verdict, lineage):
    rule = {"table": "t", "where": where, "column": "low", "op": ">", "than": {"setting": "bar"}}
    (record,) = evaluate_claims([_claim(rule)], {"t": _table()}, {"bar": 0.6})
    assert record["verdict"] == verdict and record["sources"] == lineage
    if verdict == "not_computable":
        assert record["note"]
    assert "bar (0.6)" in rule_text(rule, {"bar": 0.6})


def test_a_retracted_claim_keeps_what_its_numbers_say_today():
    rule = {"table": "t", "where": {"arm": "a", "opponent": "x"}, "column": "low", "op": ">", "than": 0.5}
    retraction = {"date": "2026-12-01", "reason": "ignores clustering", "replacement": None}
    (record,) = evaluate_claims([_claim(rule, retraction=retraction)], {"t": _table()}, {})
    assert (record["verdict"], record["rule_verdict"], record["value"]) == ("retracted", "holds", 0.7)


def test_a_not_computable_table_makes_the_claim_not_computable():
    table = not_computable("t", "T", "cap", "est", ["arm", "low"], "metrics file absent")
    rule = {"table": "t", "where": {"arm": "a"}, "column": "low", "op": ">", "than": 0.5}
    (record,) = evaluate_claims([_claim(rule)], {"t": table}, {})
    assert record["verdict"] == "not_computable" and "metrics file absent" in record["note"]


@pytest.mark.parametrize("rate, n, quoted, holds", [(0.872, 720, 0.846, True), (0.806, 720, 0.7755, True),
                                                    (0.581, 480, 0.5364, True)])
def test_card_wilson_figures_are_reproduced(rate, n, quoted, holds):
    out = card_interval({"rate": rate, "n": n, "quoted_low": quoted, "decimals": len(str(quoted)) - 2}, confidence=0.95)
    assert out.holds is holds and out.flag is None


def test_a_quoted_bound_that_is_neither_wilson_nor_wald_is_flagged_as_such():
    out = card_interval({"rate": 0.771, "n": 240, "wins": 185, "quoted_low": 0.700, "decimals": 3}, confidence=0.95)
    assert not out.holds and "neither" in out.flag


def test_latex_is_booktabs_and_escaped_and_markdown_has_the_caption():
    table = Table("t_1", "Rates & more", "50% of x_y", "est", pd.DataFrame({"arm_name": ["a_b"], "p": [0.031]}))
    tex = to_latex(table)
    assert "\\toprule" in tex and "\\bottomrule" in tex and "a\\_b" in tex and "arm\\_name" in tex
    assert "50\\% of x\\_y" in tex and "Rates \\& more" in tex and "\\label{tab:t_1}" in tex
    assert escape_latex("{#}") == "\\{\\#\\}"
    md = to_markdown(table)
    assert md.startswith("**Rates & more.** 50% of x_y") and "0.031" in md
