-- a SELECT * chain: seed -> stg_customer_tiers -> here
select * from {{ ref('stg_customer_tiers') }}
where tier = 'gold'
