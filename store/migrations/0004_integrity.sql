-- A task cannot be its own parent: the row would satisfy its own foreign
-- key, so the schema says it outright (core refuses it first).
CREATE TRIGGER tasks_not_own_parent BEFORE INSERT ON tasks
WHEN NEW.parent_id = NEW.id
BEGIN
    SELECT RAISE(ABORT, 'a task cannot be its own parent');
END;
