package tracker

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
)

// Client reads issues. Its zero value works: gh and glab from PATH, run in
// the current directory; Linear at DefaultLinearURL, with no token.
type Client struct {
	// Dir is where gh and glab run ("" = the current directory).
	Dir string
	// LinearURL is Linear's GraphQL endpoint ("" = DefaultLinearURL).
	LinearURL string
	// LinearToken is a Linear API key (LINEAR_API_KEY, linear_api_key).
	LinearToken string
	// HTTP is the client Linear is asked through (nil: one with a timeout).
	HTTP httpDoer
}

// Project is where issues are listed: a GitHub or GitLab repository, or a
// Linear team.
type Project struct {
	Kind string `json:"kind"`
	Host string `json:"host,omitempty"` // a GitLab other than gitlab.com
	Repo string `json:"repo,omitempty"`
	Team string `json:"team,omitempty"` // Linear's team key (ENG)
}

func (p Project) String() string {
	switch p.Kind {
	case Linear:
		return "Linear team " + p.Team
	case GitLab:
		if p.Host != "" {
			return "GitLab project " + p.Host + "/" + p.Repo
		}
		return "GitLab project " + p.Repo
	}
	return "GitHub repository " + p.Repo
}

var linearTeam = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,9}$`)

// LinearTeam is the project of a Linear team by its key.
func LinearTeam(key string) Project {
	return Project{Kind: Linear, Team: strings.ToUpper(strings.TrimSpace(key))}
}

// ProjectOf is the project of a git remote's URL (https://, ssh:// or
// scp-like git@host:path): github.com's repositories, and GitLab's on
// gitlab.com or a host named gitlab.*.
func ProjectOf(remoteURL string) (Project, error) {
	u := strings.TrimSpace(remoteURL)
	host, path := "", ""
	if i := strings.Index(u, "://"); i >= 0 {
		rest := u[i+3:]
		if at := strings.LastIndex(strings.SplitN(rest, "/", 2)[0], "@"); at >= 0 {
			rest = rest[at+1:]
		}
		host, path, _ = strings.Cut(rest, "/")
		if h, _, ok := strings.Cut(host, ":"); ok && strings.HasPrefix(u, "ssh://") {
			host = h
		}
	} else if _, rest, ok := strings.Cut(u, "@"); ok {
		host, path, _ = strings.Cut(rest, ":")
	}
	host = strings.ToLower(host)
	path = strings.TrimSuffix(strings.Trim(path, "/"), ".git")
	if !repoPart.MatchString(path) {
		return Project{}, fmt.Errorf("%w: origin %q names no repository kandev reads issues of", ErrUnknownRepo, remoteURL)
	}
	switch {
	case host == "github.com" || strings.HasPrefix(host, "github."):
		if strings.Count(path, "/") == 1 && host == "github.com" {
			return Project{Kind: GitHub, Repo: path}, nil
		}
	case host == "gitlab.com":
		return Project{Kind: GitLab, Repo: path}, nil
	case strings.HasPrefix(host, "gitlab.") && hostName.MatchString(host):
		return Project{Kind: GitLab, Host: host, Repo: path}, nil
	}
	return Project{}, fmt.Errorf("%w: origin %q is on neither github.com nor a GitLab; for Linear, give --team (or linear_team in config.toml)", ErrUnknownRepo, remoteURL)
}

// RepoOf is the owner/repo (group/project) of a git remote's URL, "" when
// it names none: what a pull request's closing line compares with.
func RepoOf(remoteURL string) string {
	p, err := ProjectOf(remoteURL)
	if err != nil {
		return ""
	}
	return p.Repo
}

// httpDoer is what Linear is asked through (*http.Client).
type httpDoer interface {
	Do(*http.Request) (*http.Response, error)
}
