select
    c.customer_id,
    c.email,
    t.lifetime_value,
    t.order_count
from {{ ref('stg_customers') }} as c
join {{ ref('int_order_totals') }} as t on t.customer_id = c.customer_id
