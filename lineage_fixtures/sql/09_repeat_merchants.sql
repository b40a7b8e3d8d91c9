-- Merchants with repeat customers (plain Parquet): the user id is only a join key here.
INSERT OVERWRITE TABLE analytics.repeat_merchants
SELECT p.merchant_id,
       count(*) AS repeat_txns,
       sum(p.amount) AS repeat_amount
FROM lake.prod.payments AS p
JOIN lake.analytics.user_monthly_spend AS s
  ON p.user_id = s.user_id AND s.txn_count > 1
GROUP BY p.merchant_id;
