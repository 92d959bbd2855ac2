-- A task's workspace (issue 11): 'worktree' when it owns a git worktree,
-- 'inherit' when it works in its parent's, 'shared' when it runs in its
-- directory as it is (every task before this migration). repo_root is the
-- main checkout, worktree_dir the worktree, branch the task's branch and
-- base_commit the commit that branch started from (what diff compares with).
ALTER TABLE tasks ADD COLUMN workspace TEXT NOT NULL DEFAULT 'shared';
ALTER TABLE tasks ADD COLUMN repo_root TEXT NOT NULL DEFAULT '';
ALTER TABLE tasks ADD COLUMN worktree_dir TEXT NOT NULL DEFAULT '';
ALTER TABLE tasks ADD COLUMN branch TEXT NOT NULL DEFAULT '';
ALTER TABLE tasks ADD COLUMN base_commit TEXT NOT NULL DEFAULT '';
