"""SQL constructs beyond plain INSERT/CTAS/MERGE: each test asserts its exact set of typed edges
(source, target dataset, target column, kind, subtype, masking, expression), the way
tests/unit/ingest/test_sql_lineage.py does, and the line each edge comes from where it matters."""

from __future__ import annotations

from piitracer.ingest.sql.lineage import ingest_sql_text
from piitracer.model.lineage import LineageBatch, ProblemSeverity
from piitracer.model.naming import DatasetNamer
from sql_edges import AGG, D, I, ID, TR, edges


SCHEMAS = {
    "prod.payments": ["user_id", "pan", "phone", "email", "amount", "merchant_id", "dt"],
    "prod.merchants": ["merchant_id", "merchant_name", "city"],
    "prod.users": ["user_id", "email", "phone", "country"],
    "crm.customers": ["customer_id", "email", "phone", "segment"],
}


def ingest(sql: str, dialect: str = "spark", schemas: dict | None = None) -> LineageBatch:
    return ingest_sql_text(sql, file="job.sql", namer=DatasetNamer(), dialect=dialect,
                           schemas=SCHEMAS if schemas is None else schemas)


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


# ---- UPDATE and DELETE ---------------------------------------------------------------------------


def test_update_from_another_table():
    batch = ingest(
        """
        UPDATE crm.customers AS c
        SET email = u.email, phone = lower(u.phone)
        FROM prod.users u
        WHERE u.user_id = c.customer_id AND u.country = 'IN'
        """,
        dialect="postgres",
    )
    no_problems(batch)
    t = "crm.customers"
    assert edges(batch) == {
        ("prod.users.email", t, "email", D, ID, False, None),
        ("prod.users.phone", t, "phone", D, TR, False, "LOWER(phone)"),
        # The target's own columns bring nothing: only the other table decides which rows change.
        ("prod.users.user_id", t, None, I, "FILTER", False, None),
        ("prod.users.country", t, None, I, "FILTER", False, None),
    }
    assert [(e.source, e.target) for e in batch.dataset_edges] == [("prod.users", t)]


def test_update_tsql_alias_target_and_mysql_join():
    tsql = ingest(
        "UPDATE x SET x.email = u.email FROM crm.customers AS x INNER JOIN prod.users AS u "
        "ON x.customer_id = u.user_id WHERE u.country = 'IN'",
        dialect="tsql",
    )
    no_problems(tsql)
    t = "crm.customers"
    assert edges(tsql) == {
        ("prod.users.email", t, "email", D, ID, False, None),
        ("prod.users.user_id", t, None, I, "JOIN", False, None),
        ("prod.users.country", t, None, I, "FILTER", False, None),
    }
    mysql = ingest("UPDATE crm.customers c JOIN prod.users u ON c.customer_id = u.user_id SET c.phone = u.phone",
                   dialect="mysql")
    no_problems(mysql)
    assert edges(mysql) == {
        ("prod.users.phone", t, "phone", D, ID, False, None),
        ("prod.users.user_id", t, None, I, "JOIN", False, None),
    }


def test_update_set_from_subqueries():
    scalar = ingest(
        "UPDATE crm.customers SET segment = (SELECT max(u.country) FROM prod.users u "
        "WHERE u.user_id = customers.customer_id)"
    )
    no_problems(scalar)
    t = "crm.customers"
    assert edges(scalar) == {
        ("prod.users.country", t, "segment", D, AGG, False, None),
        ("prod.users.user_id", t, None, I, "FILTER", False, None),
    }
    row = ingest(
        "UPDATE crm.customers c SET (email, phone) = (SELECT u.email, upper(u.phone) FROM prod.users u "
        "WHERE u.user_id = c.customer_id)",
        dialect="postgres",
    )
    no_problems(row)
    assert edges(row) == {
        ("prod.users.email", t, "email", D, ID, False, None),
        # A value of another query's row: a transformation, but no per-row expression of it.
        ("prod.users.phone", t, "phone", D, TR, False, "UPPER(phone)"),
        ("prod.users.user_id", t, None, I, "FILTER", False, None),
    }


