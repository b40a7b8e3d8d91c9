-- Risk scores per customer (Delta), then MERGEd back into the enriched payments: a cycle.
CREATE OR REPLACE TABLE analytics.user_risk USING delta AS
SELECT customer_id,
       CASE WHEN sum(amount) > 100000 THEN 0.9
            WHEN count(*) > 50 THEN 0.6
            ELSE 0.1 END AS risk_score,
       max(dt) AS scored_on
FROM lake.prod.payments_enriched
GROUP BY customer_id;

MERGE INTO lake.prod.payments_enriched AS t
USING analytics.user_risk AS s
ON t.customer_id = s.customer_id
WHEN MATCHED THEN UPDATE SET t.risk_score = s.risk_score;
