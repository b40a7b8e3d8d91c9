"""`catalog classify` as a privacy team relies on it (issue 31): kinds of personal data read from
column names as people write them and from values validated by kept libraries; values outrank
names; counts shown, values never; sampling across files; the workspace's classify: block. Real
Parquet files and the real CLI; no mock."""

from __future__ import annotations

import datetime as dt
import json
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from click.testing import CliRunner

from classify_corpus import aadhaar, corpus, gstin, pan, score  # noqa: E402
from classify_corpus import classify as classify_corpus  # noqa: E402

from piitracer.cli.main import cli  # noqa: E402
from piitracer.discover.classify import ClassifyOptions, classify_columns  # noqa: E402
from piitracer.discover.classify_names import name_hint, tokens  # noqa: E402

import random  # noqa: E402


def kinds(columns: dict[str, list], options: ClassifyOptions | None = None, dataset: str = "t") -> dict[str, str | None]:
    verdicts = classify_columns(dataset, list(columns), {c.lower(): v for c, v in columns.items()}, (), {}, options,
                                lineage_checked=False)
    return {v.column: v.kind for v in verdicts}


@pytest.mark.parametrize("column, kind", [
    ("Credit Card Number", "card"), ("SenderPersonId", "user_id"), ("E-mail", "email"), ("customerEmail", "email"),
    ("DOB", "date_of_birth"), ("ssn", "ssn"), ("MSISDN", "phone"), ("ccn", "card"), ("payer_vpa", "upi"),
    ("Téléphone", "phone"), ("IBANNumber", "iban"), ("homephone", "phone"), ("first-name", "person_name"),
    ("Nachname", "person_name"), ("address_line1", "address"), ("passport no", "passport"), ("voter id", "voter_id"),
    ("driverLicenseNumber", "driving_licence"), ("national insurance number", "nino"), ("GSTIN", "gstin"),
    ("aadhar_number", "aadhaar"), ("fechaNacimiento", "date_of_birth"), ("Driver's License", "driving_licence"),
    ("PAN Card No", "pan"), ("Aadhaar Card Number", "aadhaar"), ("Ph No", "phone"), ("Cardholder Name", "person_name"),
])
def test_names_as_people_write_them(column: str, kind: str) -> None:
    hint = name_hint(column)
    assert hint is not None and hint.kind == kind, (column, tokens(column), hint)


@pytest.mark.parametrize("column", ["email_sent", "phone_model", "FLAG_PHONE", "is_email_verified", "email_domain",
                                    "phone_country_code", "product_name", "city", "merchant_id", "amount", "zip_code",
                                    "tracking_number"])
def test_names_about_a_kind_or_of_something_else_suggest_nothing(column: str) -> None:
    assert name_hint(column) is None, (column, tokens(column))


def test_values_outrank_names() -> None:
    """A name that suggests a kind, values that contradict it: no verdict (the name's suggestion
    kept apart); a name that suggests nothing, values that validate: the values' kind."""
    rng = random.Random(1)
    columns = {
        "email_address": [rng.random() < 0.5 for _ in range(30)],  # true/false under an e-mail name
        "phone": [rng.randint(0, 1) for _ in range(30)],  # 0/1 flags
        "mobile": [rng.randint(0, 9) for _ in range(30)],  # small counts
        "email": ["see notes", "n/a", "unknown", "call later", "none given"] * 6,  # free text failing the validator
        "ref": [aadhaar(rng) for _ in range(30)],  # Aadhaar numbers under a name that says nothing
    }
    verdicts = {v.column: v for v in classify_columns("t", list(columns), columns, (), {}, lineage_checked=False)}
    for column in ("email_address", "phone", "mobile", "email"):
        assert verdicts[column].kind is None and verdicts[column].name_suggests in ("email", "phone"), verdicts[column]
        assert "not classified" in verdicts[column].reasons[-1]
    assert verdicts["ref"].kind == "aadhaar" and (verdicts["ref"].valid, verdicts["ref"].sampled) == (30, 30)
    assert verdicts["ref"].evidence == "values"


def test_partly_valid_values_under_an_agreeing_name_are_name_only_at_a_lower_confidence() -> None:
    values = [f"user{i}@example.com" for i in range(18)] + ["not given"] * 12
    verdict = classify_columns("t", ["email"], {"email": values}, (), {}, lineage_checked=False)[0]
    full = classify_columns("t", ["email"], {"email": values[:10] * 3}, (), {}, lineage_checked=False)[0]
    few = classify_columns("t", ["email"], {"email": values[:10] + values[18:] * 2}, (), {}, lineage_checked=False)[0]
    assert verdict.kind == "email" and verdict.evidence == "name only, values disagree" and (verdict.valid, verdict.sampled) == (18, 30)
    assert verdict.confidence < 0.5 < full.confidence
    assert few.kind is None and few.name_suggests == "email" and few.reasons[-1].endswith(": not classified")


