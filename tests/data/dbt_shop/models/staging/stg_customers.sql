select
    customer_id,
    lower(trim(email)) as email,
    full_name,
    signup_date
from {{ source('raw', 'customers') }}
