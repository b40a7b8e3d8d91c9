"""The join equalities of a scope are an object of their own (issue 39.2): everything they read is
given to them (where a column points, the sources), so they work outside a Scope, on a made-up
scope of two tables."""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from piitracer.ingest.sql.join_equalities import JoinEqualities, source_column
from piitracer.ingest.sql.relations import TableRelation

SOURCES = {"c": TableRelation("bank.cards", ["account_id", "pan"]),
           "a": TableRelation("bank.accounts", ["account_id", "iban"]),
           "t": TableRelation("bank.transfers", ["account_ref", "amount"])}
PATHS = {"bank.cards": "c", "cards": "c", "bank.accounts": "a", "accounts": "a"}


def locate(column: exp.Column) -> tuple[str, str] | None:
    return source_column(column, SOURCES, PATHS, merged=(), lateral=())


def test_a_chain_of_equalities_is_found_with_its_text_nearest_first() -> None:
    equalities = JoinEqualities()
    equalities.equate(sqlglot.parse_one("c.account_id = a.account_id AND a.account_id = t.account_ref AND c.pan > 1"),
                      locate)
    assert equalities.equivalents(("c", "account_id")) == [
        (("a", "account_id"), "c.account_id = a.account_id"),
        (("t", "account_ref"), "c.account_id = a.account_id AND a.account_id = t.account_ref"),
    ]
    assert equalities.equivalents(("c", "pan")) == []  # a comparison equates nothing


def test_a_column_gets_the_other_sides_identity_marked_with_the_equality() -> None:
    equalities = JoinEqualities()
    equalities.equate_using("account_id", "c", "a", PATHS)
    column = exp.column("account_id", table="c")
    own = SOURCES["c"].column("account_id")
    flows = equalities.flows(column, [column], [own], True, locate, SOURCES)
    assert {(str(f.source), f.subtype.value, f.join_equality) for f in flows} == {
        ("bank.accounts.account_id", "IDENTITY", "c.account_id = a.account_id")}


def test_a_merged_or_lateral_or_ambiguous_name_is_no_place() -> None:
    assert source_column(exp.column("account_id"), SOURCES, PATHS, merged=(), lateral=()) is None  # two sources
    assert source_column(exp.column("iban"), SOURCES, PATHS, merged=(), lateral=()) == ("a", "iban")
    assert source_column(exp.column("iban"), SOURCES, PATHS, merged=("iban",), lateral=()) is None
    assert source_column(exp.column("x"), SOURCES, PATHS, merged=(), lateral=("x",)) is None
    assert source_column(exp.column("pan", table="cards", db="bank"), SOURCES, PATHS, (), ()) == ("c", "pan")
