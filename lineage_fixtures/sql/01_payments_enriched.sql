-- Enriched payments (Iceberg, copy-on-write): the subject key is renamed user_id -> customer_id.
INSERT OVERWRITE lake.prod.payments_enriched PARTITION (dt)
SELECT p.user_id AS customer_id,
       p.pan,
       p.amount,
       p.merchant_id,
       m.merchant_name,
       m.city,
       CAST(NULL AS DOUBLE) AS risk_score,
       p.dt
FROM lake.prod.payments AS p
JOIN lake.prod.merchants AS m ON p.merchant_id = m.merchant_id
WHERE p.amount > 0;
