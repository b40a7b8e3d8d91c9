select code, name from {{ source('raw', 'countries') }}