def test_numbers_stored_as_integers_are_validated_as_the_digits_they_stand_for() -> None:
    rng = random.Random(2)
    from classify_corpus import _luhn_number

    found = kinds({"col_a": [int(aadhaar(rng)) for _ in range(30)],
                   "col_b": [int(_luhn_number(rng, "4", 16)) for _ in range(30)],
                   "col_c": [int(_luhn_number(rng, "35", 15)) for _ in range(30)],
                   "col_d": [rng.randint(10**11, 10**12 - 1) for _ in range(30)]})  # random 12-digit numbers
    assert found == {"col_a": "aadhaar", "col_b": "card", "col_c": "imei", "col_d": None}


def test_phones_of_any_region_and_the_workspace_default_regions() -> None:
    """E.164 numbers of any country from values alone; a number without its +country code is read in
    the default regions (India, US, UK unless the workspace says otherwise)."""
    e164 = ["+44 20 7946 0958", "+1 212 555 0123", "+49 30 901820", "+91 98765 43210", "+33 1 42 68 53 00"] * 6
    german = ["030 901820", "089 1234567", "040 32890", "0221 221 0", "069 21201"] * 6
    assert kinds({"contact": e164}) == {"contact": "phone"}
    assert kinds({"notes": german}, ClassifyOptions(phone_regions=("DE",))) == {"notes": "phone"}
    assert kinds({"notes": german}) == {"notes": None}  # not E.164, not a number of India, the US or the UK


def test_indian_national_ids_by_value_and_person_kinds_by_name_and_shape() -> None:
    rng = random.Random(3)
    born = [dt.date(1950 + i, 1 + i % 12, 1 + i % 28) for i in range(30)]
    found = kinds({"f1": [pan(rng) for _ in range(30)], "f2": [gstin(rng) for _ in range(30)],
                   "dob": born, "order_date": born,  # dates: a date of birth only by name
                   "BirthDate": [int(d.strftime("%Y%m%d")) for d in born],  # a date stored as a number
                   "given_name": ["Aarav", "Vihaan", "Ananya", "Diya", "Ishaan", "Saanvi"] * 5,
                   "home address": ["12, MG Road, Bengaluru 560001", "Flat 4B, Sector 21, Noida 201301",
                                    "221B Baker Street, London NW1 6XE"] * 10})
    assert found == {"f1": "pan", "f2": "gstin", "dob": "date_of_birth", "order_date": None,
                     "BirthDate": "date_of_birth", "given_name": "person_name",
                     "home address": "address"}


def test_person_names_and_addresses_by_values_but_not_city_or_product_names() -> None:
    found = kinds({"a": ["John Smith", "Mary Johnson", "Robert Brown", "Patricia Miller", "Michael Davis"] * 6,
                   "b": ["Port Donna", "Lake Jennifer", "East Michael", "South Grace", "Stewartchester"] * 6,
                   "c": ["Mumbai", "Paris", "Chennai", "London", "Berlin"] * 6,
                   "d": ["iPhone 13", "Galaxy S22", "Echo Dot", "Apple Watch", "Kindle Paperwhite"] * 6,
                   "name": ["Apple Watch", "Echo Dot", "Kindle"] * 10,  # a product's bare name
                   "naam": ["राहुल शर्मा", "प्रिया पटेल", "अनिल कुमार"] * 10,  # names the census tables cannot know
                   "e": ["350 Fifth Avenue, New York, NY 10118", "1600 Amphitheatre Pkwy, Mountain View, CA 94043",
                         "10 Downing Street, London SW1A 2AA"] * 10})
    assert found == {"a": "person_name", "b": None, "c": None, "d": None, "name": None, "naam": "person_name",
                     "e": "address"}


def test_a_bare_id_is_a_persons_identifier_only_in_a_table_of_a_persons_data() -> None:
    ids = list(range(1001, 1031))
    assert kinds({"ID": ids, "email": [f"p{i}@example.org" for i in range(30)]})["ID"] == "user_id"
    assert kinds({"ID": ids, "sku": [f"SKU-{i}" for i in range(30)]})["ID"] is None


