-- every column of the source: catalog.json says which
select * from {{ source('raw', 'orders') }}
