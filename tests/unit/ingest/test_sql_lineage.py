"""SQL lineage: one test per construct, each with its exact set of typed edges."""

from __future__ import annotations

from pathlib import Path

from piitracer.ingest.sql.lineage import ingest_sql_paths, ingest_sql_text
from piitracer.model.lineage import (
    DatasetRelation,
    LineageBatch,
    Origin,
    OriginKind,
    ProblemSeverity,
)
from piitracer.model.naming import DatasetNamer
from sql_edges import AGG, D, I, ID, TR, edges


SCHEMAS = {
    "prod.payments": ["user_id", "pan", "phone", "email", "amount", "merchant_id", "dt"],
    "prod.merchants": ["merchant_id", "merchant_name", "city"],
    "prod.users": ["user_id", "email", "phone", "country"],
    "prod.payments_enriched": ["customer_id", "pan", "amount", "merchant_id", "risk_score", "dt"],
    "analytics.spend": ["user_id", "total", "dt"],
}


def ingest(sql: str, schemas: dict | None = None, file: str = "job.sql") -> LineageBatch:
    return ingest_sql_text(sql, file=file, namer=DatasetNamer(), schemas=SCHEMAS if schemas is None else schemas)


def no_problems(batch: LineageBatch) -> None:
    assert batch.problems == (), [str(p) for p in batch.problems]


# ---- statements -----------------------------------------------------------------------------------


def test_insert_into_select():
    batch = ingest(
        """
        INSERT INTO analytics.contacts
        SELECT user_id, upper(email) AS email_upper, amount
        FROM prod.payments
        """
    )
    no_problems(batch)
    t = "analytics.contacts"
    assert edges(batch) == {
        ("prod.payments.user_id", t, "user_id", D, ID, False, None),
        ("prod.payments.email", t, "email_upper", D, TR, False, "UPPER(email)"),
        ("prod.payments.amount", t, "amount", D, ID, False, None),
    }
    [flow] = batch.dataset_edges
    assert (flow.source, flow.target, flow.relation) == ("prod.payments", t, DatasetRelation.FLOW)
    assert flow.origin == Origin(kind=OriginKind.SQL, file="job.sql", line=2)
    [facts] = batch.datasets
    assert (facts.dataset, facts.columns) == (t, ("user_id", "email_upper", "amount"))
    assert batch.units_read == 1


def test_insert_overwrite_static_partition_maps_onto_the_schema_without_the_partition():
    batch = ingest(
        """
        INSERT OVERWRITE TABLE analytics.spend PARTITION (dt = '2024-01-01')
        SELECT user_id, sum(amount) FROM prod.payments WHERE dt = '2024-01-01' GROUP BY user_id
        """
    )
    no_problems(batch)
    t = "analytics.spend"
    assert edges(batch) == {
        ("prod.payments.user_id", t, "user_id", D, ID, False, None),
        ("prod.payments.amount", t, "total", D, AGG, False, None),
        ("prod.payments.dt", t, None, I, "FILTER", False, None),
        ("prod.payments.user_id", t, None, I, "GROUP_BY", False, None),
    }
    assert batch.datasets[0].columns == ("user_id", "total", "dt")


def test_insert_overwrite_dynamic_partition_is_the_last_query_column():
    batch = ingest(
        """
        INSERT OVERWRITE analytics.spend PARTITION (dt)
        SELECT user_id, amount * 2, date_format(dt, 'yyyy-MM') FROM prod.payments
        """
    )
    no_problems(batch)
    t = "analytics.spend"
    assert edges(batch) == {
        ("prod.payments.user_id", t, "user_id", D, ID, False, None),
        ("prod.payments.amount", t, "total", D, TR, False, "amount * 2"),
        ("prod.payments.dt", t, "dt", D, TR, False, "DATE_FORMAT(dt, 'yyyy-MM')"),
    }


def test_insert_dynamic_partition_without_a_known_schema_takes_the_partition_name():
    batch = ingest("INSERT OVERWRITE lake.daily PARTITION (day) SELECT user_id, dt FROM prod.payments")
    no_problems(batch)
    assert edges(batch) == {
        ("prod.payments.user_id", "lake.daily", "user_id", D, ID, False, None),
        ("prod.payments.dt", "lake.daily", "day", D, ID, False, None),
    }


