package workspace

import "testing"

func TestParsePatchNumbersTheNewSide(t *testing.T) {
	patch := `diff --git a/a/x.go b/a/x.go
index 1111111..2222222 100644
--- a/a/x.go
+++ b/a/x.go
@@ -1,3 +1,3 @@
 one
-two
+TWO
 three
@@ -10,2 +10,3 @@ func f() {
 ten
+ten and a half
 eleven
\ No newline at end of file
diff --git a/gone.txt b/gone.txt
deleted file mode 100644
--- a/gone.txt
+++ /dev/null
@@ -1 +0,0 @@
-bye
diff --git "a/sp ace.txt" "b/sp ace.txt"
new file mode 100644
--- /dev/null
+++ "b/sp ace.txt"
@@ -0,0 +1 @@
+hi
`
	got := ParsePatch(patch, []string{"a/x.go", "gone.txt", "sp ace.txt"})
	if len(got) != 2 {
		t.Fatalf("files = %v", got)
	}
	h := got["a/x.go"]
	if len(h) != 2 || h[0].Header != "@@ -1,3 +1,3 @@" {
		t.Fatalf("hunks of a/x.go = %+v", h)
	}
	want := []HunkLine{{' ', 1, "one"}, {'-', 0, "two"}, {'+', 2, "TWO"}, {' ', 3, "three"}}
	for i, l := range want {
		if h[0].Lines[i] != l {
			t.Errorf("line %d = %+v, want %+v", i, h[0].Lines[i], l)
		}
	}
	if l := h[1].Lines[1]; l.New != 11 || l.Text != "ten and a half" || len(h[1].Lines) != 3 {
		t.Errorf("second hunk = %+v", h[1].Lines)
	}
	if s := got["sp ace.txt"]; len(s) != 1 || s[0].Lines[0] != (HunkLine{'+', 1, "hi"}) {
		t.Errorf("quoted path: %+v", s)
	}
}

func TestHostOf(t *testing.T) {
	for u, want := range map[string]string{
		"https://github.com/kandev/kandev.git":    HostGitHub,
		"git@github.com:kandev/kandev.git":        HostGitHub,
		"ssh://git@github.example.org/a/b":        HostGitHub,
		"https://gitlab.com/group/sub/project":    HostGitLab,
		"git@gitlab.example.com:group/project":    HostGitLab,
		"https://bitbucket.org/a/b":               "",
		"/srv/git/app.git":                        "",
		"file:///srv/git/app.git":                 "",
		"https://example.com/github.com/evil.git": "",
	} {
		if got := HostOf(u); got != want {
			t.Errorf("HostOf(%q) = %q, want %q", u, got, want)
		}
	}
}
