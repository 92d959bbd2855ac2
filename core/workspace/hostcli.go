package workspace

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// HostFault is what went wrong with a call of a git host's CLI (gh,
// glab), read from its exit status and what it printed.
type HostFault string

// The faults a host CLI's failure is classified as.
const (
	FaultNotInstalled HostFault = "not installed"
	FaultNotLoggedIn  HostFault = "not logged in"
	FaultNoNetwork    HostFault = "no network"
	FaultNoRepository HostFault = "no such repository"
	FaultRefused      HostFault = "refused"
	// FaultFailed is a failure none of the above explains: the CLI's own
	// message is given as it is.
	FaultFailed HostFault = "failed"
)

// ToolPath is where the daemon looks for a host's CLI and the PATH the CLI
// runs with (it runs git itself): the PATH of the command that asked, or
// the daemon's own (ADR 0071).
type ToolPath struct {
	// Path is the caller's PATH; "" is the daemon's own.
	Path string
}

// resolve is the PATH searched and the words that say whose it is.
func (tp ToolPath) resolve() (path, whose string) {
	if tp.Path != "" {
		return tp.Path, "the PATH of the command that asked"
	}
	return os.Getenv("PATH"), "the daemon's own PATH (the one it started with: kandev daemon restart picks up a changed one)"
}

// HostCLIError is a classified failure of a host's CLI. Its message says
// the cause, the next step and which PATH was searched; it names GitHub or
// GitLab only when the remote is on it.
type HostCLIError struct {
	Fault HostFault
	Bin   string // gh, glab
	Step  string // "auth status", "pr create"
	// Detail is the CLI's own line (stderr, else stdout, else the exit).
	Detail string
	Exit   int
	// Path is the PATH searched, Whose says whose it is, Found is the
	// binary that ran ("" when none was found).
	Path, Whose, Found string
	// Remote is the URL of the remote the request is for ("" unknown).
	Remote string
	// Head is the pushed branch, for the not-installed fallback.
	Head string
}

// Unwrap makes a fault the operator fixes on this machine (install, log
// in, the network) an ErrNoHostCLI; the others are the host's answer.
func (e *HostCLIError) Unwrap() error {
	switch e.Fault {
	case FaultNotInstalled, FaultNotLoggedIn, FaultNoNetwork:
		return ErrNoHostCLI
	}
	return nil
}

// service is the host the remote is on, by name ("GitHub", "GitLab"), or
// "" when the remote is elsewhere (a local path, another host).
func (e *HostCLIError) service() string {
	switch HostOf(e.Remote) {
	case HostGitHub:
		return "GitHub"
	case HostGitLab:
		return "GitLab"
	}
	return ""
}

func (e *HostCLIError) product() string {
	if e.Bin == "glab" {
		return "GitLab's CLI"
	}
	return "GitHub's CLI"
}

func (e *HostCLIError) site() string {
	if e.Bin == "glab" {
		return "https://gitlab.com/gitlab-org/cli"
	}
	return "https://cli.github.com"
}

// hostName is the host as the message names it: the service, else the
// remote itself.
func (e *HostCLIError) hostName() string {
	if s := e.service(); s != "" {
		return s
	}
	if e.Remote != "" {
		return "the host of " + e.Remote
	}
	return "the host"
}

func (e *HostCLIError) Error() string {
	bin := e.Bin
	ran := fmt.Sprintf(" [%s %s: %s, found on %s]", bin, e.Step, e.Found, e.Whose)
	switch e.Fault {
	case FaultNotInstalled:
		msg := fmt.Sprintf("%s (%s) is not installed: it was not found on %s, PATH=%s; install it (%s), run %s auth login, and try again",
			bin, e.product(), e.Whose, e.Path, e.site(), bin)
		if e.Head != "" {
			msg += "; or open the request for the pushed branch " + e.Head + " by hand"
			if s := e.service(); s != "" {
				msg += " on " + s
			}
		}
		return msg
	case FaultNotLoggedIn:
		return fmt.Sprintf("%s is not logged in (%s); run %s auth login and try again%s", bin, e.Detail, bin, ran)
	case FaultNoNetwork:
		return fmt.Sprintf("%s could not reach %s (%s); check the network and try again%s", bin, e.hostName(), e.Detail, ran)
	case FaultNoRepository:
		if e.service() == "" && e.Remote != "" {
			return fmt.Sprintf("the remote %s is not a repository on %s, which %s opens requests on (%s); push to a remote there (--remote NAME) or open the request by hand%s",
				e.Remote, map[string]string{"gh": "GitHub", "glab": "GitLab"}[bin], bin, e.Detail, ran)
		}
		return fmt.Sprintf("%s found no such repository on %s for %s (%s): check the remote's URL, or log in with an account that can see it (%s auth login)%s",
			bin, e.hostName(), cmp.Or(e.Remote, "the remote"), e.Detail, bin, ran)
	case FaultRefused:
		return fmt.Sprintf("%s refused %s %s (%s)%s", e.hostName(), bin, e.Step, e.Detail, ran)
	}
	return fmt.Sprintf("%s %s failed (exit %d): %s%s", bin, e.Step, e.Exit, e.Detail, ran)
}

