package workspace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
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
	return HostOf(m.RemoteURL(ctx, repo, remote))
}

// RemoteURL is the URL of the repository's remote (origin when remote is
// ""), "" when it has none.
func (m *Manager) RemoteURL(ctx context.Context, repo, remote string) string {
	if remote == "" {
		remote = "origin"
	}
	out, err := m.git(ctx, repo, "remote", "get-url", "--", remote)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(out)
}

// ErrNoHostCLI is wrapped when the host's CLI (gh) is missing or not
// logged in; the message says what to do.
var ErrNoHostCLI = errors.New("host CLI unavailable")

// PullRequestOptions describe a pull request to open.
type PullRequestOptions struct {
	Head, Base  string // Base "" = the repository's default branch
	Title, Body string
	Draft       bool
	// Tools is where the host's CLI is looked up (ADR 0071).
	Tools ToolPath
	// Remote is the URL of the remote the branch was pushed to, for the
	// messages: they name GitHub or GitLab only for a remote on it.
	Remote string
}

// hostTimeout bounds each call of the host's CLI: it talks to the host.
const hostTimeout = 2 * time.Minute

// OpenPullRequest opens a pull request with GitHub's gh CLI, run in the
// repository, and returns its URL. gh must be on the ToolPath and logged
// in (gh auth status); it is never left to prompt. A failure is a
// classified *HostCLIError.
func OpenPullRequest(ctx context.Context, repo string, o PullRequestOptions) (string, error) {
	gh, err := findHostCLI(o.Tools, "gh", o.Remote, o.Head)
	if err != nil {
		return "", err
	}
	if _, err := gh.run(ctx, repo, "auth", "status"); err != nil {
		return "", err
	}
	args := []string{"pr", "create", "--head", o.Head, "--title", o.Title, "--body", o.Body}
	if o.Base != "" {
		args = append(args, "--base", o.Base)
	}
	if o.Draft {
		args = append(args, "--draft")
	}
	out, err := gh.run(ctx, repo, args...)
	if err != nil {
		return "", err
	}
	// gh prints the new pull request's URL last.
	return lastURL(out, "gh pr create")
}

// OpenMergeRequest opens a merge request with GitLab's glab CLI, run in
// the repository, and returns its URL.
func OpenMergeRequest(ctx context.Context, repo string, o PullRequestOptions) (string, error) {
	glab, err := findHostCLI(o.Tools, "glab", o.Remote, o.Head)
	if err != nil {
		return "", err
	}
	if _, err := glab.run(ctx, repo, "auth", "status"); err != nil {
		return "", err
	}
	args := []string{"mr", "create", "--source-branch", o.Head, "--title", o.Title, "--description", o.Body, "--yes"}
	if o.Base != "" {
		args = append(args, "--target-branch", o.Base)
	}
	if o.Draft {
		args = append(args, "--draft")
	}
	out, err := glab.run(ctx, repo, args...)
	if err != nil {
		return "", err
	}
	return lastURL(out, "glab mr create")
}

func lastURL(out, what string) (string, error) {
	f := strings.Fields(out)
	for i := len(f) - 1; i >= 0; i-- {
		if strings.HasPrefix(f[i], "https://") || strings.HasPrefix(f[i], "http://") {
			return f[i], nil
		}
	}
	return "", fmt.Errorf("%s printed no URL: %q", what, strings.TrimSpace(out))
}

// ErrNoRequest is wrapped when the branch has no pull or merge request.
var ErrNoRequest = errors.New("no review request")

// maxReviewOut bounds what a host's CLI may hand back for one review.
const maxReviewOut = 256 << 10

// PullRequestReview reads the review of the branch's pull request with
// gh: `gh pr view` (state, reviews, conversation) and the comments on
// lines of its diff (`gh api .../pulls/N/comments`), as JSON.
func PullRequestReview(ctx context.Context, repo, branch string) (view, inline []byte, err error) {
	gh, err := findHostCLI(ToolPath{}, "gh", "", "")
	if err != nil {
		return nil, nil, err
	}
	out, err := gh.run(ctx, repo, "pr", "view", branch, "--json", "number,url,state,reviewDecision,reviews,comments")
	if err != nil {
		if strings.Contains(err.Error(), "no pull requests found") {
			return nil, nil, fmt.Errorf("%w: branch %s has no pull request", ErrNoRequest, branch)
		}
		return nil, nil, err
	}
	if len(out) > maxReviewOut {
		return nil, nil, fmt.Errorf("gh pr view: %d bytes, over %d", len(out), maxReviewOut)
	}
	var head struct {
		Number int `json:"number"`
	}
	if err := json.Unmarshal([]byte(out), &head); err != nil || head.Number <= 0 {
		return nil, nil, fmt.Errorf("gh pr view: no pull request number in %q", truncateOut(out))
	}
	lines, err := gh.run(ctx, repo, "api", fmt.Sprintf("repos/{owner}/{repo}/pulls/%d/comments?per_page=100", head.Number))
	if err != nil {
		return nil, nil, err
	}
	if len(lines) > maxReviewOut {
		lines = "[]"
	}
	return []byte(out), []byte(lines), nil
}

// MergeRequestReview reads the merge request of the branch and its
// comments with glab, as glab prints them.
func MergeRequestReview(ctx context.Context, repo, branch string) (string, error) {
	glab, err := findHostCLI(ToolPath{}, "glab", "", "")
	if err != nil {
		return "", err
	}
	out, err := glab.run(ctx, repo, "mr", "view", branch, "--comments")
	if err != nil {
		if strings.Contains(strings.ToLower(err.Error()), "no open merge request") || strings.Contains(strings.ToLower(err.Error()), "not found") {
			return "", fmt.Errorf("%w: branch %s has no merge request", ErrNoRequest, branch)
		}
		return "", err
	}
	if len(out) > maxReviewOut {
		out = out[:maxReviewOut] + "\n[kandev: cut]"
	}
	return out, nil
}

func truncateOut(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}
