-- Customer transactions (Delta): renamed a second time, customer_id -> cust.
CREATE OR REPLACE TABLE analytics.customer_txn USING delta AS
SELECT customer_id AS cust,
       amount,
       city,
       dt
FROM lake.prod.payments_enriched;
