-- demo_law_labels: one row per held-out law student (id): the first-year average actually reached (ZFYA).
with audited as (

    select * from law_audit

),

final as (

    select
        id,
        zfya as y_true
    from audited

)

select * from final