def test_insert_with_explicit_column_list():
    batch = ingest("INSERT INTO analytics.spend (total, user_id) SELECT amount, user_id FROM prod.payments")
    no_problems(batch)
    t = "analytics.spend"
    assert edges(batch) == {
        ("prod.payments.amount", t, "total", D, ID, False, None),
        ("prod.payments.user_id", t, "user_id", D, ID, False, None),
    }


def test_insert_column_count_mismatch_warns_and_maps_by_query_names():
    batch = ingest("INSERT INTO analytics.spend SELECT user_id, amount FROM prod.payments")
    assert edges(batch) == {
        ("prod.payments.user_id", "analytics.spend", "user_id", D, ID, False, None),
        ("prod.payments.amount", "analytics.spend", "amount", D, ID, False, None),
    }
    [problem] = batch.problems
    assert problem.severity is ProblemSeverity.WARNING
    assert "analytics.spend" in problem.reason and "2 columns" in problem.reason


def test_ctas():
    batch = ingest(
        """
        CREATE OR REPLACE TABLE lake.analytics.customer_txn USING delta PARTITIONED BY (dt) AS
        SELECT customer_id AS cust, cast(amount AS DECIMAL(10, 2)) AS amount, dt
        FROM prod.payments_enriched
        """
    )
    no_problems(batch)
    t = "lake.analytics.customer_txn"
    assert edges(batch) == {
        ("prod.payments_enriched.customer_id", t, "cust", D, ID, False, None),
        ("prod.payments_enriched.amount", t, "amount", D, TR, False, "CAST(amount AS DECIMAL(10, 2))"),
        ("prod.payments_enriched.dt", t, "dt", D, ID, False, None),
    }
    assert batch.datasets[0].columns == ("cust", "amount", "dt")


def test_create_view():
    batch = ingest(
        """
        CREATE OR REPLACE VIEW analytics.v_recent AS
        SELECT user_id, amount FROM prod.payments WHERE dt >= date_sub(current_date(), 30)
        """
    )
    no_problems(batch)
    t = "analytics.v_recent"
    assert edges(batch) == {
        ("prod.payments.user_id", t, "user_id", D, ID, False, None),
        ("prod.payments.amount", t, "amount", D, ID, False, None),
        ("prod.payments.dt", t, None, I, "FILTER", False, None),
    }


def test_merge_into_update_insert_on_join_and_when_condition():
    batch = ingest(
        """
        MERGE INTO prod.payments_enriched AS t
        USING (SELECT user_id, pan, amount, dt FROM prod.payments WHERE amount > 0) AS s
        ON t.customer_id = s.user_id AND t.dt = s.dt
        WHEN MATCHED AND s.pan IS NOT NULL THEN UPDATE SET t.pan = s.pan, amount = s.amount * 100
        WHEN MATCHED THEN DELETE
        WHEN NOT MATCHED THEN INSERT (customer_id, pan, dt) VALUES (s.user_id, sha2(s.pan, 256), dt)
        """
    )
    no_problems(batch)
    t = "prod.payments_enriched"
    assert edges(batch) == {
        ("prod.payments.pan", t, "pan", D, ID, False, None),
        ("prod.payments.amount", t, "amount", D, TR, False, "amount * 100"),
        ("prod.payments.user_id", t, "customer_id", D, ID, False, None),
        ("prod.payments.pan", t, "pan", D, TR, True, "SHA2(pan, 256)"),
        ("prod.payments.dt", t, "dt", D, ID, False, None),
        ("prod.payments.user_id", t, None, I, "JOIN", False, None),
        ("prod.payments.dt", t, None, I, "JOIN", False, None),
        ("prod.payments.pan", t, None, I, "CONDITIONAL", False, None),
        ("prod.payments.amount", t, None, I, "FILTER", False, None),  # the USING subquery's WHERE
    }
    assert [(e.source, e.target) for e in batch.dataset_edges] == [("prod.payments", t)]


