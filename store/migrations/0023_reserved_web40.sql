-- Placeholder so issue 40's migration 0024 applies on its own branch
-- (migrations must be numbered without a gap). The lead deletes this
-- file when merging the branch that holds the real 0023.
SELECT 1;
