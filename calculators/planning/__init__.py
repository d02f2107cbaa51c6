"""Planning a campaign: GPU-hours, days, cost and rental packages (`budget`)."""
