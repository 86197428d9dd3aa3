-- demo_law_attributes: one row per held-out law student (id): race and sex as the file records them.
with audited as (

    select * from law_audit

),

final as (

    select
        id,
        race,
        sex
    from audited

)

select * from final
