package core

// WorkDir is the directory a task's agent works in, where a person steps
// in (kandev task shell, task path; the TUI's shell and editor keys): its
// worktree, its parent's worktree, or its shared directory. A task whose
// worktree was discarded, or removed when it was archived done, has none,
// and the error says why.
func (t Task) WorkDir() (string, error) {
	if ws := t.Workspace; ws != nil {
		switch ws.Mode {
		case WorkspaceDiscarded:
			return "", Errorf(CodeConflict, "task %s has no directory: its worktree was discarded", t.ID)
		case WorkspaceRetired:
			return "", Errorf(CodeConflict, "task %s has no directory: its worktree was removed when it was archived done (its branch %s stays in %s)", t.ID, ws.Branch, ws.Repo)
		}
		if ws.Dir != "" {
			return ws.Dir, nil
		}
	}
	if t.CWD == "" {
		return "", Errorf(CodeConflict, "task %s has no directory", t.ID)
	}
	return t.CWD, nil
}