// ClassifyHostCLI reads a failed host CLI call: its exit code and what it
// printed on stderr and stdout. gh exits 4 when it needs a login; the
// words are the same few across gh and glab versions. The network is
// looked for first: a host it cannot reach also fails auth status, which
// must not read as "not logged in" (issue 38); then the repository, then
// the login, then the host's refusals.
func ClassifyHostCLI(exit int, stderr, stdout string) HostFault {
	low := strings.ToLower(stderr + "\n" + stdout)
	has := func(words ...string) bool {
		for _, w := range words {
			if strings.Contains(low, w) {
				return true
			}
		}
		return false
	}
	switch {
	case has("error connecting to", "dial tcp", "no such host", "connection refused", "i/o timeout",
		"network is unreachable", "tls handshake timeout", "could not resolve host", "temporary failure in name resolution",
		"timeout trying to", "context deadline exceeded", "connection reset", "check your internet connection"):
		return FaultNoNetwork
	// Before the login: gh's "none of the git remotes … point to a known
	// GitHub host" goes on to suggest gh auth login.
	case has("could not resolve to a repository", "repository not found", "project not found",
		"none of the git remotes configured for this repository", "not a git repository", "no git remotes found",
		"http 404", "404 not found"):
		return FaultNoRepository
	case exit == 4, has("not logged in", "not logged into", "gh auth login", "glab auth login", "bad credentials",
		"401", "authentication required", "no token", "token is invalid", "failed to log in", "token in keyring is invalid", "not authenticated"):
		return FaultNotLoggedIn
	case has("already exists", "no commits between", "http 422", "http 403", "validation failed", "forbidden",
		"resource not accessible", "must be a collaborator", "permission", "protected branch", "was submitted too quickly"):
		return FaultRefused
	}
	return FaultFailed
}

// hostCLI runs one host CLI found on a ToolPath.
type hostCLI struct {
	bin, found, path, whose, remote, head string
}

// findHostCLI looks bin up on tp's PATH. Only absolute entries are
// searched: the daemon's directory is not the caller's.
func findHostCLI(tp ToolPath, bin, remote, head string) (*hostCLI, error) {
	path, whose := tp.resolve()
	h := &hostCLI{bin: bin, path: path, whose: whose, remote: remote, head: head}
	for _, dir := range filepath.SplitList(path) {
		if !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, bin)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			h.found = p
			return h, nil
		}
	}
	return nil, &HostCLIError{Fault: FaultNotInstalled, Bin: bin, Path: path, Whose: whose, Remote: remote, Head: head}
}

// run runs the CLI in dir, bounded, never prompting, with the PATH it was
// found on, and returns its stdout; a failure is a classified
// *HostCLIError.
func (h *hostCLI) run(ctx context.Context, dir string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, hostTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, h.found, args...)
	cmd.Dir = dir
	cmd.Env = append(withoutPath(cmd.Environ()), "PATH="+h.path,
		"GH_PROMPT_DISABLED=1", "GH_NO_UPDATE_NOTIFIER=1", "GLAB_NO_PROMPT=1", "NO_PROMPT=1", "NO_COLOR=1", "GIT_TERMINAL_PROMPT=0")
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err == nil {
		return stdout.String(), nil
	}
	step := strings.Join(args[:min(2, len(args))], " ")
	e := &HostCLIError{Bin: h.bin, Step: step, Path: h.path, Whose: h.whose, Found: h.found, Remote: h.remote, Head: h.head, Exit: -1}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		e.Exit = ee.ExitCode()
	}
	e.Detail = oneLine(stderr.String(), 400)
	if e.Detail == "" {
		e.Detail = oneLine(stdout.String(), 400)
	}
	if e.Detail == "" {
		e.Detail = err.Error()
	}
	if ctx.Err() != nil {
		e.Fault, e.Detail = FaultNoNetwork, fmt.Sprintf("no answer within %s", hostTimeout)
	} else {
		e.Fault = ClassifyHostCLI(e.Exit, stderr.String(), stdout.String())
	}
	return stdout.String(), e
}

// withoutPath drops PATH from env: the CLI gets the one it was found on.
func withoutPath(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, "PATH=") {
			out = append(out, kv)
		}
	}
	return out
}

// oneLine is s on one line, at most n bytes: an error is read in a
// terminal and in JSON alike.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}
