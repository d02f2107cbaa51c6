"""Statistics for comparing runs: Student's t and the noncentral t (`student_t`) and paired
seed statistics (`seeds`)."""
