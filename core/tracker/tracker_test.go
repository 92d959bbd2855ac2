package tracker

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"gh:acme/web#12", "gh:acme/web#12"},
		{"https://github.com/acme/web/issues/12", "gh:acme/web#12"},
		{"gl:acme/platform/api#7", "gl:acme/platform/api#7"},
		{"https://gitlab.com/acme/platform/api/-/issues/7", "gl:acme/platform/api#7"},
		{"https://git.example.org/team/app/-/issues/3", "gl@git.example.org:team/app#3"},
		{"gl@gitlab.com:a/b#1", "gl:a/b#1"},
		{"linear:eng-123", "linear:ENG-123"},
		{"https://linear.app/acme/issue/ENG-123/rate-limit-the-export-api", "linear:ENG-123"},
	} {
		r, err := Parse(c.in)
		if err != nil || r.String() != c.want {
			t.Errorf("Parse(%q) = %q, %v; want %q", c.in, r.String(), err, c.want)
		}
	}
	for _, bad := range []string{"", "12", "gh:acme#12", "gh:acme/web#0", "gh:acme/web#012", "gh:a/b/c#1", "gh:acme/web#1;rm",
		"gh:ac me/web#1", "linear:123", "https://github.com/acme/web/pull/3", "https://example.com/x", "gl@bad host:a/b#1"} {
		if r, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) = %v, want an error", bad, r)
		}
	}
}

func TestClosingLine(t *testing.T) {
	gh, _ := Parse("gh:acme/web#12")
	gl, _ := Parse("gl:acme/api#7")
	ln, _ := Parse("linear:ENG-123")
	for _, c := range []struct{ got, want string }{
		{gh.ClosingLine("acme/web"), "Closes #12"},
		{gh.ClosingLine("Acme/Web"), "Closes #12"},
		{gh.ClosingLine("me/fork"), "Closes acme/web#12"},
		{gh.ClosingLine(""), "Closes acme/web#12"},
		{gl.ClosingLine("acme/api"), "Closes #7"},
		{ln.ClosingLine("acme/web"), "Fixes ENG-123"},
	} {
		if c.got != c.want {
			t.Errorf("closing line %q, want %q", c.got, c.want)
		}
	}
}

func TestProjectOf(t *testing.T) {
	for _, c := range []struct{ url, kind, host, repo string }{
		{"https://github.com/acme/web.git", GitHub, "", "acme/web"},
		{"git@github.com:acme/web.git", GitHub, "", "acme/web"},
		{"ssh://git@gitlab.com/acme/platform/api.git", GitLab, "", "acme/platform/api"},
		{"https://gitlab.example.com/team/app", GitLab, "gitlab.example.com", "team/app"},
	} {
		p, err := ProjectOf(c.url)
		if err != nil || p.Kind != c.kind || p.Host != c.host || p.Repo != c.repo {
			t.Errorf("ProjectOf(%q) = %+v, %v", c.url, p, err)
		}
	}
	if _, err := ProjectOf("/srv/git/app.git"); !errors.Is(err, ErrUnknownRepo) {
		t.Errorf("a local remote: %v", err)
	}
}

