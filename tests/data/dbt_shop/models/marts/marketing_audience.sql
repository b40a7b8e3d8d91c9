select md5(email) as email_hash, signup_date
from {{ ref('stg_customers') }}
where signup_date >= date '2026-01-01'
