"""Individual fairness (issue 15): AIF360's consistency over k nearest neighbours, counterfactual flips."""

from fairgate.engine.individual.assess import IndividualInputs, IndividualResult, assess_individual
from fairgate.engine.individual.consistency import GroupConsistency, consistency_score, disagreements
from fairgate.engine.individual.counterfactual import GroupFlips
from fairgate.engine.individual.levels import LevelFamily

__all__ = [
    "GroupConsistency",
    "GroupFlips",
    "IndividualInputs",
    "IndividualResult",
    "LevelFamily",
    "assess_individual",
    "consistency_score",
    "disagreements",
]
