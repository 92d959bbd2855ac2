-- Spend in more than one currency, and reports kandev would not count
-- (issue 37, ADR 0075). A task's sums stay in the currency first
-- reported (currency, tree_currency); what came in any other is kept
-- apart, never added across currencies: other_costs and tree_other_costs
-- are "EUR=10000;GBP=5" (millionths, by currency code), '' for none.
-- spend_fault is why the task's tree is held for a person although its
-- budget (if any) was not spent: an implausible report, with its raw
-- figures, or a cost in a currency its budget's has no rate from. ''
-- for none; a person's budget change clears it.
ALTER TABLE task_usage ADD COLUMN other_costs TEXT NOT NULL DEFAULT '';
ALTER TABLE task_usage ADD COLUMN tree_other_costs TEXT NOT NULL DEFAULT '';
ALTER TABLE task_usage ADD COLUMN spend_fault TEXT NOT NULL DEFAULT '';