def test_delete_using_is_a_filter_on_the_target():
    t = "crm.customers"
    using = ingest(
        "DELETE FROM crm.customers c USING prod.users u WHERE c.customer_id = u.user_id AND u.country = 'XX'",
        dialect="postgres",
    )
    no_problems(using)
    assert edges(using) == {
        ("prod.users.user_id", t, None, I, "FILTER", False, None),
        ("prod.users.country", t, None, I, "FILTER", False, None),
    }
    assert [(e.source, e.target) for e in using.dataset_edges] == [("prod.users", t)]
    tsql = ingest(
        "DELETE c FROM crm.customers AS c JOIN prod.users AS u ON c.customer_id = u.user_id WHERE u.country = 'XX'",
        dialect="tsql",
    )
    no_problems(tsql)
    assert edges(tsql) == {
        ("prod.users.user_id", t, None, I, "JOIN", False, None),
        ("prod.users.country", t, None, I, "FILTER", False, None),
    }
    subquery = ingest("DELETE FROM crm.customers WHERE customer_id IN (SELECT user_id FROM prod.users WHERE country = 'XX')")
    no_problems(subquery)
    assert edges(subquery) == edges(using)


# ---- multi-table inserts -------------------------------------------------------------------------


def test_hive_multi_insert_with_a_with_clause_every_insert_sees():
    batch = ingest(
        """
        WITH recent AS (SELECT user_id, email, amount FROM prod.payments WHERE dt >= '2024-01-01')
        FROM recent r
        INSERT OVERWRITE TABLE a.big PARTITION (tier = 'big') SELECT r.user_id, r.email WHERE r.amount > 100
        INSERT INTO TABLE a.all_emails SELECT sha2(email, 256) AS h
        """,
        dialect="hive",
    )
    no_problems(batch)
    assert edges(batch) == {
        ("prod.payments.user_id", "a.big", "user_id", D, ID, False, None),
        ("prod.payments.email", "a.big", "email", D, ID, False, None),
        ("prod.payments.amount", "a.big", None, I, "FILTER", False, None),
        ("prod.payments.dt", "a.big", None, I, "FILTER", False, None),
        ("prod.payments.email", "a.all_emails", "h", D, TR, True, "SHA2(email, 256)"),
        ("prod.payments.dt", "a.all_emails", None, I, "FILTER", False, None),
    }
    assert {(e.source, e.target) for e in batch.dataset_edges} == {("prod.payments", "a.big"),
                                                                  ("prod.payments", "a.all_emails")}


def test_conditional_multi_table_insert():
    batch = ingest(
        """
        INSERT FIRST
          WHEN amount > 10 THEN INTO a.big VALUES (user_id, sha2(pan, 256))
          ELSE INTO a.small (u) VALUES (user_id)
        SELECT user_id, pan, amount FROM prod.payments
        """,
        dialect="oracle",
    )
    no_problems(batch)
    assert edges(batch) == {
        ("prod.payments.user_id", "a.big", "user_id", D, ID, False, None),
        ("prod.payments.pan", "a.big", "sha2(pan, 256)", D, TR, True, "SHA2(pan, 256)"),
        ("prod.payments.amount", "a.big", None, I, "FILTER", False, None),
        ("prod.payments.user_id", "a.small", "u", D, ID, False, None),
        ("prod.payments.amount", "a.small", None, I, "FILTER", False, None),  # FIRST: it failed the WHEN before
    }


# ---- FROM clauses --------------------------------------------------------------------------------


def test_derived_tables_without_alias_do_not_collide():
    batch = ingest(
        """
        INSERT INTO a.t
        SELECT user_id, city
        FROM (SELECT user_id, merchant_id FROM prod.payments)
        JOIN (SELECT merchant_id AS mid, city FROM prod.merchants) ON merchant_id = mid
        """
    )
    no_problems(batch)
    assert edges(batch) == {
        ("prod.payments.user_id", "a.t", "user_id", D, ID, False, None),
        ("prod.merchants.city", "a.t", "city", D, ID, False, None),
        ("prod.payments.merchant_id", "a.t", None, I, "JOIN", False, None),
        ("prod.merchants.merchant_id", "a.t", None, I, "JOIN", False, None),
    }


