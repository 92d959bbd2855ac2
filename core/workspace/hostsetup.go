package workspace

import "context"

// Included returns the files .worktreeinclude copied into the worktree:
// a task on a host gets them copied into its worktree there too (git
// ignores them, so the push does not carry them).
func (m *Manager) Included(ctx context.Context, dir string) []string {
	return m.included(ctx, dir)
}
