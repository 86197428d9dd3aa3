-- stg_features: one row per row of the features input: id, and each feature column under an alias f0, f1, ...
-- (the policy's individual_fairness.features, in order), values as given.
with source as (

    select * from src_features

),

final as (

    select
        {{ id_column }} as id,
        {{ feature_columns }}
    from source

)

select * from final
