{{ config(materialized='ephemeral') }}
select customer_id, sum(amount) as lifetime_value, count(*) as order_count
from {{ ref('stg_orders') }}
group by customer_id