def test_join_using_column_comes_from_both_sides():
    batch = ingest(
        "INSERT INTO a.t SELECT merchant_id, city, amount FROM prod.payments p JOIN prod.merchants m USING (merchant_id)"
    )
    no_problems(batch)
    assert edges(batch) == {
        ("prod.payments.merchant_id", "a.t", "merchant_id", D, ID, False, None),
        ("prod.merchants.merchant_id", "a.t", "merchant_id", D, ID, False, None),
        ("prod.merchants.city", "a.t", "city", D, ID, False, None),
        ("prod.payments.amount", "a.t", "amount", D, ID, False, None),
        ("prod.payments.merchant_id", "a.t", None, I, "JOIN", False, None),
        ("prod.merchants.merchant_id", "a.t", None, I, "JOIN", False, None),
    }
    star = ingest("CREATE TABLE a.s AS SELECT * FROM prod.merchants m JOIN prod.users u USING (city)",
                  schemas={**SCHEMAS, "prod.users": ["user_id", "city"]})
    no_problems(star)
    # As in Spark: the USING column once, first, then each side's other columns.
    assert star.datasets[0].columns == ("city", "merchant_id", "merchant_name", "user_id")
    assert {(str(e.source), e.target_column) for e in star.column_edges if e.kind.value == D} == {
        ("prod.merchants.city", "city"), ("prod.users.city", "city"), ("prod.merchants.merchant_id", "merchant_id"),
        ("prod.merchants.merchant_name", "merchant_name"), ("prod.users.user_id", "user_id"),
    }


def test_joins_in_parentheses():
    batch = ingest(
        """
        INSERT INTO a.t
        SELECT p.user_id, m.city
        FROM ((prod.payments AS p JOIN prod.merchants AS m ON p.merchant_id = m.merchant_id))
        WHERE m.city = 'Pune'
        """
    )
    no_problems(batch)
    assert edges(batch) == {
        ("prod.payments.user_id", "a.t", "user_id", D, ID, False, None),
        ("prod.merchants.city", "a.t", "city", D, ID, False, None),
        ("prod.payments.merchant_id", "a.t", None, I, "JOIN", False, None),
        ("prod.merchants.merchant_id", "a.t", None, I, "JOIN", False, None),
        ("prod.merchants.city", "a.t", None, I, "FILTER", False, None),
    }


def test_generators_in_from_unnest_flatten_lateral_subquery():
    flatten = ingest("INSERT INTO a.t SELECT f.value AS v, f.index AS i FROM prod.users u, "
                     "LATERAL FLATTEN(INPUT => u.email, OUTER => TRUE) f", dialect="snowflake")
    no_problems(flatten)
    assert edges(flatten) == {("prod.users.email", "a.t", "v", D, TR, False, None)}  # INDEX is a position
    unnest = ingest("INSERT INTO a.t SELECT x, o FROM prod.users t CROSS JOIN UNNEST(t.email) AS x WITH OFFSET AS o",
                    dialect="bigquery")
    no_problems(unnest)
    assert edges(unnest) == {("prod.users.email", "a.t", "x", D, TR, False, None)}
    lateral = ingest("INSERT INTO a.t SELECT l.x FROM prod.users t, LATERAL (SELECT lower(t.email) AS x) l",
                     dialect="postgres")
    no_problems(lateral)
    assert edges(lateral) == {("prod.users.email", "a.t", "x", D, TR, False, "LOWER(email)")}


