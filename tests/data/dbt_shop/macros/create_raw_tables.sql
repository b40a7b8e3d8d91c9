{% macro create_raw_tables() %}
create schema if not exists raw;
create or replace table raw.customers (customer_id bigint, email varchar, full_name varchar, signup_date date);
insert into raw.customers values (1, 'ana@example.com', 'Ana', '2026-01-02'), (2, 'raj@example.com', 'Raj', '2026-02-03');
create or replace table raw.orders (order_id bigint, customer_id bigint, amount decimal(12,2), ordered_at timestamp);
insert into raw.orders values (10, 1, 12.50, '2026-03-01 10:00:00'), (11, 2, 7.25, '2026-03-02 11:00:00');
create or replace table raw.countries (code varchar, name varchar);
{% endmacro %}
