-- every column of the seed: its CSV header (or catalog.json) says which
select * from {{ ref('customer_tiers') }}
