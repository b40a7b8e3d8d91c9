-- Each user's last ten payments of the quarter (Delta): chained CTEs and window functions.
CREATE OR REPLACE TABLE analytics.last_payments USING delta AS
WITH recent AS (
    SELECT user_id, merchant_id, amount, dt
    FROM lake.prod.payments
    WHERE dt >= date_sub(current_date(), 90)
),
ranked AS (
    SELECT user_id,
           merchant_id,
           amount,
           dt,
           row_number() OVER (PARTITION BY user_id ORDER BY dt DESC) AS rn,
           sum(amount) OVER (PARTITION BY user_id) AS user_total
    FROM recent
)
SELECT user_id, merchant_id, amount, dt, rn, user_total
FROM ranked
WHERE rn <= 10;
