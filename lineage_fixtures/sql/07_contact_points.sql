-- Every contact point we hold (Iceberg): PAN and phone UNIONed into one column.
INSERT OVERWRITE lake.risk.contact_points
SELECT pan AS contact, 'pan' AS contact_type, dt
FROM lake.prod.payments
WHERE pan IS NOT NULL
UNION ALL
SELECT phone, 'phone', dt
FROM lake.prod.payments
WHERE phone IS NOT NULL;
