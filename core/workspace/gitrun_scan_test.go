package workspace

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every git command kandev runs goes through Runner (ADR 0065): no other
// file of the module starts git itself. A new exec of git elsewhere fails
// here; route it through workspace.Git (or Manager) instead.
func TestEveryGitGoesThroughTheRunner(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not at %s: %v", root, err)
	}
	// exec.Command("git", …), exec.CommandContext(ctx, "git", …), a
	// LookPath("git") whose path is then run.
	direct := regexp.MustCompile(`exec\.Command(Context)?\([^)\n]*"git"|LookPath\("git"\)`)
	allowed := map[string]string{
		"core/workspace/gitrun.go": "the runner itself",
		"core/doctor/doctor.go":    "LookPath only to report where git is; its version is asked through the runner",
	}
	var offenders []string
	err = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "node_modules", "testdata", ".git":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		// kandev-bench is a developer's tool: its git makes the fixture
		// repositories it measures, in directories of its own.
		if direct.Match(b) && allowed[filepath.ToSlash(rel)] == "" && !strings.HasPrefix(filepath.ToSlash(rel), "cmd/kandev-bench/") {
			offenders = append(offenders, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(offenders) > 0 {
		t.Fatalf("these files run git without the runner: %v", offenders)
	}
	// The runner is the only place git's program is looked up and run.
	b, err := os.ReadFile("gitrun.go")
	if err != nil {
		t.Fatal(err)
	}
	if !direct.Match(b) {
		t.Fatal("the scan's pattern no longer finds the runner's own exec: it has gone blind")
	}
}
