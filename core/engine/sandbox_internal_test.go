package engine

import (
	"os"
	"path/filepath"
	"testing"
)

// A shared task's sandbox widens to the top of its checkout, never to a
// checkout at or above the operator's home (a dotfiles repository in ~).
func TestSharedTop(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "home")
	repo := filepath.Join(home, "src", "repo")
	for _, d := range []string{filepath.Join(repo, ".git"), filepath.Join(repo, "a", "b"), filepath.Join(home, ".git"), filepath.Join(home, "notes")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ cwd, want string }{
		{filepath.Join(repo, "a", "b"), repo},
		{repo, repo},
		{filepath.Join(home, "notes"), filepath.Join(home, "notes")}, // in ~'s own checkout
		{home, home},
		{root, root}, // in no checkout
	} {
		if got := sharedTop(c.cwd, home); got != c.want {
			t.Errorf("sharedTop(%s) = %s, want %s", c.cwd, got, c.want)
		}
	}
}