def test_merge_star_actions_map_by_name():
    schemas = {"db.target": ["id", "email"], "db.updates": ["id", "email", "op"]}
    batch = ingest(
        """
        MERGE INTO db.target USING db.updates AS u ON target.id = u.id
        WHEN MATCHED AND u.op = 'U' THEN UPDATE SET *
        WHEN NOT MATCHED THEN INSERT *
        """,
        schemas,
    )
    no_problems(batch)
    assert edges(batch) == {
        ("db.updates.id", "db.target", "id", D, ID, False, None),
        ("db.updates.email", "db.target", "email", D, ID, False, None),
        ("db.updates.id", "db.target", None, I, "JOIN", False, None),
        ("db.updates.op", "db.target", None, I, "CONDITIONAL", False, None),
    }


# ---- queries ------------------------------------------------------------------------------------


def test_chained_ctes_compose_the_expression_and_masking():
    batch = ingest(
        """
        INSERT INTO analytics.hashes
        WITH normalised AS (
            SELECT p.user_id, lower(trim(p.email)) AS e FROM prod.payments AS p
        ),
        hashed AS (
            SELECT user_id, sha2(e, 256) AS h FROM normalised
        )
        SELECT user_id AS uid, h FROM hashed
        """
    )
    no_problems(batch)
    t = "analytics.hashes"
    assert edges(batch) == {
        ("prod.payments.user_id", t, "uid", D, ID, False, None),
        ("prod.payments.email", t, "h", D, TR, True, "SHA2(LOWER(TRIM(email)), 256)"),
    }


def test_subquery_in_from():
    batch = ingest(
        """
        INSERT INTO analytics.big_spenders
        SELECT x.uid, x.total * 100 AS cents
        FROM (SELECT user_id AS uid, sum(amount) AS total FROM prod.payments GROUP BY user_id) AS x
        WHERE x.total > 1000
        """
    )
    no_problems(batch)
    t = "analytics.big_spenders"
    assert edges(batch) == {
        ("prod.payments.user_id", t, "uid", D, ID, False, None),
        ("prod.payments.amount", t, "cents", D, AGG, False, None),
        ("prod.payments.user_id", t, None, I, "GROUP_BY", False, None),
        ("prod.payments.amount", t, None, I, "FILTER", False, None),
    }


def test_union_all_maps_columns_by_position_with_names_from_the_first_branch():
    batch = ingest(
        """
        INSERT OVERWRITE lake.risk.contact_points
        SELECT pan AS contact, 'pan' AS contact_type FROM prod.payments WHERE pan IS NOT NULL
        UNION ALL
        SELECT lower(email), 'email' FROM prod.users
        """
    )
    no_problems(batch)
    t = "lake.risk.contact_points"
    assert edges(batch) == {
        ("prod.payments.pan", t, "contact", D, ID, False, None),
        ("prod.users.email", t, "contact", D, TR, False, "LOWER(email)"),
        ("prod.payments.pan", t, None, I, "FILTER", False, None),
    }
    assert batch.datasets[0].columns == ("contact", "contact_type")
    assert {e.source for e in batch.dataset_edges} == {"prod.payments", "prod.users"}


def test_join_with_aliases():
    batch = ingest(
        """
        INSERT INTO analytics.enriched
        SELECT p.user_id, m.merchant_name, u.country
        FROM prod.payments AS p
        JOIN prod.merchants m ON p.merchant_id = m.merchant_id
        LEFT JOIN prod.users AS u ON u.user_id = p.user_id
        """
    )
    no_problems(batch)
    t = "analytics.enriched"
    assert edges(batch) == {
        ("prod.payments.user_id", t, "user_id", D, ID, False, None),
        ("prod.merchants.merchant_name", t, "merchant_name", D, ID, False, None),
        ("prod.users.country", t, "country", D, ID, False, None),
        ("prod.payments.merchant_id", t, None, I, "JOIN", False, None),
        ("prod.merchants.merchant_id", t, None, I, "JOIN", False, None),
        ("prod.users.user_id", t, None, I, "JOIN", False, None),
        ("prod.payments.user_id", t, None, I, "JOIN", False, None),
    }


def test_unqualified_column_resolved_through_the_schemas():
    batch = ingest(
        "INSERT INTO a.b SELECT merchant_name, amount FROM prod.payments p JOIN prod.merchants m USING (merchant_id)"
    )
    no_problems(batch)
    assert edges(batch) == {
        ("prod.merchants.merchant_name", "a.b", "merchant_name", D, ID, False, None),
        ("prod.payments.amount", "a.b", "amount", D, ID, False, None),
        ("prod.payments.merchant_id", "a.b", None, I, "JOIN", False, None),
        ("prod.merchants.merchant_id", "a.b", None, I, "JOIN", False, None),
    }


