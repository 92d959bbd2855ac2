package engine_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/engine"
)

// The provider group, per case: a task's tools follow its repository's
// origin (none, GitHub, GitLab with glab on PATH, another host), derived
// from the task at each launch.
func TestProviderToolsFollowTheOrigin(t *testing.T) {
	env := newEngineEnv(t)
	repo := newGitRepo(t, env)
	bin := t.TempDir()
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	tools := func() []string {
		t.Helper()
		task, err := env.eng.Tasks.CreateTask(env.ctx, api.CreateTaskInput{Title: "t", CWD: repo})
		if err != nil {
			t.Fatal(err)
		}
		s, err := env.eng.Tools.ToolSurface(core.WithActor(env.ctx, core.Actor{Kind: core.ActorAgent, TaskID: task.ID}))
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, n := range s.Tools {
			if strings.Contains(n, "_request_") {
				out = append(out, n)
			}
		}
		if slices.Contains(s.Groups, "provider") != (len(out) > 0) {
			t.Errorf("groups %v with provider tools %v", s.Groups, out)
		}
		return out
	}
	check := func(what string, want ...string) {
		t.Helper()
		if got := tools(); !slices.Equal(got, want) {
			t.Errorf("%s: provider tools %v, want %v", what, got, want)
		}
	}
	check("no remote")
	gitT(t, repo, "remote", "add", "origin", "https://github.com/me/app.git")
	check("GitHub origin", "get_pull_request_comments_kandev", "open_pull_request_kandev")
	gitT(t, repo, "remote", "set-url", "origin", "git@gitlab.com:me/app.git")
	check("GitLab origin, no glab")
	writeScript(t, filepath.Join(bin, "glab"), "#!/bin/sh\nexit 0\n")
	check("GitLab origin, glab on PATH", "get_merge_request_comments_kandev", "open_merge_request_kandev")
	gitT(t, repo, "remote", "set-url", "origin", "https://bitbucket.org/me/app.git")
	check("another host")

	// A task in a shared directory has no repository of its own to open anything on.
	gitT(t, repo, "remote", "set-url", "origin", "https://github.com/me/app.git")
	shared, err := env.eng.Tasks.CreateTask(env.ctx, api.CreateTaskInput{Title: "s", CWD: repo, Workspace: "shared"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := env.eng.Tools.ToolSurface(core.WithActor(env.ctx, core.Actor{Kind: core.ActorAgent, TaskID: shared.ID}))
	if err != nil || slices.Contains(s.Tools, "open_pull_request_kandev") {
		t.Fatalf("shared task: %v, %v", s.Tools, err)
	}
}

func writeScript(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
}

// The GitHub tools through the engine: the task's agent pushes its branch
// and opens its pull request, then reads its review. GitHub is the one
// external service no test can reach: gh is a stand-in on PATH that
// records its arguments; origin's fetch URL is GitHub's, its push URL a
// bare repository here, so nothing leaves the machine.
func TestPullRequestToolsWithStandInGH(t *testing.T) {
	env := newEngineEnv(t)
	repo := repoWithHostedOrigin(t, env, "https://github.com/me/app.git")
	log := standInCLI(t, env, "gh", "GH_LOG", `#!/bin/sh
printf '%s\n' "$*" >> "$GH_LOG"
case "$1 $2" in
"auth status") exit 0 ;;
"pr create") echo https://github.com/me/app/pull/9 ;;
"pr view") echo '{"number":9,"url":"https://github.com/me/app/pull/9","state":"OPEN","reviewDecision":"CHANGES_REQUESTED","reviews":[{"author":{"login":"ana"},"state":"CHANGES_REQUESTED","body":"see inline"}],"comments":[]}' ;;
"api repos/{owner}/{repo}/pulls/9/comments?per_page=100") echo '[{"path":"src/main.go","line":1,"body":"rename this","user":{"login":"ana"}}]' ;;
*) echo "unexpected: $*" >&2; exit 2 ;;
esac
`)
	task, err := env.eng.Tasks.CreateTask(env.ctx, api.CreateTaskInput{Title: "Make main", CWD: repo})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(task.Workspace.Dir, "src", "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	agent := core.WithActor(env.ctx, core.Actor{Kind: core.ActorAgent, TaskID: task.ID})
	res, err := env.eng.Tools.CallTool(agent, "open_pull_request_kandev", []byte(`{"draft":true}`))
	if err != nil {
		t.Fatal(err)
	}
	pr := res.(api.PullRequestResult)
	if pr.URL != "https://github.com/me/app/pull/9" || !pr.Push.Committed {
		t.Fatalf("result = %+v", pr)
	}
	gitT(t, repo, "--git-dir", filepath.Join(env.dir, "remote.git"), "rev-parse", "--verify", "refs/heads/"+task.Workspace.Branch)
	b, _ := os.ReadFile(log)
	if !strings.Contains(string(b), "pr create --head "+task.Workspace.Branch+" --title Make main --body ") || !strings.Contains(string(b), "--draft") {
		t.Fatalf("gh was called with:\n%s", b)
	}
	got, err := env.eng.Tools.CallTool(agent, "get_task_kandev", []byte(`{}`))
	if err != nil || got.(core.Task).Workspace.PullRequest != pr.URL {
		t.Fatalf("get_task_kandev: %+v, %v", got, err)
	}
	// A restart reads the URL back into the task's view.
	env.restart()
	if w := env.get(task.ID).Workspace; w.PullRequest != pr.URL {
		t.Fatalf("after a restart: %+v", w)
	}
	agent = core.WithActor(env.ctx, core.Actor{Kind: core.ActorAgent, TaskID: task.ID})
	rv, err := env.eng.Tools.CallTool(agent, "get_pull_request_comments_kandev", []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	r := rv.(engine.RequestReview)
	if !strings.Contains(string(r.View), "CHANGES_REQUESTED") || !strings.Contains(string(r.Inline), "rename this") || r.URL != pr.URL {
		t.Fatalf("review = %+v", r)
	}
	// Another task's agent cannot push this one.
	other, err := env.eng.Tasks.CreateTask(env.ctx, api.CreateTaskInput{Title: "other", CWD: repo})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.eng.Workspaces.Push(core.WithActor(env.ctx, core.Actor{Kind: core.ActorAgent, TaskID: other.ID}), task.ID, api.PushInput{}); core.CodeOf(err) != core.CodeForbidden {
		t.Fatalf("a stranger's push: %v", err)
	}
}

// GitLab's pair through a stand-in glab (GitLab is as unreachable here as
// GitHub): the merge request is opened with the branch and title, its URL
// kept; the comments come back as glab prints them.
func TestMergeRequestToolsWithStandInGlab(t *testing.T) {
	env := newEngineEnv(t)
	repo := repoWithHostedOrigin(t, env, "git@gitlab.com:me/app.git")
	log := standInCLI(t, env, "glab", "GLAB_LOG", `#!/bin/sh
printf '%s\n' "$*" >> "$GLAB_LOG"
case "$1 $2" in
"auth status") exit 0 ;;
"mr create") echo 'Creating merge request'; echo https://gitlab.com/me/app/-/merge_requests/3 ;;
"mr view") echo 'title: Make main'; echo 'ana commented on src/main.go line 1: rename this' ;;
*) echo "unexpected: $*" >&2; exit 2 ;;
esac
`)
	task, err := env.eng.Tasks.CreateTask(env.ctx, api.CreateTaskInput{Title: "Make main", CWD: repo})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(task.Workspace.Dir, "src", "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	agent := core.WithActor(env.ctx, core.Actor{Kind: core.ActorAgent, TaskID: task.ID})
	res, err := env.eng.Tools.CallTool(agent, "open_merge_request_kandev", []byte(`{"base":"main"}`))
	if err != nil {
		t.Fatal(err)
	}
	if u := res.(api.PullRequestResult).URL; u != "https://gitlab.com/me/app/-/merge_requests/3" {
		t.Fatalf("url = %q", u)
	}
	b, _ := os.ReadFile(log)
	if !strings.Contains(string(b), "mr create --source-branch "+task.Workspace.Branch+" --title Make main --description ") || !strings.Contains(string(b), "--target-branch main") {
		t.Fatalf("glab was called with:\n%s", b)
	}
	if w := env.get(task.ID).Workspace; w.PullRequest != "https://gitlab.com/me/app/-/merge_requests/3" {
		t.Fatalf("kept: %+v", w)
	}
	rv, err := env.eng.Tools.CallTool(agent, "get_merge_request_comments_kandev", []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if r := rv.(engine.RequestReview); !strings.Contains(r.Text, "rename this") {
		t.Fatalf("review = %+v", r)
	}
	// The GitHub tools are not this task's: refused before anything runs.
	if _, err := env.eng.Tools.CallTool(agent, "open_pull_request_kandev", []byte(`{}`)); err == nil {
		t.Fatal("a GitLab task was granted the GitHub tool")
	}
}

// repoWithHostedOrigin is a git repository whose origin fetches from
// origin (a GitHub or GitLab URL no test reaches) and pushes to a bare
// repository here, so nothing leaves the machine.
func repoWithHostedOrigin(t *testing.T, env *engineEnv, origin string) string {
	t.Helper()
	repo := newGitRepo(t, env)
	bare := filepath.Join(env.dir, "remote.git")
	gitT(t, env.dir, "init", "-q", "--bare", bare)
	gitT(t, repo, "remote", "add", "origin", origin)
	gitT(t, repo, "config", "remote.origin.pushurl", bare)
	return repo
}

// standInCLI puts script on PATH as name (gh, glab) and returns the log
// it is told to write its arguments to, in logVar.
func standInCLI(t *testing.T, env *engineEnv, name, logVar, script string) string {
	t.Helper()
	bin := t.TempDir()
	log := filepath.Join(env.dir, name+".log")
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv(logVar, log)
	writeScript(t, filepath.Join(bin, name), script)
	return log
}