def test_pivot_and_unpivot():
    pivot = ingest(
        "INSERT INTO a.t SELECT * FROM (SELECT user_id, amount, merchant_id FROM prod.payments) "
        "PIVOT (sum(amount) AS s FOR merchant_id IN (1 AS m1, 2 AS m2))"
    )
    no_problems(pivot)
    assert edges(pivot) == {
        ("prod.payments.user_id", "a.t", "user_id", D, ID, False, None),
        ("prod.payments.user_id", "a.t", None, I, "GROUP_BY", False, None),  # the implicit group key
        ("prod.payments.amount", "a.t", "m1", D, AGG, False, None),
        ("prod.payments.amount", "a.t", "m2", D, AGG, False, None),
        ("prod.payments.merchant_id", "a.t", "m1", I, "CONDITIONAL", False, None),
        ("prod.payments.merchant_id", "a.t", "m2", I, "CONDITIONAL", False, None),
    }
    assert pivot.datasets[0].columns == ("user_id", "m1", "m2")
    unpivot = ingest("INSERT INTO a.u SELECT user_id, kind, contact FROM prod.users "
                     "UNPIVOT (contact FOR kind IN (email, phone))", dialect="snowflake")
    no_problems(unpivot)
    assert edges(unpivot) == {
        ("prod.users.user_id", "a.u", "user_id", D, ID, False, None),
        ("prod.users.email", "a.u", "contact", D, ID, False, None),
        ("prod.users.phone", "a.u", "contact", D, ID, False, None),
    }


# ---- column names --------------------------------------------------------------------------------


def test_lateral_column_alias():
    batch = ingest(
        "INSERT INTO a.t SELECT amount AS x, x + 1 AS y, lower(email) AS email, email AS raw FROM prod.payments",
        dialect="databricks",
    )
    no_problems(batch)
    assert edges(batch) == {
        ("prod.payments.amount", "a.t", "x", D, ID, False, None),
        ("prod.payments.amount", "a.t", "y", D, TR, False, "amount + 1"),
        ("prod.payments.email", "a.t", "email", D, TR, False, "LOWER(email)"),
        # A source column of that name wins over the earlier alias (Spark's order).
        ("prod.payments.email", "a.t", "raw", D, ID, False, None),
    }
    unknown = ingest("INSERT INTO a.u SELECT v AS w, sha2(w, 256) AS h FROM lake.unknown", dialect="snowflake")
    no_problems(unknown)
    assert edges(unknown) == {
        ("lake.unknown.v", "a.u", "w", D, ID, False, None),
        ("lake.unknown.v", "a.u", "h", D, TR, True, "SHA2(v, 256)"),
    }


def test_database_qualified_column_names():
    batch = ingest(
        """
        INSERT INTO a.t
        SELECT prod.users.email, dev.users.email AS dev_email, spark_catalog.prod.users.phone
        FROM prod.users JOIN dev.users ON prod.users.user_id = dev.users.user_id
        """,
        schemas={**SCHEMAS, "dev.users": ["user_id", "email"]},
    )
    no_problems(batch)
    assert edges(batch) == {
        ("prod.users.email", "a.t", "email", D, ID, False, None),
        ("dev.users.email", "a.t", "dev_email", D, ID, False, None),
        ("prod.users.phone", "a.t", "phone", D, ID, False, None),
        ("prod.users.user_id", "a.t", None, I, "JOIN", False, None),
        ("dev.users.user_id", "a.t", None, I, "JOIN", False, None),
    }


def test_struct_field_access():
    batch = ingest("INSERT INTO a.t SELECT s.address.city, s.info.geo.lat AS lat, address.zip FROM lake.src s",
                   schemas={"lake.src": ["id", "address", "info"]})
    no_problems(batch)
    assert edges(batch) == {
        ("lake.src.address", "a.t", "city", D, TR, False, "address.city"),
        ("lake.src.info", "a.t", "lat", D, TR, False, "info.geo.lat"),
        ("lake.src.address", "a.t", "zip", D, TR, False, "address.zip"),
    }


# ---- what is reported ----------------------------------------------------------------------------


def test_select_star_without_a_schema_is_one_dataset_flow_and_a_warning():
    for sql in ("INSERT INTO a.copy SELECT * FROM lake.unknown", "CREATE TABLE a.copy AS SELECT * FROM lake.unknown"):
        batch = ingest(sql)
        assert edges(batch) == set()
        assert [(e.source, e.target, e.relation.value) for e in batch.dataset_edges] == [("lake.unknown", "a.copy", "flow")]
        assert problems(batch) == [(1, "warning", "cannot expand * of lake.unknown: no known schema")]


