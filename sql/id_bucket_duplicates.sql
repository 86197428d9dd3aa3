-- id_bucket_duplicates: one row per id (among those whose hash falls in bucket $bucket of $n_buckets) that
-- occurs more than once in the union of all partitions of one input, with its number of occurrences
-- (at most $max_rows rows). A worker thus holds one bucket's distinct ids, never all of them.
with ids as (

    select id from ids
    where hash(id) % $n_buckets = $bucket

),

final as (

    select
        id,
        count(*) as occurrences
    from ids
    group by id
    having count(*) > 1
    order by occurrences desc, id
    limit $max_rows

)

select * from final
