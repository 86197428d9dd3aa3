-- feature_profile: one row: per feature column (alias f0, f1, ...) its null count (nulls_f0, ...) and its count of
-- values that are not finite numbers (non_finite_f0, ...: NaN, infinity). Validation runs its expectations on
-- these counts, one scan whatever the row count.
with source as (

    select * from stg_features

),

final as (

    select
        {{ aggregates }}
    from source

)

select * from final
