-- Two aggregates in one file: one without a per-user key, one grouped by user.
USE lake.analytics;

INSERT OVERWRITE daily_revenue
SELECT dt,
       sum(amount) AS revenue,
       count(DISTINCT user_id) AS active_users
FROM lake.prod.payments
GROUP BY dt;

INSERT OVERWRITE user_monthly_spend
SELECT user_id,
       date_trunc('MONTH', dt) AS month,
       sum(amount) AS spend,
       count(*) AS txn_count
FROM lake.prod.payments
GROUP BY user_id, date_trunc('MONTH', dt);
