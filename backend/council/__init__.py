"""Council: several characters deliberate on a proposal and leave a decision record."""
