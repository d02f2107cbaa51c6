"""Statistics for comparing runs: Student's t and the noncentral t (`student_t`), paired
seed statistics (`seeds`), the exact sign-flip test (`permutation`) and the expected best
score of n trials (`expected_max`)."""
