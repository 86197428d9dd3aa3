-- id_coverage: one row: how many audited people have no row in a staged input (missing), how many of its rows
-- are not audited people (extra), and one example id of each, as text. Validation expects both counts to be 0
-- where the input must cover exactly the audited people.
with audited as (

    select id from audited_people

),

given as (

    select id from {{ relation }}

),

missing as (

    select audited.id from audited anti join given using (id)

),

extra as (

    select given.id from given anti join audited using (id)

),

final as (

    select
        (select count(*) from missing) as missing,
        (select cast(min(id) as varchar) from missing) as missing_example,
        (select count(*) from extra) as extra,
        (select cast(min(id) as varchar) from extra) as extra_example

)

select * from final