// stub puts a stand-in named bin on PATH replaying the recorded answers
// (out.json, notes.json) and returns its argument log.
func stub(t *testing.T, bin string, answers map[string]string) (log func() []string) {
	t.Helper()
	dir := t.TempDir()
	script, err := os.ReadFile(filepath.Join("testdata", "stub.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, bin), script, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, file := range answers {
		b, err := os.ReadFile(filepath.Join("testdata", file))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	logPath := filepath.Join(dir, "log")
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("STUB_DIR", dir)
	t.Setenv("STUB_LOG", logPath)
	t.Setenv("STUB_ERR", "")
	return func() []string {
		b, _ := os.ReadFile(logPath)
		return strings.Split(strings.TrimSpace(string(b)), "\n")
	}
}

func TestGitHubIssueThroughGH(t *testing.T) {
	log := stub(t, "gh", map[string]string{"out.json": "gh_issue_view.json"})
	r, _ := Parse("https://github.com/acme/web/issues/12")
	var c Client
	is, err := c.Issue(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"issue", "view", "12", "--repo", "acme/web", "--json", ghViewFields, "---"}
	if got := log(); !slices.Equal(got, want) {
		t.Fatalf("gh was asked %q, want %q", got, want)
	}
	if is.Title != "Login hangs on Safari" || is.State != "OPEN" || is.URL != "https://github.com/acme/web/issues/12" ||
		!slices.Equal(is.Labels, []string{"bug", "safari"}) || len(is.Comments) != 2 || is.Comments[1].Author != "bo" || is.Source != "gh:acme/web#12" {
		t.Fatalf("issue = %+v", is)
	}
	// The body's terminal controls are gone (an OSC title write), its CRLFs are lines.
	if strings.ContainsAny(is.Body, "\x1b\x07\r") || !strings.Contains(is.Body, "Steps: open /login and wait.") {
		t.Fatalf("body = %q", is.Body)
	}
	text := is.Text()
	for _, w := range []string{"acme/web#12: Login hangs on Safari", "Labels: bug, safari", "bo (2026-11-02T10:00:00Z) wrote:\nIgnore previous"} {
		if !strings.Contains(text, w) {
			t.Errorf("text lacks %q:\n%s", w, text)
		}
	}
}

func TestGitHubListWithFilters(t *testing.T) {
	log := stub(t, "gh", map[string]string{"out.json": "gh_issue_list.json"})
	var c Client
	list, err := c.List(context.Background(), Project{Kind: GitHub, Repo: "acme/web"}, ListOptions{Label: "bug", Assignee: "@me", Milestone: "v2", Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"issue", "list", "--repo", "acme/web", "--state", "open", "--limit", "100", "--json", ghListFields,
		"--label", "bug", "--assignee", "@me", "--milestone", "v2", "---"}
	if got := log(); !slices.Equal(got, want) {
		t.Fatalf("gh was asked %q, want %q", got, want)
	}
	if len(list) != 2 || list[1].Source != "gh:acme/web#15" || list[1].Title != "Logout button misaligned" {
		t.Fatalf("list = %+v", list)
	}
}

func TestGitLabIssueThroughGlab(t *testing.T) {
	log := stub(t, "glab", map[string]string{"out.json": "glab_issue.json", "notes.json": "glab_notes.json"})
	r, _ := Parse("gl:acme/platform/api#7")
	var c Client
	is, err := c.Issue(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"api", "projects/acme%2Fplatform%2Fapi/issues/7", "---",
		"api", "projects/acme%2Fplatform%2Fapi/issues/7/notes?sort=desc&order_by=created_at&per_page=50", "---"}
	if got := log(); !slices.Equal(got, want) {
		t.Fatalf("glab was asked %q, want %q", got, want)
	}
	// Comments oldest first, GitLab's system notes left out.
	if is.Title != "Cache misses on deploy" || is.State != "opened" || !slices.Equal(is.Labels, []string{"backend", "perf"}) ||
		len(is.Comments) != 2 || is.Comments[0].Body != "Which region?" || is.Comments[1].Author != "ana" ||
		is.URL != "https://gitlab.com/acme/platform/api/-/issues/7" {
		t.Fatalf("issue = %+v", is)
	}
}

func TestGitLabListOnOwnHost(t *testing.T) {
	log := stub(t, "glab", map[string]string{"out.json": "glab_issues.json"})
	var c Client
	list, err := c.List(context.Background(), Project{Kind: GitLab, Host: "gitlab.example.com", Repo: "acme/platform/api"}, ListOptions{Label: "perf", Assignee: "ana", Milestone: "v2"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"api", "--hostname", "gitlab.example.com",
		"projects/acme%2Fplatform%2Fapi/issues?assignee_username=ana&labels=perf&milestone=v2&order_by=updated_at&per_page=30&state=opened", "---"}
	if got := log(); !slices.Equal(got, want) {
		t.Fatalf("glab was asked %q, want %q", got, want)
	}
	if len(list) != 1 || list[0].Source != "gl@gitlab.example.com:acme/platform/api#7" {
		t.Fatalf("list = %+v", list)
	}
}

// linearServer speaks Linear's GraphQL shape: it checks the key and
// answers the recorded file for the query's name; got receives each request.
func linearServer(t *testing.T, answer func(query string, vars map[string]any) (int, string)) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Query     string         `json:"query"`
			Variables map[string]any `json:"variables"`
		}
		b, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || json.Unmarshal(b, &req) != nil {
			http.Error(w, "bad request", 400)
			return
		}
		status, file := answer(req.Query, req.Variables)
		if r.Header.Get("Authorization") != "lin_api_test" {
			status, file = 400, "linear_unauth.json"
		}
		out, err := os.ReadFile(filepath.Join("testdata", file))
		if err != nil {
			t.Error(err)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(out)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestLinearIssueAndList(t *testing.T) {
	var vars []map[string]any
	srv := linearServer(t, func(q string, v map[string]any) (int, string) {
		vars = append(vars, v)
		switch {
		case strings.Contains(q, "KandevIssues"):
			return 200, "linear_issues.json"
		case v["id"] == "ENG-123":
			return 200, "linear_issue.json"
		}
		return 200, "linear_notfound.json"
	})
	c := Client{LinearURL: srv.URL, LinearToken: "lin_api_test"}
	r, _ := Parse("linear:ENG-123")
	is, err := c.Issue(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	if is.Title != "Rate-limit the export API" || is.State != "Todo" || is.URL != "https://linear.app/acme/issue/ENG-123/rate-limit-the-export-api" ||
		len(is.Comments) != 1 || is.Comments[0].Author != "Eli" || !slices.Equal(is.Labels, []string{"Backend"}) {
		t.Fatalf("issue = %+v", is)
	}
	list, err := c.List(context.Background(), LinearTeam("eng"), ListOptions{Label: "Backend", Assignee: "me"})
	if err != nil || len(list) != 2 || list[1].Source != "linear:ENG-124" {
		t.Fatalf("list = %+v, %v", list, err)
	}
	f, _ := json.Marshal(vars[1]["filter"])
	for _, w := range []string{`"team":{"key":{"eq":"ENG"}}`, `"labels":{"some":{"name":{"eqIgnoreCase":"Backend"}}}`, `"assignee":{"isMe":{"eq":true}}`, `"nin":["completed","canceled"]`} {
		if !strings.Contains(string(f), w) {
			t.Errorf("filter %s lacks %s", f, w)
		}
	}
	r, _ = Parse("linear:ENG-999")
	if _, err := c.Issue(context.Background(), r); !errors.Is(err, ErrNoIssue) {
		t.Fatalf("a missing issue: %v", err)
	}
}

// Each fault a tracker call can end in is told apart, with what to do.
func TestFaults(t *testing.T) {
	gh, _ := Parse("gh:acme/web#12")
	gl, _ := Parse("gl:acme/api#7")
	for _, c := range []struct {
		name, bin, stderr, stdout string
		ref                       Ref
		want                      error
		says                      string
	}{
		{"gh logged out", "gh", "To get started with GitHub CLI, please run:  gh auth login\nAlternatively, populate the GH_TOKEN environment variable with a GitHub API authentication token.", "", gh, ErrNotLoggedIn, "run gh auth login"},
		{"gh offline", "gh", "error connecting to api.github.com\ncheck your internet connection or https://githubstatus.com", "", gh, ErrNoNetwork, "check your network"},
		{"gh no issue", "gh", "GraphQL: Could not resolve to an issue or pull request with the number of 12. (repository.issue)", "", gh, ErrNoIssue, "number of 12"},
		{"gh private", "gh", "GraphQL: Could not resolve to a Repository with the name 'acme/web'. (repository)", "", gh, ErrForbidden, "private"},
		{"gh private, 401 in its name", "gh", "GraphQL: Could not resolve to a Repository with the name 'acme/web401'. (repository)", "", gh, ErrForbidden, "private"},
		{"gh forbidden", "gh", "HTTP 403: Resource not accessible by integration (https://api.github.com/graphql)", "", gh, ErrForbidden, "ask for access"},
		{"glab logged out", "glab", "glab: 401 Unauthorized (HTTP 401)", `{"message":"401 Unauthorized"}`, gl, ErrNotLoggedIn, "run glab auth login"},
		{"glab private", "glab", "glab: 404 Not Found (HTTP 404)", `{"message":"404 Project Not Found"}`, gl, ErrForbidden, "private"},
		{"glab no issue", "glab", "glab: 404 Not Found (HTTP 404)", `{"message":"404 Not found"}`, gl, ErrNoIssue, "404"},
		{"glab offline", "glab", `Get "https://gitlab.com/api/v4/projects/acme%2Fapi/issues/7": dial tcp: lookup gitlab.com: no such host`, "", gl, ErrNoNetwork, "check your network"},
	} {
		t.Run(c.name, func(t *testing.T) {
			stub(t, c.bin, nil)
			t.Setenv("STUB_ERR", c.stderr)
			t.Setenv("STUB_ERR_OUT", c.stdout)
			var cl Client
			_, err := cl.Issue(context.Background(), c.ref)
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("err = %v, want %v saying %q", err, c.want, c.says)
			}
		})
	}
	t.Run("no CLI", func(t *testing.T) {
		t.Setenv("PATH", t.TempDir())
		var cl Client
		for _, r := range []Ref{gh, gl} {
			if _, err := cl.Issue(context.Background(), r); !errors.Is(err, ErrNoCLI) || !strings.Contains(err.Error(), "install it") {
				t.Fatalf("err = %v", err)
			}
		}
	})
	ln, _ := Parse("linear:ENG-1")
	t.Run("no token", func(t *testing.T) {
		cl := Client{LinearURL: "http://127.0.0.1:1/"}
		if _, err := cl.Issue(context.Background(), ln); !errors.Is(err, ErrNoToken) || !strings.Contains(err.Error(), "LINEAR_API_KEY") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("token refused", func(t *testing.T) {
		srv := linearServer(t, func(string, map[string]any) (int, string) { return 200, "linear_issue.json" })
		cl := Client{LinearURL: srv.URL, LinearToken: "lin_api_wrong"}
		if _, err := cl.Issue(context.Background(), ln); !errors.Is(err, ErrNotLoggedIn) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("linear offline", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		srv.Close() // nothing listens there now
		cl := Client{LinearURL: srv.URL, LinearToken: "lin_api_test"}
		if _, err := cl.Issue(context.Background(), ln); !errors.Is(err, ErrNoNetwork) {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestBounds(t *testing.T) {
	is := Issue{Ref: Ref{Kind: GitHub, Repo: "a/b", Number: 1}, Title: strings.Repeat("t", 500) + "\nline",
		Body: strings.Repeat("é", MaxBody), Labels: make([]string, 40)}
	for i := range 9 {
		is.Comments = append(is.Comments, Comment{Author: "x", Body: strings.Repeat("c", 2*MaxComment) + string(rune('0'+i))})
	}
	for i := range is.Labels {
		is.Labels[i] = "label"
	}
	is.finish()
	if len([]rune(is.Title)) != MaxTitle || strings.Contains(is.Title, "\n") || len(is.Body) > MaxBody ||
		len(is.Labels) != MaxLabels || len(is.Comments) != MaxComments || len(is.Comments[0].Body) > MaxComment ||
		!strings.HasSuffix(is.Body, "[… cut by kandev]") || is.URL != "https://github.com/a/b/issues/1" {
		t.Fatalf("title %d runes, body %d bytes, %d labels, %d comments", len([]rune(is.Title)), len(is.Body), len(is.Labels), len(is.Comments))
	}
	if n := len(is.Text()); n > MaxText {
		t.Fatalf("text is %d bytes", n)
	}
}
