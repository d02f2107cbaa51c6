"""Planning a campaign: GPU-hours, days, cost and rental packages (`budget`); ablation
designs and their analysis (`design`); the cost to a published quality target at the
reader's prices (`target_cost`, from `time_to_target.json`)."""
