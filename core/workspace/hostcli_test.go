package workspace

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// stubGH writes a gh into a new directory: auth status and pr create each
// print what they are given on stderr and exit with their code; an empty
// script part succeeds (pr create then prints a URL).
func stubGH(t *testing.T, auth, create string) string {
	t.Helper()
	dir := t.TempDir()
	part := func(s string) string {
		if s == "" {
			return "exit 0"
		}
		return s
	}
	script := "#!/bin/sh\ncase \"$1 $2\" in\n" +
		"\"auth status\") " + part(auth) + " ;;\n" +
		"\"pr create\") " + cmpOrOK(create) + " ;;\n" +
		"*) echo \"stub gh: unexpected $*\" >&2; exit 2 ;;\nesac\n"
	if err := os.WriteFile(filepath.Join(dir, "gh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func cmpOrOK(s string) string {
	if s == "" {
		return "echo https://github.com/me/app/pull/7"
	}
	return s
}

// Each way gh fails is told apart from its exit and output, with a stub
// gh per kind on the PATH the caller gave: the message names the cause,
// the next step and the PATH searched, and says GitHub only for a remote
// on GitHub.
func TestOpenPullRequestClassifiesGH(t *testing.T) {
	const github, local = "git@github.com:me/app.git", "/srv/git/app.git"
	cases := []struct {
		name         string
		auth, create string
		remote       string
		fault        HostFault
		want         []string
		noHostCLI    bool
	}{
		{name: "not logged in", auth: `echo 'You are not logged into any GitHub hosts. To log in, run: gh auth login' >&2; exit 1`,
			remote: github, fault: FaultNotLoggedIn, noHostCLI: true,
			want: []string{"gh is not logged in (You are not logged into any GitHub hosts.", "run gh auth login and try again", "found on the PATH of the command that asked"}},
		{name: "needs a login, exit 4", create: `echo 'To get started with GitHub CLI, please run:  gh auth login' >&2; exit 4`,
			remote: github, fault: FaultNotLoggedIn, noHostCLI: true, want: []string{"gh is not logged in"}},
		// The case: a network failure inside gh auth status.
		{name: "no network at auth status", auth: `printf 'error connecting to api.github.com\ncheck your internet connection or https://githubstatus.com\n' >&2; exit 1`,
			remote: github, fault: FaultNoNetwork, noHostCLI: true,
			want: []string{"gh could not reach GitHub (error connecting to api.github.com check your internet connection", "check the network and try again"}},
		{name: "no network at pr create", create: `echo 'Post "https://api.github.com/graphql": dial tcp: lookup api.github.com: no such host' >&2; exit 1`,
			remote: local, fault: FaultNoNetwork, noHostCLI: true,
			want: []string{"gh could not reach the host of " + local + " (Post"}},
		{name: "no such repository", create: `echo "GraphQL: Could not resolve to a Repository with the name 'me/app'. (repository)" >&2; exit 1`,
			remote: github, fault: FaultNoRepository,
			want: []string{"gh found no such repository on GitHub for " + github, "gh auth login"}},
		{name: "a local remote", create: "echo 'none of the git remotes configured for this repository point to a known GitHub host. To tell gh about a new GitHub host, please use `gh auth login`' >&2; exit 1",
			remote: local, fault: FaultNoRepository,
			want: []string{"the remote " + local + " is not a repository on GitHub, which gh opens requests on", "--remote NAME"}},
		{name: "refused: one exists", create: `echo 'a pull request for branch "kandev/x" into branch "main" already exists:' >&2; echo https://github.com/me/app/pull/3 >&2; exit 1`,
			remote: github, fault: FaultRefused, want: []string{`GitHub refused gh pr create (a pull request for branch "kandev/x" into branch "main" already exists:`}},
		{name: "refused: no commits", create: `echo 'pull request create failed: GraphQL: No commits between main and kandev/x (createPullRequest)' >&2; exit 1`,
			remote: local, fault: FaultRefused, want: []string{"the host of " + local + " refused gh pr create (pull request create failed"}},
		{name: "anything else", create: `echo 'something odd' >&2; exit 3`,
			remote: github, fault: FaultFailed, want: []string{"gh pr create failed (exit 3): something odd"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := stubGH(t, c.auth, c.create)
			_, err := OpenPullRequest(context.Background(), t.TempDir(), PullRequestOptions{Head: "kandev/x", Title: "T",
				Tools: ToolPath{Path: dir}, Remote: c.remote})
			var he *HostCLIError
			if !errors.As(err, &he) {
				t.Fatalf("error %v (%T), want a *HostCLIError", err, err)
			}
			if he.Fault != c.fault {
				t.Fatalf("fault %q, want %q: %v", he.Fault, c.fault, err)
			}
			msg := err.Error()
			for _, w := range c.want {
				if !strings.Contains(msg, w) {
					t.Errorf("message lacks %q:\n%s", w, msg)
				}
			}
			if !strings.Contains(msg, filepath.Join(dir, "gh")) {
				t.Errorf("message does not say which gh ran (%s):\n%s", filepath.Join(dir, "gh"), msg)
			}
			// gh's own words (its Detail) may say GitHub; kandev's do not.
			if c.remote == local && strings.Contains(strings.ReplaceAll(strings.ReplaceAll(msg, he.Detail, ""), "not a repository on GitHub", ""), "GitHub") {
				t.Errorf("message says GitHub for a local remote:\n%s", msg)
			}
			if errors.Is(err, ErrNoHostCLI) != c.noHostCLI {
				t.Errorf("errors.Is(ErrNoHostCLI) = %v, want %v", !c.noHostCLI, c.noHostCLI)
			}
		})
	}
}

// Not installed: the message names the PATH searched and whose it is; a
// relative entry is not searched (the daemon's directory is not the
// caller's).
func TestOpenPullRequestNotInstalled(t *testing.T) {
	empty := t.TempDir()
	rel := stubGH(t, "", "")
	wd, _ := os.Getwd()
	relDir, err := filepath.Rel(wd, rel)
	if err != nil {
		t.Fatal(err)
	}
	path := empty + string(os.PathListSeparator) + relDir
	_, err = OpenPullRequest(context.Background(), t.TempDir(), PullRequestOptions{Head: "kandev/x", Tools: ToolPath{Path: path}, Remote: "/srv/git/app.git"})
	var he *HostCLIError
	if !errors.As(err, &he) || he.Fault != FaultNotInstalled || !errors.Is(err, ErrNoHostCLI) {
		t.Fatalf("error %v, want not installed", err)
	}
	msg := err.Error()
	for _, w := range []string{"gh (GitHub's CLI) is not installed: it was not found on the PATH of the command that asked, PATH=" + path,
		"install it (https://cli.github.com)", "open the request for the pushed branch kandev/x by hand"} {
		if !strings.Contains(msg, w) {
			t.Errorf("message lacks %q:\n%s", w, msg)
		}
	}
	if strings.Contains(msg, "on GitHub") {
		t.Errorf("message says GitHub for a local remote:\n%s", msg)
	}
	// No caller's PATH: the daemon's own, and the message says so.
	t.Setenv("PATH", empty)
	_, err = OpenPullRequest(context.Background(), t.TempDir(), PullRequestOptions{Head: "kandev/x", Remote: "https://github.com/me/app"})
	if err == nil || !strings.Contains(err.Error(), "not found on the daemon's own PATH (the one it started with: kandev daemon restart picks up a changed one), PATH="+empty) ||
		!strings.Contains(err.Error(), "by hand on GitHub") {
		t.Fatalf("with the daemon's PATH: %v", err)
	}
}

// The one that works: the caller's gh is found and run with the caller's
// PATH.
func TestOpenPullRequestUsesTheCallersPath(t *testing.T) {
	dir := stubGH(t, "", `echo "$PATH" > "$(dirname "$0")/path.seen"; echo https://github.com/me/app/pull/9`)
	t.Setenv("PATH", t.TempDir()) // the daemon's own has no gh
	u, err := OpenPullRequest(context.Background(), t.TempDir(), PullRequestOptions{Head: "kandev/x", Tools: ToolPath{Path: dir + ":/usr/bin:/bin"}})
	if err != nil || u != "https://github.com/me/app/pull/9" {
		t.Fatalf("OpenPullRequest: %q %v", u, err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "path.seen"))
	if err != nil || strings.TrimSpace(string(b)) != dir+":/usr/bin:/bin" {
		t.Fatalf("gh ran with PATH %q (%v), want the caller's", b, err)
	}
}

func TestClassifyHostCLI(t *testing.T) {
	for _, c := range []struct {
		exit           int
		stderr, stdout string
		want           HostFault
	}{
		{1, "X Timeout trying to log in to github.com account me (keyring)", "", FaultNoNetwork},
		{1, "X Failed to log in to github.com account me (keyring)\n- The token in keyring is invalid.", "", FaultNotLoggedIn},
		{1, "HTTP 401: Bad credentials (https://api.github.com/graphql)", "", FaultNotLoggedIn},
		{1, "HTTP 404: Not Found (https://api.github.com/repos/me/app)", "", FaultNoRepository},
		{1, "GraphQL: me does not have the correct permissions to execute `CreatePullRequest` (createPullRequest)", "", FaultRefused},
		{1, "", `{"message":"403 Forbidden"}`, FaultRefused},
		{1, "glab: 404 Project Not Found", "", FaultNoRepository},
		{2, "weird", "", FaultFailed},
	} {
		if got := ClassifyHostCLI(c.exit, c.stderr, c.stdout); got != c.want {
			t.Errorf("ClassifyHostCLI(%d, %q, %q) = %q, want %q", c.exit, c.stderr, c.stdout, got, c.want)
		}
	}
}
