"""SQL constructs beyond plain INSERT/CTAS/MERGE: each test asserts its exact set of typed edges
(source, target dataset, target column, kind, subtype, masking, expression), the way
tests/test_sql_lineage.py does, and the line each edge comes from where it matters."""

from __future__ import annotations

from piitracer.ingest.sql_lineage import ingest_sql_text
from piitracer.model.lineage import LineageBatch, ProblemSeverity
from piitracer.model.naming import DatasetNamer

D, I = "DIRECT", "INDIRECT"
ID, TR, AGG = "IDENTITY", "TRANSFORMATION", "AGGREGATION"

SCHEMAS = {
    "prod.payments": ["user_id", "pan", "phone", "email", "amount", "merchant_id", "dt"],
    "prod.merchants": ["merchant_id", "merchant_name", "city"],
    "prod.users": ["user_id", "email", "phone", "country"],
    "crm.customers": ["customer_id", "email", "phone", "segment"],
}


def ingest(sql: str, dialect: str = "spark", schemas: dict | None = None) -> LineageBatch:
    return ingest_sql_text(sql, file="job.sql", namer=DatasetNamer(), dialect=dialect,
                           schemas=SCHEMAS if schemas is None else schemas)


def edges(batch: LineageBatch) -> set[tuple]:
    """(source, target dataset, target column, kind, subtype, masking, expression) of every edge."""
    return {
        (str(e.source), e.target_dataset, e.target_column, e.kind.value, e.subtype.value, e.masking, e.expression)
        for e in batch.column_edges
    }


def lines(batch: LineageBatch) -> set[tuple[str, int]]:
    """(target dataset, origin line) of every column edge."""
    return {(e.target_dataset, e.origin.line) for e in batch.column_edges}


def problems(batch: LineageBatch, *severities: ProblemSeverity) -> list[tuple[int, str, str]]:
    """(line, severity, reason) of the problems of the given severities (all when none given)."""
    return [(p.origin.line, p.severity.value, p.reason) for p in batch.problems
            if not severities or p.severity in severities]


def no_problems(batch: LineageBatch) -> None:
    assert problems(batch, ProblemSeverity.ERROR, ProblemSeverity.WARNING) == [], [str(p) for p in batch.problems]


# ---- procedure and script blocks -----------------------------------------------------------------


def test_bigquery_procedure_with_control_flow():
    batch = ingest(
        """CREATE OR REPLACE PROCEDURE prod.refresh_contacts(since DATE)
BEGIN
  DECLARE n INT64 DEFAULT 0;
  IF since IS NULL THEN
    SET since = CURRENT_DATE();
  ELSEIF since < '2020-01-01' THEN
    SET since = '2020-01-01';
  END IF;
  LOOP
    SET n = n + 1;
    INSERT INTO analytics.contacts
    SELECT user_id, lower(email) AS email_norm FROM prod.users WHERE country = 'IN';
    IF n >= 3 THEN LEAVE; END IF;
  END LOOP;
  WHILE n > 0 DO
    MERGE analytics.contacts c USING prod.users u ON c.user_id = u.user_id
    WHEN MATCHED THEN UPDATE SET email_norm = u.email;
    SET n = n - 1;
  END WHILE;
EXCEPTION WHEN ERROR THEN
  RAISE;
END;
""",
        dialect="bigquery",
    )
    no_problems(batch)
    t = "analytics.contacts"
    assert edges(batch) == {
        ("prod.users.user_id", t, "user_id", D, ID, False, None),
        ("prod.users.email", t, "email_norm", D, TR, False, "LOWER(email)"),
        ("prod.users.country", t, None, I, "FILTER", False, None),
        ("prod.users.email", t, "email_norm", D, ID, False, None),  # the MERGE
        ("prod.users.user_id", t, None, I, "JOIN", False, None),
    }
    assert {(str(e.source), e.origin.line) for e in batch.column_edges} == {
        ("prod.users.user_id", 11), ("prod.users.email", 11), ("prod.users.country", 11),
        ("prod.users.email", 16), ("prod.users.user_id", 16),
    }


def test_tsql_procedure_with_try_catch_and_go():
    batch = ingest(
        """CREATE PROCEDURE dbo.load_contacts
  @since DATE, @limit INT
AS
BEGIN
  SET NOCOUNT ON;
  BEGIN TRY
    DECLARE @n INT = 0;
    IF @since IS NULL
      SET @since = GETDATE();
    ELSE IF @since < '2020-01-01'
      SET @since = '2020-01-01';
    WHILE @n < @limit
      BEGIN
        SET @n = @n + 1;
        INSERT INTO analytics.contacts
        SELECT u.user_id, UPPER(u.email) AS email_upper
        FROM prod.users AS u
        WHERE u.country = 'IN';
      END
  END TRY
  BEGIN CATCH
    THROW;
  END CATCH
END;
GO
INSERT INTO analytics.after SELECT pan FROM prod.payments;
""",
        dialect="tsql",
    )
    no_problems(batch)
    assert edges(batch) == {
        ("prod.users.user_id", "analytics.contacts", "user_id", D, ID, False, None),
        ("prod.users.email", "analytics.contacts", "email_upper", D, TR, False, "UPPER(email)"),
        ("prod.users.country", "analytics.contacts", None, I, "FILTER", False, None),
        ("prod.payments.pan", "analytics.after", "pan", D, ID, False, None),
    }
    assert lines(batch) == {("analytics.contacts", 15), ("analytics.after", 26)}


