package mcpserve

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/kandev/kandev/core/api"
	"github.com/mark3labs/mcp-go/mcp"
)

func TestProgressInterval(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"":      DefaultProgressInterval,
		"junk":  DefaultProgressInterval,
		"-1s":   DefaultProgressInterval,
		"0s":    DefaultProgressInterval,
		"250ms": 250 * time.Millisecond,
		"15s":   15 * time.Second,
		"1m":    MaxProgressInterval,
	} {
		if got := progressInterval(in); got != want {
			t.Errorf("progressInterval(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestResolveHomeOrder(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	cases := []struct {
		flag string
		env  map[string]string
		want string
	}{
		{"/flag", map[string]string{"KANDEV_HOME": "/kh", "XDG_DATA_HOME": "/xdg", "HOME": "/h"}, "/flag"},
		{"", map[string]string{"KANDEV_HOME": "/kh", "XDG_DATA_HOME": "/xdg", "HOME": "/h"}, "/kh"},
		{"", map[string]string{"XDG_DATA_HOME": "/xdg", "HOME": "/h"}, "/xdg/kandev"},
		{"", map[string]string{"HOME": "/h"}, "/h/.local/share/kandev"},
	}
	for _, tc := range cases {
		h, err := resolveHome(tc.flag, env(tc.env))
		if err != nil {
			t.Fatal(err)
		}
		if h.Dir != filepath.Clean(tc.want) {
			t.Errorf("resolveHome(%q, %v) = %s, want %s", tc.flag, tc.env, h.Dir, tc.want)
		}
	}
}

// get_task_diff_kandev's text is a summary line, the stat and the patch
// as git prints them (a model given only the text still reads the diff),
// not the structured content's JSON again.
func TestTaskDiffText(t *testing.T) {
	d := api.TaskDiff{TaskID: "abc123", Dir: "/w/abc123", Branch: "kandev/abc123-x", Base: "0123456789abcdef",
		Files: []api.DiffFileStat{{Path: "a.go", Added: 2, Deleted: 1}}, Added: 2, Deleted: 1,
		Stat: " a.go | 3 ++-\n 1 file changed\n", Patch: "diff --git a/a.go b/a.go\n+\"quoted\"\n"}
	res := taskDiffResult(d)
	text, ok := mcp.AsTextContent(res.Content[0])
	if !ok || len(res.RawStructuredContent) == 0 {
		t.Fatalf("result %+v", res)
	}
	want := "Task abc123 changed 1 file(s) (+2 -1) on branch kandev/abc123-x against its base 0123456789ab, in worktree /w/abc123.\n\n" +
		d.Stat + "\n" + d.Patch
	if text.Text != want {
		t.Errorf("text:\n%s\nwant:\n%s", text.Text, want)
	}
	empty := taskDiffText(api.TaskDiff{TaskID: "abc123", Dir: "/w", Branch: "b", Base: "0123"})
	if empty != "No changes in task abc123 (branch b, worktree /w) since its base 0123.\n" {
		t.Errorf("no changes: %q", empty)
	}
}
