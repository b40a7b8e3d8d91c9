"""What a column's name suggests, read as people write names: ``CustomerEmail``, ``customer-email``,
``Customer E-mail``, ``CUST_EMAIL_ADDR`` and ``e_mail`` are all the e-mail kind.

A name is cut into lower-case tokens (separators, camelCase, letters/digits boundaries, accents
folded), then read by rules on the tokens, not by a pattern per spelling:

- **kind words**: a token (or a pair such as ``date of birth``, ``card number``) that names a kind,
  in English, its common abbreviations (``dob``, ``ssn``, ``msisdn``, ``ccn``, ``vpa``) and a few
  other languages (``telefono``, ``adresse``, ``nombre``, ``naam``...);
- **modifiers**: a token that makes the column *about* the kind rather than *of* it (``email_sent``,
  ``phone_model``, ``FLAG_PHONE``, ``email_domain``, ``phone_country_code``): no suggestion, the
  values alone decide;
- **person ids**: a token for a person (``user``, ``customer``, ``sender``, ``patient``...) followed
  by an id word (``id``, ``key``, ``ref``, ``no``, ``uuid``): ``SenderPersonId``;
  a bare ``id`` is only a *table key*, a person's id when the table holds a person's data.

A name is a suggestion (:class:`NameHint`); :mod:`piitracer.discover.classify` weighs it against the
sampled values, which outrank it.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

# The kinds a name can suggest, with the words a person reads.
KIND_WORDS: dict[str, str] = {
    "email": "e-mail address", "phone": "phone number", "person_name": "person name", "address": "postal address",
    "date_of_birth": "date of birth", "ip": "IP address", "imei": "device id (IMEI)", "card": "payment card number",
    "iban": "IBAN", "bank_account": "bank account number", "upi": "UPI id (VPA)", "pan": "Indian PAN",
    "aadhaar": "Aadhaar number", "gstin": "Indian GSTIN", "voter_id": "Indian voter id (EPIC)", "ssn": "US SSN",
    "nino": "UK National Insurance number", "passport": "passport number", "driving_licence": "driving licence number",
    "national_id": "national or tax id", "user_id": "person identifier", "table_key": "row key",
}

# A single token that names a kind by itself.
_WORDS: dict[str, str] = {}
for _kind, _tokens in {
    "email": "email emailaddress emailid mail mailid emailadresse courriel correo epost sahkoposti",
    "phone": "phone phoneno phonenumber telephone tel telno mobile mobileno mob msisdn cell cellphone cellular "
             "whatsapp telefono telefon telefone telefoon handy portable mobil fon",
    "address": "address addr addresse adresse anschrift direccion endereco indirizzo streetaddress street "
               "addressline addr1 addr2 pata domicile domicilio",
    "date_of_birth": "dob birthdate birthday bday dateofbirth geburtsdatum nacimiento naissance nascimento "
                     "geboortedatum birth",
    "ip": "ip ipaddr ipaddress ipv4 ipv6",
    "imei": "imei imeisv",
    "card": "ccn creditcard debitcard cardnumber cardno ccnumber",
    "iban": "iban",
    "upi": "vpa upi upiid",
    "pan": "pan pancard panno",
    "aadhaar": "aadhaar aadhar adhaar aadhaarno uidai",
    "gstin": "gstin",
    "voter_id": "epic voter voterid",
    "ssn": "ssn",
    "nino": "nino",
    "passport": "passport passportno passportnumber",
    "national_id": "nationalid taxid tin nif nie cpf curp rfc dni nric steuerid idnr bsn pesel",
}.items():
    for _token in _tokens.split():
        _WORDS[_token] = _kind

# Two tokens in a row that name a kind together.
_PAIRS: dict[tuple[str, str], str] = {
    ("e", "mail"): "email", ("mail", "address"): "email", ("contact", "number"): "phone", ("contact", "no"): "phone",
    ("cell", "no"): "phone", ("ph", "no"): "phone", ("ph", "number"): "phone", ("date", "birth"): "date_of_birth", ("birth", "date"): "date_of_birth",
    ("card", "number"): "card", ("card", "no"): "card", ("card", "num"): "card", ("cc", "number"): "card",
    ("cc", "no"): "card", ("cc", "num"): "card", ("credit", "card"): "card", ("debit", "card"): "card",
    ("social", "security"): "ssn", ("national", "insurance"): "nino", ("ni", "number"): "nino",
    ("account", "number"): "bank_account", ("account", "no"): "bank_account", ("account", "num"): "bank_account",
    ("acct", "no"): "bank_account", ("acct", "number"): "bank_account", ("acc", "no"): "bank_account",
    ("bank", "account"): "bank_account", ("device", "id"): "imei", ("voter", "id"): "voter_id",
    ("gst", "number"): "gstin", ("gst", "no"): "gstin", ("gst", "in"): "gstin",
    ("driving", "licence"): "driving_licence", ("driving", "license"): "driving_licence",
    ("driver", "license"): "driving_licence", ("drivers", "license"): "driving_licence",
    ("driver", "licence"): "driving_licence", ("dl", "no"): "driving_licence", ("dl", "number"): "driving_licence",
    ("licence", "number"): "driving_licence", ("license", "number"): "driving_licence",
    ("national", "id"): "national_id", ("tax", "id"): "national_id", ("tax", "number"): "national_id",
    ("tax", "no"): "national_id", ("id", "card"): "national_id", ("identity", "number"): "national_id",
    ("zip", "code"): "", ("post", "code"): "",  # a postal code alone is not an address
    ("street", "address"): "address", ("postal", "address"): "address", ("mailing", "address"): "address",
    ("ip", "address"): "ip", ("remote", "addr"): "ip", ("user", "name"): "user_id", ("login", "name"): "user_id",
}

# Words for a person's name: a given/family/full name, in a few languages.
_GIVEN = set("first firstname given givenname forename fname vorname prenom nombre nome primeiro".split())
_FAMILY = set("last lastname family familyname surname sname lname nachname apellido apellidos cognome "
              "sobrenome achternaam".split())
_NAME = set("name names fullname nom nombre nome naam namn imie".split())
_MIDDLE = set("middle maiden".split())
# A name of *something else*: no person's name (product_name, city_name, file_name...).
_NOT_PERSON = set("product item sku brand company org organisation organization business merchant shop store "
                  "vendor supplier bank branch city town country state region district province street file "
                  "table column schema db database host server domain app application device model plan "
                  "campaign event category group team project job task course program channel page site "
                  "url path tag label currency language locale display screen nick short legal trade "
                  "brandname productname company_name".split())
# Tokens for a person (in an id's name).
_PERSON = set("user users customer customers cust client member subscriber person people sender receiver "
              "recipient payer payee patient employee emp staff student buyer account acct holder party "
              "citizen applicant beneficiary contact lead guest passenger traveller traveler rider owner "
              "profile consumer shopper driver learner voter taxpayer insured policyholder borrower "
              "candidate tenant resident login visitor father mother spouse husband wife guardian nominee "
              "parent child son daughter relative emergency".split())
_ID = set("id ids key ref reference no num number uuid guid code".split())
# Tokens that make the column about the kind, not of it.
_MODIFIERS = set("flag flags is has sent send verified verify valid validated validity enabled opt optin optout "
                 "consent consented count cnt counts model type brand make provider carrier domain status format "
                 "len length bounced bounce opened clicked subscribed unsubscribed present missing exists "
                 "changed updated confirmed required allowed share pct percent ratio score rank prefix "
                 "country extension ext countrycode template campaign label category kind".split())


_VOCABULARY: frozenset[str] = frozenset()  # set below, once the word lists exist


@dataclass(frozen=True)
class NameHint:
    """What a column name suggests: a kind, how (``why``), and for a person name which part."""

    kind: str
    why: str
    part: str | None = None  # person_name: given, family, middle or full
    weak: bool = False  # a bare "name": a product's or a city's as well as a person's (values decide)


def tokens(column: str) -> list[str]:
    """The column name's lower-case tokens: separators, camelCase and letter/digit boundaries cut;
    accents folded (``Téléphone`` -> ``telephone``)."""
    folded = unicodedata.normalize("NFKD", column)
    folded = "".join(ch for ch in folded if not unicodedata.combining(ch))
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", folded)  # camelCase
    spaced = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1 \2", spaced)  # IBANNumber -> IBAN Number
    spaced = re.sub(r"([A-Za-z])([0-9])|([0-9])([A-Za-z])", lambda m: " ".join(g for g in m.groups() if g), spaced)
    found = []
    for token in re.split(r"[^0-9a-z]+", spaced.lower()):
        if token and token not in ("of", "the", "de", "du", "da", "s"):  # s: a possessive (Driver's License)
            found += _segment(token)
    return found


def _vocabulary() -> frozenset[str]:
    words = set(_WORDS) | {w for pair in _PAIRS for w in pair} | _GIVEN | _FAMILY | _NAME | _MIDDLE | _PERSON | _ID
    words |= _MODIFIERS | _NOT_PERSON | set(_EXTRA.split())
    return frozenset(w for w in words if len(w) >= 2)


# Words that only help cut run-together names (homephone, trackingnumber, dlnumber).
_EXTRA = ("home work office personal primary secondary alt alternate billing shipping delivery residential permanent "
          "current mailing tracking order transaction invoice line date time created updated at on by fecha data "
          "datum numero nummer")


def _segment(token: str) -> list[str]:
    """A run-together name (``homephone``, ``driverlicensenumber``) cut into known words, when
    it is wholly made of them (fewest pieces, at least two); else the token itself."""
    vocabulary = _VOCABULARY
    if token in vocabulary or len(token) < 5 or not token.isalpha():
        return [token]
    best: list[list[str] | None] = [[]] + [None] * len(token)
    for end in range(1, len(token) + 1):
        for start in range(max(0, end - 20), end):
            piece, before = token[start:end], best[start]
            if before is not None and piece in vocabulary and (best[end] is None or len(before) + 1 < len(best[end])):
                best[end] = before + [piece]
    cut = best[len(token)]
    return cut if cut and len(cut) >= 2 else [token]


def name_hint(column: str) -> NameHint | None:
    """The kind a column's name suggests, or None (no kind word, or a modifier says the column is
    about the kind rather than of it)."""
    parts = tokens(column)
    if not parts:
        return None
    if any(part in _MODIFIERS for part in parts):
        return None
    joined = "".join(parts)
    pairs = list(zip(parts, parts[1:]))
    # An id's own word outranks "card number": an Aadhaar card's or a PAN card's number is no payment card's.
    id_word = next((_WORDS[part] for part in parts if _WORDS.get(part) not in (None, "card")), None)
    for pair in pairs:
        if pair in _PAIRS:
            kind = _PAIRS[pair]
            if kind == "card" and id_word:
                return NameHint(id_word, f"'{column}' reads as {KIND_WORDS[id_word]}")
            if not kind:
                return None
            if kind == "user_id" and len(parts) == 2:
                return NameHint("user_id", f"'{column}' reads as a login name")
            if kind != "user_id":
                return NameHint(kind, f"'{column}' reads as {KIND_WORDS[kind]}")
    named = _person_name(parts, column)
    if named:
        return named
    for part in [joined, *parts]:
        kind = _WORDS.get(part)
        if kind:
            return NameHint(kind, f"'{column}' reads as {KIND_WORDS[kind]}")
    if parts[-1] in _ID and any(part in _PERSON for part in parts[:-1]):
        return NameHint("user_id", f"'{column}' reads as a person's identifier")
    if joined in ("id", "uuid", "guid", "pk", "rowid"):
        return NameHint("table_key", f"'{column}' is the table's own key")
    if len(parts) == 1 and parts[0] in ("username", "userid", "login", "customerid", "custid", "clientid", "memberid"):
        return NameHint("user_id", f"'{column}' reads as a person's identifier")
    return None


def _person_name(parts: list[str], column: str) -> NameHint | None:
    """A person's name: ``first_name``, ``FirstName``, ``surname``, ``customer name``, ``nombre``;
    not ``product_name`` or ``city_name``."""
    if any(part in _NOT_PERSON for part in parts):
        return None
    has_name = any(part in _NAME for part in parts)
    joined = "".join(parts)
    if any(part in _GIVEN for part in parts) and (has_name or len(parts) == 1 or joined in _GIVEN):
        return NameHint("person_name", f"'{column}' reads as a given name", "given")
    if any(part in _FAMILY for part in parts) and (has_name or len(parts) == 1 or joined in _FAMILY):
        return NameHint("person_name", f"'{column}' reads as a family name", "family")
    if any(part in _MIDDLE for part in parts) and has_name:
        return NameHint("person_name", f"'{column}' reads as a middle name", "middle")
    if has_name:
        if any(part in _ID for part in parts):
            return None  # name_id, name_code: a key, not a name
        weak = not any(part in _PERSON or part == "full" or part == "fullname" for part in parts)
        return NameHint("person_name", f"'{column}' reads as a name", "full", weak)
    return None


_VOCABULARY = _vocabulary()
