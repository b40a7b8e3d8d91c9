-- Hashed identifiers (Iceberg, merge-on-read) for the marketing clean room.
-- The hash inputs are normalised first, so a key is only found by recomputing the same expression.
INSERT INTO lake.analytics.user_hashes
WITH normalised AS (
    SELECT user_id,
           lower(trim(phone)) AS phone_norm,
           amount,
           dt
    FROM lake.prod.payments
),
hashed AS (
    SELECT sha2(CAST(user_id AS STRING), 256) AS user_hash,
           sha2(phone_norm, 256) AS phone_hash,
           amount,
           dt
    FROM normalised
)
SELECT user_hash,
       phone_hash,
       sum(amount) AS total_amount,
       max(dt) AS last_dt
FROM hashed
GROUP BY user_hash, phone_hash;