def test_ambiguous_unqualified_column_is_a_warning_and_only_it_is_skipped():
    batch = ingest("INSERT INTO a.b SELECT user_id, country FROM prod.payments p JOIN prod.users u ON p.pan = u.phone")
    assert edges(batch) == {
        ("prod.users.country", "a.b", "country", D, ID, False, None),
        ("prod.payments.pan", "a.b", None, I, "JOIN", False, None),
        ("prod.users.phone", "a.b", None, I, "JOIN", False, None),
    }
    [problem] = batch.problems
    assert problem.severity is ProblemSeverity.WARNING and "user_id" in problem.reason


def test_window_functions():
    batch = ingest(
        """
        CREATE TABLE analytics.ranked AS
        SELECT user_id,
               row_number() OVER (PARTITION BY user_id ORDER BY dt DESC) AS rn,
               sum(amount) OVER (PARTITION BY merchant_id) AS merchant_total,
               lag(pan) OVER (PARTITION BY user_id ORDER BY dt) AS previous_pan
        FROM prod.payments
        """
    )
    no_problems(batch)
    t = "analytics.ranked"
    assert edges(batch) == {
        ("prod.payments.user_id", t, "user_id", D, ID, False, None),
        # A ranking's influences carry it as text (a plan says why it is not an identifier).
        ("prod.payments.user_id", t, "rn", I, "WINDOW", False, "ROW_NUMBER() OVER (PARTITION BY user_id ORDER BY dt DESC)"),
        ("prod.payments.dt", t, "rn", I, "WINDOW", False, "ROW_NUMBER() OVER (PARTITION BY user_id ORDER BY dt DESC)"),
        ("prod.payments.amount", t, "merchant_total", D, AGG, False, None),
        ("prod.payments.merchant_id", t, "merchant_total", I, "WINDOW", False, None),
        # A value of another row: a transformation, but not a per-row expression.
        ("prod.payments.pan", t, "previous_pan", D, TR, False, None),
        ("prod.payments.user_id", t, "previous_pan", I, "WINDOW", False, None),
        ("prod.payments.dt", t, "previous_pan", I, "WINDOW", False, None),
    }


def test_case_and_if():
    batch = ingest(
        """
        INSERT INTO analytics.masked
        SELECT CASE WHEN country = 'IN' THEN md5(phone) ELSE email END AS contact,
               IF(user_id IS NULL, 'anon', 'known') AS kind,
               concat(email, '-', rand()) AS salted
        FROM prod.users
        """
    )
    no_problems(batch)
    t = "analytics.masked"
    case = "CASE WHEN country = 'IN' THEN MD5(phone) ELSE email END"
    assert edges(batch) == {
        ("prod.users.country", t, "contact", I, "CONDITIONAL", False, None),
        ("prod.users.phone", t, "contact", D, TR, True, case),
        ("prod.users.email", t, "contact", D, TR, False, case),
        ("prod.users.user_id", t, "kind", I, "CONDITIONAL", False, None),
        ("prod.users.email", t, "salted", D, TR, False, None),  # rand(): not row-deterministic
    }


def test_group_by_aggregate():
    batch = ingest(
        """
        INSERT OVERWRITE TABLE risk.card_usage
        SELECT pan, count(*) AS txn_count, count(DISTINCT user_id) AS users, max(dt) AS last_seen
        FROM prod.payments
        GROUP BY pan
        HAVING sum(amount) > 10
        ORDER BY txn_count DESC
        """
    )
    no_problems(batch)
    t = "risk.card_usage"
    assert edges(batch) == {
        ("prod.payments.pan", t, "pan", D, ID, False, None),
        ("prod.payments.user_id", t, "users", D, AGG, False, None),
        ("prod.payments.dt", t, "last_seen", D, AGG, False, None),
        ("prod.payments.pan", t, None, I, "GROUP_BY", False, None),
        ("prod.payments.amount", t, None, I, "FILTER", False, None),
    }


