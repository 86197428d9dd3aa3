-- id_duplicates: one row per id value that is null or appears more than once in one staged input, with its
-- number of occurrences (at most $max_rows rows; duplicate_rows and duplicate_ids count them all).
-- Validation runs the id expectations on this table: an input with unique, present ids yields no rows.
with source as (

    select id from {{ relation }}

),

id_counts as (

    select
        id,
        count(*) as occurrences
    from source
    group by id
    having id is null or count(*) > 1

),

final as (

    select
        id,
        occurrences,
        sum(occurrences) over () as duplicate_rows,
        count(*) over () as duplicate_ids
    from id_counts
    limit $max_rows

)

select * from final