def test_sparse_columns_are_reported_not_judged() -> None:
    values = [None] * 95 + [f"p{i}@example.org" for i in range(5)]
    verdict = classify_columns("t", ["contact"], {"contact": values}, (), {}, rows_sampled=100, lineage_checked=False)[0]
    assert verdict.sparse and verdict.kind is None and "too sparse to judge" in verdict.reasons[0]
    named = classify_columns("t", ["email"], {"email": values}, (), {}, rows_sampled=100, lineage_checked=False)[0]
    assert named.sparse and named.kind == "email" and named.evidence == "name" and named.confidence == 0.6


def test_the_corpus_scores_binary_f1_at_least_095_and_at_most_one_decoy_in_30_flagged() -> None:
    columns = corpus()
    result = score(columns, classify_corpus(columns))
    assert result["f1"] >= 0.95 and result["typed_f1"] >= 0.9, {k: v for k, v in result.items() if k != "per_kind"}
    assert len(result["decoys_flagged"]) * 30 <= result["flagged"], result["decoys_flagged"]


# ---- through the CLI, on real files -----------------------------------------------------------------

def _workspace(root: Path, extra: dict | None = None) -> Path:
    (root / "piitracer.yaml").write_text(yaml.safe_dump({"version": 1, "spark": {"warehouse": "warehouse"}, **(extra or {})}))
    return root


def test_sampling_reads_across_files_and_row_groups_and_never_prints_a_value(tmp_path: Path) -> None:
    """A Parquet table of 12 files: the first files' `Contact` column is empty, the later ones hold
    e-mail addresses; reading the first rows only would see nulls. The sample spreads over the
    files and finds them; the output names the column as the table has it, in words, with counts,
    and no sampled value appears in the text, the JSON or catalog.discovered.yaml."""
    rng = random.Random(4)
    folder = tmp_path / "parquet" / "crm" / "contacts"
    folder.mkdir(parents=True)
    secrets = []
    for number in range(12):
        emails = [None] * 200 if number < 4 else [f"person{number}_{i}@example.net" for i in range(200)]
        secrets += [e for e in emails if e]
        aadhaars = [int(aadhaar(rng)) for _ in range(200)]
        secrets += [str(a) for a in aadhaars]
        table = pa.table({"Contact": pa.array(emails, pa.string()), "AadhaarRef": pa.array(aadhaars, pa.int64()),
                          "email_sent": [bool(i % 2) for i in range(200)], "qty": [i % 7 for i in range(200)]})
        pq.write_table(table, folder / f"part-{number:03d}.parquet", row_group_size=50)
    _workspace(tmp_path)
    shown = CliRunner().invoke(cli, ["--workspace", str(tmp_path), "catalog", "classify", "--output", "json", "--write"])
    assert shown.exit_code == 0, shown.output
    document = json.loads(shown.stdout)
    columns = {c["name_in_table"]: c for c in document["columns"]}
    assert columns["Contact"]["kind"] == "email" and columns["Contact"]["kind_words"] == "e-mail address"
    assert columns["Contact"]["valid"] >= 20 and columns["Contact"]["sampled"] >= columns["Contact"]["valid"]
    assert columns["AadhaarRef"]["kind"] == "aadhaar" and columns["AadhaarRef"]["valid"] == columns["AadhaarRef"]["sampled"]
    assert columns["email_sent"]["kind"] is None and columns["qty"]["kind"] is None
    assert document["lineage_checked"] is False and not any(c["pii_without_lineage"] for c in document["columns"])
    text = CliRunner().invoke(cli, ["--workspace", str(tmp_path), "catalog", "classify"])
    assert text.exit_code == 0, text.output
    assert "e-mail address" in text.output and "Aadhaar number" in text.output and "Contact" in text.output
    assert "No identifier is catalogued yet" in text.output and "PII without lineage" not in text.output
    written = (tmp_path / "catalog.discovered.yaml").read_text()
    for place in (shown.output, text.output, written):
        assert not [s for s in secrets if s in place]
    # Nothing piitracer wrote anywhere in the workspace (outside the table itself) holds a value.
    written_files = [p for p in tmp_path.rglob("*") if p.is_file() and folder not in p.parents]
    assert (tmp_path / "catalog.discovered.yaml") in written_files
    for path in written_files:
        content = path.read_bytes()
        assert not [s for s in secrets if s.encode() in content], path


