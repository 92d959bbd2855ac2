package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os/exec"
	"strings"
	"time"
)

// Git hosts kandev knows how to open review requests on.
const (
	HostGitHub = "github"
	HostGitLab = "gitlab"
)

// HostOf names the host of a remote's URL (https://, ssh:// or scp-like
// git@host:path): github for github.com and GitHub Enterprise hosts
// named github.*, gitlab for gitlab.com and hosts named gitlab.*; "" for
// any other.
func HostOf(remoteURL string) string {
	u := strings.TrimSpace(remoteURL)
	host := ""
	if strings.Contains(u, "://") {
		if p, err := url.Parse(u); err == nil {
			host = p.Hostname()
		}
	} else if at, rest, ok := strings.Cut(u, "@"); ok && at != "" && strings.Contains(rest, ":") {
		host, _, _ = strings.Cut(rest, ":")
	}
	host = strings.ToLower(host)
	switch {
	case host == "github.com" || strings.HasPrefix(host, "github."):
		return HostGitHub
	case host == "gitlab.com" || strings.HasPrefix(host, "gitlab."):
		return HostGitLab
	}
	return ""
}

// RemoteHost names the host of the repository's remote (origin when
// remote is ""), "" when it has no such remote or an unknown host.
func (m *Manager) RemoteHost(ctx context.Context, repo, remote string) string {
	if remote == "" {
		remote = "origin"
	}
	out, err := m.git(ctx, repo, "remote", "get-url", "--", remote)
	if err != nil {
		return ""
	}
	return HostOf(out)
}

// ErrNoHostCLI is wrapped when the host's CLI (gh) is missing or not
// logged in; the message says what to do.
var ErrNoHostCLI = errors.New("host CLI unavailable")

// PullRequestOptions describe a pull request to open.
type PullRequestOptions struct {
	Head, Base  string // Base "" = the repository's default branch
	Title, Body string
	Draft       bool
}

// hostTimeout bounds each call of the host's CLI: it talks to the host.
const hostTimeout = 2 * time.Minute

// OpenPullRequest opens a pull request with GitHub's gh CLI, run in the
// repository, and returns its URL. gh must be on PATH and logged in
// (gh auth status); it is never left to prompt.
func OpenPullRequest(ctx context.Context, repo string, o PullRequestOptions) (string, error) {
	gh, err := exec.LookPath("gh")
	if err != nil {
		return "", fmt.Errorf("%w: gh (GitHub's CLI) is not on PATH; install it (https://cli.github.com), run gh auth login, and try again; or open the pull request of the pushed branch %s on GitHub", ErrNoHostCLI, o.Head)
	}
	if _, err := runHost(ctx, repo, gh, "auth", "status"); err != nil {
		return "", fmt.Errorf("%w: gh is not logged in (%v); run gh auth login and try again", ErrNoHostCLI, err)
	}
	args := []string{"pr", "create", "--head", o.Head, "--title", o.Title, "--body", o.Body}
	if o.Base != "" {
		args = append(args, "--base", o.Base)
	}
	if o.Draft {
		args = append(args, "--draft")
	}
	out, err := runHost(ctx, repo, gh, args...)
	if err != nil {
		return "", fmt.Errorf("gh pr create: %w", err)
	}
	// gh prints the new pull request's URL last.
	lines := strings.Fields(out)
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(lines[i], "https://") || strings.HasPrefix(lines[i], "http://") {
			return lines[i], nil
		}
	}
	return "", fmt.Errorf("gh pr create printed no URL: %q", strings.TrimSpace(out))
}

// runHost runs the host's CLI, bounded, never prompting, and returns its
// stdout; a failure carries its stderr.
func runHost(ctx context.Context, dir, bin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, hostTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = append(cmd.Environ(), "GH_PROMPT_DISABLED=1", "GH_NO_UPDATE_NOTIFIER=1", "NO_COLOR=1", "GIT_TERMINAL_PROMPT=0")
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 4096 {
			msg = msg[:4096]
		}
		if msg == "" {
			return stdout.String(), err
		}
		return stdout.String(), fmt.Errorf("%v: %s", err, msg)
	}
	return stdout.String(), nil
}
