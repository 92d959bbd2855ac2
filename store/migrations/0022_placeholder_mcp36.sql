-- Placeholder on branch mcp36 only, holding number 0022 (given to another
-- change) so that 0023 applies in order. Delete it when the real 0022 is
-- merged.
SELECT 1;