def test_writes_without_column_lineage_are_reported():
    batch = ingest(
        """INSERT INTO a.t SELECT 1 AS one, current_date() AS d FROM prod.users;
INSERT INTO a.t VALUES (1, 2);
CREATE TABLE a.c SHALLOW CLONE prod.users;
LOAD DATA INPATH '/landing/x' INTO TABLE a.t;
"""
    )
    assert edges(batch) == set()
    assert problems(batch) == [
        (1, "info", "INSERT into a.t: no column lineage (no column of prod.users reaches it)"),
        (2, "info", "INSERT of constant VALUES into a.t: no column lineage (it reads no other table)"),
        (3, "warning", "CREATE TABLE a.c ... CLONE: clones are read from the catalog (clone_of), not from SQL: no lineage"),
        (4, "info", "LOAD DATA into a.t loads files: no lineage from tables"),
    ]


def test_file_exports_and_select_into_are_reported():
    spark = ingest("INSERT OVERWRITE DIRECTORY '/exports/x' SELECT email FROM prod.users")
    assert edges(spark) == set()
    assert problems(spark) == [(1, "warning", "INSERT OVERWRITE DIRECTORY writes files that are no catalogued table: no lineage")]
    tsql = ingest("SELECT email INTO #tmp FROM prod.users", dialect="tsql")
    assert edges(tsql) == set()
    assert problems(tsql) == [(1, "info", "SELECT ... INTO tmp: variables or a new table, not analysed: no lineage")]


def test_opaque_commands_are_reported_unless_harmless():
    batch = ingest(
        """ADD JAR /opt/udfs.jar;
REFRESH TABLE a.b;
MSCK REPAIR TABLE a.b;
ANALYZE TABLE a.b COMPUTE STATISTICS;
OPTIMIZE a.b;
VACUUM a.b;
DESCRIBE a.b;
SHOW TABLES;
EXPLAIN SELECT 1;
GRANT SELECT ON a.b TO analysts;
COMMENT ON TABLE a.b IS 'x';
CACHE TABLE a.b;
UNCACHE TABLE a.b;
SET x = 1;
USE a;
""")
    assert problems(batch) == [] and batch.units_read == 15
    snowflake = ingest("CREATE STREAM s ON TABLE a.b", dialect="snowflake")
    assert problems(snowflake) == [(1, "warning", "CREATE statement kept by sqlglot as an opaque command: not analysed, no lineage")]


def test_misspelt_statements_are_errors_and_a_bare_select_is_an_info_line():
    batch = ingest(
        """INSRT INTO a.x SELECT email FROM prod.users;
INSERT INTO a.x SELEC email FROM prod.users;
SELET email;
SELECT email FROM prod.users;
INSERT INTO a.ok SELECT email FROM prod.users;
"""
    )
    assert edges(batch) == {("prod.users.email", "a.ok", "email", D, ID, False, None)}
    assert [(line, severity) for line, severity, _ in problems(batch)] == [
        (1, "error"), (2, "error"), (3, "error"), (4, "info"),
    ]
    assert all(reason.startswith("cannot parse statement") for _, _, reason in problems(batch)[:2])
    assert problems(batch)[2:] == [
        (3, "error", "not a SQL statement: 'SELET AS email' (a misspelt keyword?)"),
        (4, "info", "SELECT without a target table: no lineage"),
    ]


# ---- equi-join key equivalence (ColumnEdge.join_equality) ----------------------------------------

ACCOUNTS = {
    "bank.transfers": ["transfer_id", "account_ref", "amount", "booked_on"],
    "bank.accounts": ["account_id", "iban", "holder_name", "opened_on"],
    "bank.cards": ["card_no", "account_id", "issued_on"],
}