def test_oracle_procedure_with_declarations_and_slash():
    batch = ingest(
        """CREATE OR REPLACE PROCEDURE prod.load_contacts (p_since IN DATE) IS
  v_n NUMBER := 0;
  CURSOR c IS SELECT user_id FROM prod.users;
BEGIN
  IF p_since IS NULL THEN
    v_n := 1;
  ELSIF p_since < SYSDATE THEN
    v_n := 2;
  END IF;
  FOR r IN c LOOP
    INSERT INTO analytics.contacts
    SELECT user_id, email FROM prod.users WHERE country = 'IN';
  END LOOP;
  dbms_output.put_line('done');
  EXIT WHEN v_n > 3;
EXCEPTION
  WHEN OTHERS THEN
    ROLLBACK;
    RAISE;
END load_contacts;
/
INSERT INTO analytics.after SELECT pan FROM prod.payments;
""",
        dialect="oracle",
    )
    no_problems(batch)
    assert edges(batch) == {
        ("prod.users.user_id", "analytics.contacts", "user_id", D, ID, False, None),
        ("prod.users.email", "analytics.contacts", "email", D, ID, False, None),
        ("prod.users.country", "analytics.contacts", None, I, "FILTER", False, None),
        ("prod.payments.pan", "analytics.after", "pan", D, ID, False, None),
    }
    assert lines(batch) == {("analytics.contacts", 11), ("analytics.after", 22)}


def test_snowflake_scripting_body_in_dollar_quotes():
    batch = ingest(
        """CREATE OR REPLACE PROCEDURE prod.load_contacts(since DATE)
RETURNS VARCHAR
LANGUAGE SQL
EXECUTE AS CALLER
AS
$$
DECLARE
  n INTEGER DEFAULT 0;
  res RESULTSET;
BEGIN
  LET k := 1;
  IF (since IS NULL) THEN
    RETURN 'nothing';
  END IF;
  FOR i IN 1 TO 3 DO
    n := n + 1;
  END FOR;
  INSERT INTO analytics.contacts
  SELECT user_id, sha2(email, 256) AS email_hash FROM prod.users;
  CREATE OR REPLACE TABLE analytics.phones AS SELECT user_id, phone FROM prod.users;
  RETURN 'ok';
EXCEPTION
  WHEN OTHER THEN
    RETURN SQLERRM;
END;
$$;
CREATE PROCEDURE prod.js() RETURNS STRING LANGUAGE JAVASCRIPT AS $$ return 1; $$;
""",
        dialect="snowflake",
    )
    assert edges(batch) == {
        ("prod.users.user_id", "analytics.contacts", "user_id", D, ID, False, None),
        ("prod.users.email", "analytics.contacts", "email_hash", D, TR, True, "SHA2(email, 256)"),
        ("prod.users.user_id", "analytics.phones", "user_id", D, ID, False, None),
        ("prod.users.phone", "analytics.phones", "phone", D, ID, False, None),
    }
    assert lines(batch) == {("analytics.contacts", 18), ("analytics.phones", 20)}
    assert problems(batch, ProblemSeverity.ERROR, ProblemSeverity.WARNING) == [
        (27, "warning", "procedure prod.js is written in JAVASCRIPT: its statements are not analysed (no lineage)"),
    ]


def test_plpgsql_procedure_body():
    batch = ingest(
        """CREATE PROCEDURE prod.p()
LANGUAGE plpgsql
AS $body$
DECLARE
  v integer;
BEGIN
  INSERT INTO analytics.contacts SELECT user_id, email FROM prod.users;
  COMMIT;
END;
$body$;
""",
        dialect="postgres",
    )
    no_problems(batch)
    assert edges(batch) == {
        ("prod.users.user_id", "analytics.contacts", "user_id", D, ID, False, None),
        ("prod.users.email", "analytics.contacts", "email", D, ID, False, None),
    }
    assert lines(batch) == {("analytics.contacts", 7)}


def test_plain_begin_end_blocks_and_execute_immediate():
    batch = ingest(
        """BEGIN
  INSERT INTO a.phones SELECT user_id, phone FROM prod.users;
  EXECUTE IMMEDIATE 'INSERT INTO a.emails SELECT email FROM prod.users';
  EXECUTE IMMEDIATE sql_text;
END;
BEGIN TRANSACTION;
INSERT INTO a.pans SELECT pan FROM prod.payments;
COMMIT TRANSACTION;
""",
        dialect="bigquery",
    )
    assert edges(batch) == {
        ("prod.users.user_id", "a.phones", "user_id", D, ID, False, None),
        ("prod.users.phone", "a.phones", "phone", D, ID, False, None),
        ("prod.users.email", "a.emails", "email", D, ID, False, None),
        ("prod.payments.pan", "a.pans", "pan", D, ID, False, None),
    }
    assert lines(batch) == {("a.phones", 2), ("a.emails", 3), ("a.pans", 7)}
    assert problems(batch, ProblemSeverity.ERROR, ProblemSeverity.WARNING) == [
        (4, "warning", "dynamic SQL built at run time (EXECUTE IMMEDIATE of an expression): not analysed, no lineage"),
    ]


def test_snowflake_anonymous_block_with_declare():
    batch = ingest(
        """DECLARE
  c INTEGER;
BEGIN
  INSERT INTO a.phones SELECT phone FROM prod.users;
END;
EXECUTE IMMEDIATE $$
BEGIN
  INSERT INTO a.emails SELECT email FROM prod.users;
END;
$$;
""",
        dialect="snowflake",
    )
    no_problems(batch)
    assert edges(batch) == {
        ("prod.users.phone", "a.phones", "phone", D, ID, False, None),
        ("prod.users.email", "a.emails", "email", D, ID, False, None),
    }
    assert lines(batch) == {("a.phones", 4), ("a.emails", 8)}
