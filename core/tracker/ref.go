// Package tracker reads issues from the trackers teams keep their work in:
// GitHub and GitLab through their own CLIs (gh, glab), run as the user so
// their login is the user's, and Linear through its GraphQL API with the
// user's token. Everything a tracker returns is untrusted text: it is
// bounded and cleaned of terminal controls here, and only ever passed to a
// program as one argument, never through a shell (docs/trackers.md).
package tracker

import (
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

// Tracker kinds, as a task's source records them.
const (
	GitHub = "github"
	GitLab = "gitlab"
	Linear = "linear"
)

// Ref names one issue. Its canonical form (String) is what a task's source
// records and what the once-only rule compares.
type Ref struct {
	Kind string `json:"kind"`
	// Host is a GitLab instance other than gitlab.com ("" = gitlab.com;
	// always "" for GitHub and Linear).
	Host string `json:"host,omitempty"`
	// Repo is owner/repo (GitHub) or group/.../project (GitLab).
	Repo string `json:"repo,omitempty"`
	// Number is the issue's number in its repository (GitHub, GitLab).
	Number int `json:"number,omitempty"`
	// Key is a Linear issue's identifier, TEAM-123.
	Key string `json:"key,omitempty"`
}

var (
	repoPart  = regexp.MustCompile(`^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)+$`)
	linearKey = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,9}-[1-9][0-9]{0,8}$`)
	hostName  = regexp.MustCompile(`^[A-Za-z0-9.-]+(:[0-9]+)?$`)
)

// Parse reads an issue reference: an issue's URL on github.com, on a
// GitLab (gitlab.com, or any host with /-/issues/ in the path) or on
// linear.app, or a short form gh:owner/repo#12, gl:group/project#7,
// gl@HOST:group/project#7 (a GitLab of its own) or linear:ENG-123.
func Parse(s string) (Ref, error) {
	s = strings.TrimSpace(s)
	if len(s) > 1024 {
		return Ref{}, fmt.Errorf("issue reference is %d bytes long; an issue's URL or gh:owner/repo#N, gl:group/project#N, linear:TEAM-N", len(s))
	}
	switch {
	case strings.HasPrefix(s, "https://") || strings.HasPrefix(s, "http://"):
		return parseURL(s)
	case strings.HasPrefix(s, "gh:"):
		return parseShort(GitHub, "", s[3:], s)
	case strings.HasPrefix(s, "gl:"):
		return parseShort(GitLab, "", s[3:], s)
	case strings.HasPrefix(s, "gl@"):
		host, rest, ok := strings.Cut(s[3:], ":")
		if !ok || !hostName.MatchString(host) {
			return Ref{}, badRef(s)
		}
		return parseShort(GitLab, host, rest, s)
	case strings.HasPrefix(s, "linear:"):
		return linearRef(s[len("linear:"):], s)
	}
	return Ref{}, badRef(s)
}

func badRef(s string) error {
	return fmt.Errorf("%q is not an issue reference: give an issue's URL (github.com, a GitLab, linear.app) or gh:owner/repo#12, gl:group/project#7, gl@gitlab.example.com:group/project#7, linear:ENG-123", s)
}

func parseShort(kind, host, rest, s string) (Ref, error) {
	repo, num, ok := strings.Cut(rest, "#")
	if !ok || !repoPart.MatchString(repo) {
		return Ref{}, badRef(s)
	}
	if kind == GitHub && strings.Count(repo, "/") != 1 {
		return Ref{}, badRef(s)
	}
	n, err := issueNumber(num)
	if err != nil {
		return Ref{}, badRef(s)
	}
	if strings.EqualFold(host, "gitlab.com") {
		host = ""
	}
	return Ref{Kind: kind, Host: strings.ToLower(host), Repo: repo, Number: n}, nil
}

func linearRef(key, s string) (Ref, error) {
	if !linearKey.MatchString(key) {
		return Ref{}, badRef(s)
	}
	return Ref{Kind: Linear, Key: strings.ToUpper(key)}, nil
}

func issueNumber(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 || n > 1<<31-1 || strings.HasPrefix(s, "+") || strings.HasPrefix(s, "0") {
		return 0, fmt.Errorf("bad issue number %q", s)
	}
	return n, nil
}

// parseURL reads an issue's URL: https://github.com/o/r/issues/12,
// https://HOST/group/project/-/issues/7 (or /-/work_items/7),
// https://linear.app/WORKSPACE/issue/ENG-123/title-slug.
func parseURL(s string) (Ref, error) {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.User != nil {
		return Ref{}, badRef(s)
	}
	host := strings.ToLower(u.Host)
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	switch {
	case host == "github.com" || host == "www.github.com":
		if len(parts) == 4 && parts[2] == "issues" {
			return parseShort(GitHub, "", parts[0]+"/"+parts[1]+"#"+parts[3], s)
		}
	case host == "linear.app":
		if len(parts) >= 3 && parts[1] == "issue" {
			return linearRef(parts[2], s)
		}
	default:
		// A GitLab anywhere: GROUP/.../PROJECT/-/issues/N.
		if n := len(parts); n >= 5 && parts[n-3] == "-" && (parts[n-2] == "issues" || parts[n-2] == "work_items") && hostName.MatchString(host) {
			return parseShort(GitLab, host, strings.Join(parts[:n-3], "/")+"#"+parts[n-1], s)
		}
	}
	return Ref{}, badRef(s)
}

// String is the canonical form: gh:owner/repo#12, gl:group/project#7,
// gl@HOST:group/project#7, linear:ENG-123.
func (r Ref) String() string {
	switch r.Kind {
	case GitHub:
		return fmt.Sprintf("gh:%s#%d", r.Repo, r.Number)
	case GitLab:
		if r.Host != "" {
			return fmt.Sprintf("gl@%s:%s#%d", r.Host, r.Repo, r.Number)
		}
		return fmt.Sprintf("gl:%s#%d", r.Repo, r.Number)
	case Linear:
		return "linear:" + r.Key
	}
	return ""
}

// Short is how the tracker itself writes the issue: owner/repo#12,
// group/project#7, ENG-123.
func (r Ref) Short() string {
	if r.Kind == Linear {
		return r.Key
	}
	return fmt.Sprintf("%s#%d", r.Repo, r.Number)
}

// URL is the issue's web address as kandev builds it from the reference
// (the tracker's own URL is preferred where it gave one; Linear's needs
// the workspace, which only the tracker knows).
func (r Ref) URL() string {
	switch r.Kind {
	case GitHub:
		return fmt.Sprintf("https://github.com/%s/issues/%d", r.Repo, r.Number)
	case GitLab:
		host := r.Host
		if host == "" {
			host = "gitlab.com"
		}
		return fmt.Sprintf("https://%s/%s/-/issues/%d", host, r.Repo, r.Number)
	}
	return ""
}

// ClosingLine is what a pull (or merge) request's body says so that
// merging it closes the issue: "Closes #12" in the issue's own repository,
// "Closes owner/repo#12" from another (GitHub and GitLab alike), "Fixes
// ENG-123" for Linear (one of its magic words, which its GitHub and
// GitLab integrations read). prRepo is the request's repository as
// owner/repo ("" when unknown: the qualified form, which works from
// anywhere on the same host).
func (r Ref) ClosingLine(prRepo string) string {
	switch r.Kind {
	case GitHub, GitLab:
		if prRepo != "" && strings.EqualFold(prRepo, r.Repo) {
			return fmt.Sprintf("Closes #%d", r.Number)
		}
		return "Closes " + r.Short()
	case Linear:
		return "Fixes " + r.Key
	}
	return ""
}