def typed(batch: LineageBatch) -> set[tuple]:
    """The DIRECT edges as (source, target column, subtype, masking, expression, join_equality)."""
    return {(str(e.source), e.target_column, e.subtype.value, e.masking, e.expression, e.join_equality)
            for e in batch.column_edges if e.kind.value == D}


def join_ingest(sql: str, dialect: str = "spark") -> LineageBatch:
    batch = ingest(sql, dialect, schemas=ACCOUNTS)
    no_problems(batch)
    return batch


def test_inner_join_equality_gives_the_other_side_from_either_side():
    batch = join_ingest(
        """
        INSERT INTO risk.holders
        SELECT t.account_ref AS holder, a.iban, a.account_id AS acct, sha2(t.account_ref, 256) AS holder_hash
        FROM bank.transfers t JOIN bank.accounts a ON t.account_ref = a.account_id
        """
    )
    eq = "t.account_ref = a.account_id"
    assert typed(batch) == {
        ("bank.transfers.account_ref", "holder", ID, False, None, None),
        ("bank.accounts.account_id", "holder", ID, False, None, eq),
        ("bank.accounts.iban", "iban", ID, False, None, None),
        ("bank.accounts.account_id", "acct", ID, False, None, None),
        ("bank.transfers.account_ref", "acct", ID, False, None, eq),
        ("bank.transfers.account_ref", "holder_hash", TR, True, "SHA2(account_ref, 256)", None),
        ("bank.accounts.account_id", "holder_hash", TR, True, "SHA2(account_id, 256)", eq),
    }
    # The equality adds no influence: the JOIN edges are the ones the ON condition always gave.
    assert {(str(e.source), e.subtype.value) for e in batch.column_edges if e.kind.value == I} == {
        ("bank.transfers.account_ref", "JOIN"), ("bank.accounts.account_id", "JOIN"),
    }
    # Edges stay in ColumnEdge.sort_key order (source first; the equality only breaks ties).
    assert list(batch.column_edges) == sorted(batch.column_edges, key=lambda e: e.sort_key())


def test_two_hops_across_two_statements_each_give_their_edges():
    batch = join_ingest(
        """
        INSERT INTO risk.holders SELECT t.account_ref AS holder, t.amount
        FROM bank.transfers t JOIN bank.accounts a ON t.account_ref = a.account_id;
        INSERT INTO risk.card_holders SELECT h.holder, c.card_no
        FROM risk.holders h JOIN bank.cards c ON h.holder = c.account_id;
        """
    )
    assert {(e.target_dataset, *rest) for e in batch.column_edges if e.kind.value == D
            for rest in [(str(e.source), e.target_column, e.join_equality)]} == {
        ("risk.holders", "bank.transfers.account_ref", "holder", None),
        ("risk.holders", "bank.accounts.account_id", "holder", "t.account_ref = a.account_id"),
        ("risk.holders", "bank.transfers.amount", "amount", None),
        ("risk.card_holders", "risk.holders.holder", "holder", None),
        ("risk.card_holders", "bank.cards.account_id", "holder", "h.holder = c.account_id"),
        ("risk.card_holders", "bank.cards.card_no", "card_no", None),
    }


def test_equality_inside_a_cte_makes_its_column_carry_both_sources():
    batch = join_ingest(
        """
        INSERT INTO risk.holders
        WITH joined AS (
            SELECT t.account_ref, a.iban FROM bank.transfers t JOIN bank.accounts a ON t.account_ref = a.account_id
        )
        SELECT lower(account_ref) AS holder, iban, count(account_ref) AS n FROM joined GROUP BY account_ref, iban
        """
    )
    eq = "t.account_ref = a.account_id"
    assert typed(batch) == {
        ("bank.transfers.account_ref", "holder", TR, False, "LOWER(account_ref)", None),
        ("bank.accounts.account_id", "holder", TR, False, "LOWER(account_id)", eq),
        ("bank.accounts.iban", "iban", ID, False, None, None),
        # An aggregate of the key is not the key: the equality is not carried into it.
        ("bank.transfers.account_ref", "n", AGG, False, None, None),
    }