def test_select_star_expanded_from_the_schemas():
    batch = ingest("INSERT INTO bronze.merchants_copy SELECT * FROM prod.merchants WHERE city = 'Pune'")
    no_problems(batch)
    t = "bronze.merchants_copy"
    assert edges(batch) == {
        ("prod.merchants.merchant_id", t, "merchant_id", D, ID, False, None),
        ("prod.merchants.merchant_name", t, "merchant_name", D, ID, False, None),
        ("prod.merchants.city", t, "city", D, ID, False, None),
        ("prod.merchants.city", t, None, I, "FILTER", False, None),
    }
    assert batch.datasets[0].columns == ("merchant_id", "merchant_name", "city")


def test_qualified_star_expands_one_source():
    batch = ingest(
        """
        INSERT INTO analytics.merchant_payments
        SELECT m.*, p.amount
        FROM prod.payments p JOIN prod.merchants m ON p.merchant_id = m.merchant_id
        """
    )
    no_problems(batch)
    t = "analytics.merchant_payments"
    assert edges(batch) == {
        ("prod.merchants.merchant_id", t, "merchant_id", D, ID, False, None),
        ("prod.merchants.merchant_name", t, "merchant_name", D, ID, False, None),
        ("prod.merchants.city", t, "city", D, ID, False, None),
        ("prod.payments.amount", t, "amount", D, ID, False, None),
        ("prod.payments.merchant_id", t, None, I, "JOIN", False, None),
        ("prod.merchants.merchant_id", t, None, I, "JOIN", False, None),
    }


def test_star_of_a_table_without_schema_is_a_warning():
    batch = ingest("INSERT INTO a.copy SELECT * FROM prod.unknown_table")
    assert edges(batch) == set()
    [problem] = batch.problems
    assert problem.severity is ProblemSeverity.WARNING
    assert "prod.unknown_table" in problem.reason
    assert problem.origin == Origin(kind=OriginKind.SQL, file="job.sql", line=1)


def test_in_subquery_filters_on_both_sides():
    batch = ingest(
        """
        INSERT INTO a.b SELECT amount FROM prod.payments
        WHERE user_id IN (SELECT user_id FROM prod.users WHERE country = 'IN')
        """
    )
    no_problems(batch)
    assert edges(batch) == {
        ("prod.payments.amount", "a.b", "amount", D, ID, False, None),
        ("prod.payments.user_id", "a.b", None, I, "FILTER", False, None),
        ("prod.users.user_id", "a.b", None, I, "FILTER", False, None),
        ("prod.users.country", "a.b", None, I, "FILTER", False, None),
    }


def test_cte_column_in_outer_where_filters_on_its_base_columns():
    batch = ingest(
        """
        INSERT INTO a.b
        WITH ranked AS (SELECT user_id, row_number() OVER (PARTITION BY user_id ORDER BY dt) AS rn FROM prod.payments)
        SELECT user_id FROM ranked WHERE rn = 1
        """
    )
    no_problems(batch)
    assert edges(batch) == {
        ("prod.payments.user_id", "a.b", "user_id", D, ID, False, None),
        ("prod.payments.user_id", "a.b", None, I, "FILTER", False, None),
        ("prod.payments.dt", "a.b", None, I, "FILTER", False, None),
    }


# ---- files ----------------------------------------------------------------------------------------


def test_several_statements_per_file_have_their_own_lines():
    sql = (
        "-- two jobs\n"
        "INSERT INTO a.first SELECT user_id FROM prod.payments;\n"
        "\n"
        "INSERT INTO a.second\n"
        "SELECT email FROM prod.users; INSERT INTO a.third SELECT pan FROM prod.payments;\n"
    )
    batch = ingest(sql)
    no_problems(batch)
    lines = {(e.target_dataset, e.origin.line) for e in batch.column_edges}
    assert lines == {("a.first", 2), ("a.second", 4), ("a.third", 5)}
    assert batch.units_read == 3


