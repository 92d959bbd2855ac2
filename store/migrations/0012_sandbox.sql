-- Where a task's agent runs (ADR 0048): none (the host), bwrap, docker or
-- podman. Fixed at creation like autopilot; a task from before sandboxes
-- ran on the host.
ALTER TABLE tasks ADD COLUMN sandbox TEXT NOT NULL DEFAULT 'none'
    CHECK (sandbox IN ('none', 'bwrap', 'docker', 'podman'));
CREATE TRIGGER tasks_sandbox_fixed BEFORE UPDATE OF sandbox ON tasks
WHEN NEW.sandbox IS NOT OLD.sandbox
BEGIN
    SELECT RAISE(ABORT, 'sandbox is fixed at creation');
END;
-- A child never runs less confined than its parent (none < bwrap < a
-- container), whatever wrote the row.
CREATE TRIGGER tasks_sandbox_child BEFORE INSERT ON tasks
WHEN NEW.parent_id IS NOT NULL AND EXISTS (SELECT 1 FROM tasks p WHERE p.id = NEW.parent_id
    AND (CASE NEW.sandbox WHEN 'none' THEN 0 WHEN 'bwrap' THEN 1 ELSE 2 END)
      < (CASE p.sandbox WHEN 'none' THEN 0 WHEN 'bwrap' THEN 1 ELSE 2 END))
BEGIN
    SELECT RAISE(ABORT, 'a child task cannot be less confined than its parent');
END;
-- A profile's sandbox for its new tasks, its container image, the paths a
-- confined agent of it may reach (JSON list), and no network.
ALTER TABLE profiles ADD COLUMN sandbox TEXT NOT NULL DEFAULT '';
ALTER TABLE profiles ADD COLUMN image TEXT NOT NULL DEFAULT '';
ALTER TABLE profiles ADD COLUMN paths TEXT NOT NULL DEFAULT '[]';
ALTER TABLE profiles ADD COLUMN no_network INTEGER NOT NULL DEFAULT 0 CHECK (no_network IN (0, 1));