def test_non_equi_and_outer_joins_and_functions_equate_nothing():
    for sql in (
        "SELECT t.account_ref FROM bank.transfers t JOIN bank.accounts a ON t.account_ref > a.account_id",
        "SELECT t.account_ref FROM bank.transfers t JOIN bank.accounts a ON t.account_ref LIKE a.account_id",
        "SELECT t.account_ref FROM bank.transfers t JOIN bank.accounts a ON t.account_ref <> a.account_id",
        "SELECT t.account_ref FROM bank.transfers t JOIN bank.accounts a ON lower(t.account_ref) = a.account_id",
        "SELECT t.account_ref FROM bank.transfers t JOIN bank.accounts a "
        "ON t.account_ref = a.account_id OR t.amount = 0",
        "SELECT t.account_ref FROM bank.transfers t LEFT JOIN bank.accounts a ON t.account_ref = a.account_id",
        "SELECT t.account_ref FROM bank.transfers t RIGHT JOIN bank.accounts a ON t.account_ref = a.account_id",
        "SELECT t.account_ref FROM bank.transfers t FULL JOIN bank.accounts a ON t.account_ref = a.account_id",
    ):
        batch = join_ingest(f"INSERT INTO risk.holders {sql}")
        assert typed(batch) == {("bank.transfers.account_ref", "account_ref", ID, False, None, None)}, sql


def test_where_equality_of_a_comma_join_and_its_transitive_closure():
    batch = join_ingest(
        """
        INSERT INTO risk.holders
        SELECT t.account_ref AS holder, c.card_no
        FROM bank.transfers t, bank.accounts a, bank.cards c
        WHERE t.account_ref = a.account_id AND a.account_id = c.account_id AND t.amount > 100
        """
    )
    assert typed(batch) == {
        ("bank.transfers.account_ref", "holder", ID, False, None, None),
        ("bank.accounts.account_id", "holder", ID, False, None, "t.account_ref = a.account_id"),
        ("bank.cards.account_id", "holder", ID, False, None,
         "t.account_ref = a.account_id AND a.account_id = c.account_id"),
        ("bank.cards.card_no", "card_no", ID, False, None, None),
    }
    # A WHERE equality rejects NULLs, so it counts after a LEFT JOIN too.
    left = join_ingest(
        "INSERT INTO risk.holders SELECT t.account_ref FROM bank.transfers t "
        "LEFT JOIN bank.accounts a ON t.account_ref = a.account_id WHERE t.account_ref = a.account_id"
    )
    assert ("bank.accounts.account_id", "account_ref", ID, False, None, "t.account_ref = a.account_id") in typed(left)


def test_join_using_equates_both_sides():
    batch = join_ingest(
        "INSERT INTO risk.cards SELECT c.account_id AS acct, account_id, a.iban "
        "FROM bank.cards c JOIN bank.accounts a USING (account_id)"
    )
    assert typed(batch) == {
        ("bank.cards.account_id", "acct", ID, False, None, None),
        ("bank.accounts.account_id", "acct", ID, False, None, "c.account_id = a.account_id"),
        # The merged USING column has both sides plainly: no equality edge repeats them.
        ("bank.cards.account_id", "account_id", ID, False, None, None),
        ("bank.accounts.account_id", "account_id", ID, False, None, None),
        ("bank.accounts.iban", "iban", ID, False, None, None),
    }
    left = join_ingest("INSERT INTO risk.cards SELECT c.account_id FROM bank.cards c LEFT JOIN bank.accounts a USING (account_id)")
    assert typed(left) == {("bank.cards.account_id", "account_id", ID, False, None, None)}


def test_self_join_equality_repeats_nothing():
    batch = join_ingest(
        "INSERT INTO risk.pairs SELECT x.account_ref, y.amount FROM bank.transfers x "
        "JOIN bank.transfers y ON x.account_ref = y.account_ref"
    )
    assert typed(batch) == {
        ("bank.transfers.account_ref", "account_ref", ID, False, None, None),
        ("bank.transfers.amount", "amount", ID, False, None, None),
    }