def test_temp_view_is_seen_through():
    batch = ingest(
        """
        CREATE OR REPLACE TEMPORARY VIEW recent AS
        SELECT user_id, lower(email) AS e FROM prod.users WHERE country = 'IN';

        INSERT INTO analytics.recent_hashes SELECT user_id, md5(e) AS h FROM recent;
        """
    )
    no_problems(batch)
    t = "analytics.recent_hashes"
    assert edges(batch) == {
        ("prod.users.user_id", t, "user_id", D, ID, False, None),
        ("prod.users.email", t, "h", D, TR, True, "MD5(LOWER(email))"),
        ("prod.users.country", t, None, I, "FILTER", False, None),
    }
    assert {d.dataset for d in batch.datasets} == {t}  # the temp view is no dataset
    assert [(e.source, e.target) for e in batch.dataset_edges] == [("prod.users", t)]


def test_use_changes_the_default_database_for_the_rest_of_the_file():
    batch = ingest(
        """
        INSERT INTO before SELECT user_id FROM prod.payments;
        USE analytics;
        INSERT INTO after SELECT user_id FROM prod.payments;
        INSERT INTO other.t SELECT id FROM source;
        """,
        schemas={},
    )
    no_problems(batch)
    assert edges(batch) == {
        ("prod.payments.user_id", "default.before", "user_id", D, ID, False, None),
        ("prod.payments.user_id", "analytics.after", "user_id", D, ID, False, None),
        ("analytics.source.id", "other.t", "id", D, ID, False, None),
    }


def test_broken_statement_between_two_good_ones():
    sql = (
        "INSERT INTO a.first SELECT user_id FROM prod.payments;\n"
        "\n"
        "INSERT INTO a.broken SELECT FROM WHERE (;\n"
        "INSERT INTO a.last SELECT pan FROM prod.payments;\n"
    )
    batch = ingest(sql)
    assert {e.target_dataset for e in batch.column_edges} == {"a.first", "a.last"}
    [problem] = batch.problems
    assert problem.severity is ProblemSeverity.ERROR
    assert problem.origin == Origin(kind=OriginKind.SQL, file="job.sql", line=3)
    assert "\n" not in problem.reason and problem.reason.startswith("cannot parse")
    assert batch.units_read == 3


def test_untokenizable_text_falls_back_to_line_splitting():
    sql = (
        "INSERT INTO a.first SELECT user_id FROM prod.payments;\n"
        "INSERT INTO a.broken SELECT 'unterminated FROM prod.payments;\n"
        "INSERT INTO a.last\n"
        "SELECT pan FROM prod.payments;\n"
    )
    batch = ingest(sql)
    assert {(e.target_dataset, e.origin.line) for e in batch.column_edges} == {("a.first", 1), ("a.last", 3)}
    [problem] = batch.problems
    assert (problem.severity, problem.origin.line) == (ProblemSeverity.ERROR, 2)
    assert batch.units_read == 3


def test_statements_without_lineage_produce_no_edges_and_writes_say_why():
    batch = ingest(
        """
        CREATE TABLE a.t (x INT);
        DROP TABLE a.old;
        ALTER TABLE a.t ADD COLUMNS (y INT);
        SET spark.sql.shuffle.partitions = 10;
        DELETE FROM prod.users WHERE user_id = 1;
        UPDATE prod.users SET email = NULL WHERE user_id = 1;
        INSERT INTO a.t VALUES (1);
        SELECT * FROM prod.users;
        """
    )
    assert (batch.column_edges, batch.dataset_edges, batch.units_read) == ((), (), 8)
    # Nothing is lost, so these are info lines; a statement that writes always says why it has no lineage.
    assert [(p.origin.line, p.severity, p.reason) for p in batch.problems] == [
        (6, ProblemSeverity.INFO, "DELETE from prod.users: no column lineage (it reads no other table)"),
        (7, ProblemSeverity.INFO, "UPDATE of prod.users: no column lineage (it reads no other table)"),
        (8, ProblemSeverity.INFO, "INSERT of constant VALUES into a.t: no column lineage (it reads no other table)"),
        (9, ProblemSeverity.INFO, "SELECT without a target table: no lineage"),
    ]


