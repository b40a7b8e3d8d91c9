-- Card usage (plain Parquet): keyed by PAN only, no user id.
INSERT OVERWRITE TABLE risk.card_usage
SELECT pan,
       count(*) AS txn_count,
       sum(amount) AS total_amount,
       min(dt) AS first_seen,
       max(dt) AS last_seen
FROM lake.prod.payments
GROUP BY pan;