def test_a_foreign_key_to_the_catalogued_subject_key_is_a_persons_identifier(tmp_path: Path) -> None:
    """orders.buyer holds the values of crm.people.user_id (no name says so, no lineage): a
    foreign key to a person."""
    rng = random.Random(5)
    people = tmp_path / "parquet" / "crm" / "people"
    orders = tmp_path / "parquet" / "shop" / "orders"
    people.mkdir(parents=True)
    orders.mkdir(parents=True)
    keys = rng.sample(range(10**6, 10**7), 300)
    pq.write_table(pa.table({"user_id": keys, "email": [f"u{k}@example.com" for k in keys]}), people / "p.parquet")
    pq.write_table(pa.table({"buyer": [rng.choice(keys) for _ in range(100)],
                             "sku": [rng.randint(10**6, 10**7) for _ in range(100)]}), orders / "o.parquet")
    _workspace(tmp_path, {"catalog": {"crm.people": {"format": "parquet", "location": "parquet/crm/people",
                                                     "columns": ["user_id", "email"], "identifiers": ["user_id", "email"],
                                                     "subject_key": "user_id"}}})
    shown = CliRunner().invoke(cli, ["--workspace", str(tmp_path), "catalog", "classify", "--output", "json"])
    assert shown.exit_code == 0, shown.output
    columns = {(c["dataset"], c["column"]): c for c in json.loads(shown.stdout)["columns"]}
    buyer = next(c for (d, col), c in columns.items() if col == "buyer")
    sku = next(c for (d, col), c in columns.items() if col == "sku")
    assert buyer["kind"] == "user_id" and "values of the subject key crm.people.user_id" in buyer["reasons"][0]
    assert sku["kind"] is None


@pytest.mark.parametrize("block, field", [({"phone_regions": ["India"]}, "phone_regions"),
                                          ({"min_values": 0}, "min_values"), ({"colour": 1}, "colour")])
def test_a_bad_classify_block_is_one_line_exit_2(tmp_path: Path, block: dict, field: str) -> None:
    _workspace(tmp_path, {"classify": block})
    shown = CliRunner().invoke(cli, ["--workspace", str(tmp_path), "catalog", "classify"])
    assert shown.exit_code == 2 and "classify" in shown.output and field in shown.output, shown.output
    assert "Traceback" not in shown.output


def test_national_ids_of_the_workspace_countries_by_their_stdnum_validators() -> None:
    """classify.countries: [es] reads Spanish DNIs by python-stdnum's validator, named in the
    module's own words; without Spain in the list the same column says nothing. A format check
    with no check digit (Germany's Steuernummer) is never trusted from values alone."""
    from stdnum.es import dni

    rng = random.Random(6)
    numbers = [f"{n:08d}" for n in (rng.randrange(10**7, 10**8) for _ in range(30))]
    spanish = {"doc": [n + dni.calc_check_digit(n) for n in numbers]}
    verdict = classify_columns("t", ["doc"], spanish, (), {}, ClassifyOptions(countries=("es",)), lineage_checked=False)[0]
    assert verdict.kind == "national_id" and verdict.valid == 30
    assert "validate as DNI (Documento Nacional de Identidad" in verdict.reasons[0]
    assert kinds(spanish) == {"doc": None}
    sequential = {"ref": [str(10**10 + i) for i in range(30)]}
    assert kinds(sequential, ClassifyOptions(countries=("de",))) == {"ref": None}


def test_a_sparse_column_is_read_wider_before_it_is_called_too_sparse(tmp_path: Path) -> None:
    """`Contact` holds an e-mail address in about one row of 15 across 12 files: the first spread
    (about 50 rows) sees three or four, the wider one enough to judge; `Notes` holds one value in the
    whole table: too sparse to judge, and said so."""
    folder = tmp_path / "parquet" / "crm" / "sparse"
    folder.mkdir(parents=True)
    rng = random.Random(7)
    for number in range(12):
        emails = [f"p{number}_{i}@example.net" if rng.random() < 0.07 else None for i in range(500)]
        notes = [None] * 500
        if number == 5:
            notes[7] = "see file"
        pq.write_table(pa.table({"Contact": pa.array(emails, pa.string()), "Notes": pa.array(notes, pa.string())}),
                       folder / f"part-{number:03d}.parquet", row_group_size=100)
    _workspace(tmp_path)
    shown = CliRunner().invoke(cli, ["--workspace", str(tmp_path), "catalog", "classify", "--output", "json"])
    assert shown.exit_code == 0, shown.output
    columns = {c["column"]: c for c in json.loads(shown.stdout)["columns"]}
    assert columns["contact"]["kind"] == "email" and columns["contact"]["sampled"] >= 20 and not columns["contact"]["sparse"]
    assert columns["notes"]["sparse"] and columns["notes"]["kind"] is None
    text = CliRunner().invoke(cli, ["--workspace", str(tmp_path), "catalog", "classify"])
    assert "1 column(s) too sparse to judge by values: crm.sparse.Notes" in text.output