def test_targets_teach_schemas_to_later_statements_without_touching_the_callers():
    schemas = {"prod.users": ["user_id", "email"]}
    batch = ingest(
        """
        CREATE TABLE a.staging AS SELECT user_id AS id, email FROM prod.users;
        INSERT INTO a.final SELECT * FROM a.staging;
        CREATE TABLE a.typed (k BIGINT, v STRING);
        INSERT INTO a.typed SELECT user_id, email FROM prod.users;
        """,
        schemas,
    )
    no_problems(batch)
    assert {(str(e.source), e.target_dataset, e.target_column) for e in batch.column_edges} == {
        ("prod.users.user_id", "a.staging", "id"),
        ("prod.users.email", "a.staging", "email"),
        ("a.staging.id", "a.final", "id"),
        ("a.staging.email", "a.final", "email"),
        ("prod.users.user_id", "a.typed", "k"),
        ("prod.users.email", "a.typed", "v"),
    }
    assert schemas == {"prod.users": ["user_id", "email"]}


def test_output_is_deterministic():
    sql = """
        INSERT INTO a.b
        WITH c AS (
            SELECT p.user_id, m.city, sha2(p.pan, 256) AS h
            FROM prod.payments p JOIN prod.merchants m USING (merchant_id)
        )
        SELECT user_id, city, h, count(*) AS n FROM c GROUP BY user_id, city, h;
        SELECT FROM WHERE;
        INSERT INTO a.c SELECT * FROM prod.nope, prod.nope_either;
        MERGE INTO prod.users u USING a.b s ON u.user_id = s.user_id WHEN MATCHED THEN UPDATE SET email = s.h;
    """
    first, second = ingest(sql), ingest(sql)
    assert first.model_dump_json() == second.model_dump_json()
    assert first.column_edges == tuple(sorted(first.column_edges, key=lambda e: e.sort_key()))
    assert len(first.problems) == 3 and first.units_read == 4


def test_except_lateral_view_and_a_stale_schema():
    batch = ingest(
        """
        INSERT INTO a.tags
        SELECT user_id, tag, nickname FROM prod.users LATERAL VIEW explode(split(email, '@')) t AS tag
        EXCEPT
        SELECT user_id, 'x', 'y' FROM prod.payments
        """
    )
    assert edges(batch) == {
        ("prod.users.user_id", "a.tags", "user_id", D, ID, False, None),
        ("prod.users.email", "a.tags", "tag", D, TR, False, None),  # a generator: no per-row expression
        ("prod.users.nickname", "a.tags", "nickname", D, ID, False, None),  # trusted, with a warning
        ("prod.payments.user_id", "a.tags", None, I, "FILTER", False, None),  # EXCEPT only removes rows
    }
    [problem] = batch.problems
    assert problem.severity is ProblemSeverity.WARNING and "nickname" in problem.reason


def test_ingest_paths_walks_folders_in_order_and_reports_unreadable_files(tmp_path: Path):
    jobs = tmp_path / "jobs"
    (jobs / "nested").mkdir(parents=True)
    (jobs / "b.sql").write_text("INSERT INTO a.from_b SELECT user_id FROM a.from_a;\n", encoding="utf-8")
    nested_sql = "\nCREATE TABLE a.from_a AS SELECT user_id FROM prod.users;\n"
    (jobs / "nested" / "a.sql").write_text(nested_sql, encoding="utf-8")
    (jobs / "notes.txt").write_text("not sql", encoding="utf-8")
    (jobs / "latin1.sql").write_bytes("SELECT 'caf\xe9';".encode("latin-1"))
    missing = tmp_path / "missing.sql"

    batch = ingest_sql_paths([jobs, missing], namer=DatasetNamer(), schemas={}, display_root=tmp_path)
    assert {(str(e.source), e.target_dataset, e.origin.file, e.origin.line) for e in batch.column_edges} == {
        ("prod.users.user_id", "a.from_a", "jobs/nested/a.sql", 2),
        ("a.from_a.user_id", "a.from_b", "jobs/b.sql", 1),
    }
    assert [(p.severity, p.origin.file) for p in batch.problems] == [
        (ProblemSeverity.ERROR, "jobs/latin1.sql"),
        (ProblemSeverity.ERROR, "missing.sql"),
    ]
    assert batch.units_read == 2


def test_ingest_paths_without_display_root_keeps_paths_as_given(tmp_path: Path):
    path = tmp_path / "job.sql"
    path.write_text("INSERT INTO a.b SELECT x FROM a.c", encoding="utf-8")
    batch = ingest_sql_paths([path], namer=DatasetNamer())
    assert {e.origin.file for e in batch.column_edges} == {str(path)}
