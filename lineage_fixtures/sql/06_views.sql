-- A view over the source: it holds no bytes of its own.
CREATE OR REPLACE VIEW lake.analytics.v_recent_payments AS
SELECT user_id,
       amount,
       merchant_id,
       dt
FROM lake.prod.payments
WHERE dt >= date_sub(current_date(), 30);
