-- partition_join: one row; how one partition's staged inputs match on id (ids are unique per input there,
-- validated before): the people with a prediction and a label, how many of them lack attributes, and how many
-- lack each sensitive attribute's value (a missing attributes row counts as missing, as in join_report).
with predictions as (

    select id from stg_predictions

),

labels as (

    select id from stg_labels

),

attributes as (

    select * from stg_attributes

),

final as (

    select
        count(*) as matched,
        count(*) filter (where attributes.id is null) as people_without_attributes,
        {{ missing_counts }}
    from predictions
    inner join labels on predictions.id = labels.id
    left join attributes on predictions.id = attributes.id

)

select * from final
