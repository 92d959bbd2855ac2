package tracker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// cliTimeout bounds each call of a tracker's CLI: it talks to the host.
const cliTimeout = time.Minute

// limited is a writer that keeps the first max bytes and notes the rest.
type limited struct {
	buf  bytes.Buffer
	max  int
	over bool
}

func (l *limited) Write(p []byte) (int, error) {
	if room := l.max - l.buf.Len(); room > 0 {
		if len(p) > room {
			l.buf.Write(p[:room])
			l.over = true
		} else {
			l.buf.Write(p)
		}
	} else if len(p) > 0 {
		l.over = true
	}
	return len(p), nil
}

// cliFault turns what a CLI printed on failure into a fault: it is the
// same few words across gh and glab versions (docs/trackers.md lists
// them); anything else stays the CLI's own message.
type cliFault struct {
	bin, login string // "gh", "gh auth login"
}

// runCLI runs a tracker's CLI (gh or glab) in dir with each argument as
// one argv entry (never a shell), never prompting, bounded in time and
// output, and returns its stdout; a failure is classified.
func (c *Client) runCLI(ctx context.Context, f cliFault, args ...string) ([]byte, error) {
	path, err := exec.LookPath(f.bin)
	if err != nil {
		site := "https://cli.github.com"
		if f.bin == "glab" {
			site = "https://gitlab.com/gitlab-org/cli"
		}
		return nil, fmt.Errorf("%w: %s is not on PATH; install it (%s), run %s, and try again", ErrNoCLI, f.bin, site, f.login)
	}
	ctx, cancel := context.WithTimeout(ctx, cliTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Dir = c.Dir
	cmd.Env = append(cmd.Environ(), "GH_PROMPT_DISABLED=1", "GH_NO_UPDATE_NOTIFIER=1", "GLAB_NO_PROMPT=1",
		"NO_PROMPT=1", "NO_COLOR=1", "GIT_TERMINAL_PROMPT=0", "GH_PAGER=cat", "GLAB_PAGER=cat", "PAGER=cat")
	cmd.WaitDelay = 5 * time.Second
	stdout, stderr := &limited{max: maxOutput}, &limited{max: 4 << 10}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err = cmd.Run()
	if ctx.Err() != nil && err != nil {
		return nil, fmt.Errorf("%w: %s did not answer within %s; check your network and try again", ErrNoNetwork, f.bin, cliTimeout)
	}
	if err != nil {
		return nil, f.classify(err, stderr.buf.String(), stdout.buf.String())
	}
	if stdout.over {
		return nil, fmt.Errorf("%w: %s printed more than %d bytes", ErrBadAnswer, f.bin, maxOutput)
	}
	return stdout.buf.Bytes(), nil
}

// classify words a failed CLI call. glab api prints the host's JSON
// error on stdout, so both streams are read.
func (f cliFault) classify(err error, stderr, stdout string) error {
	// One line: an error is read in a terminal and in JSON alike.
	msg := line(stderr, 400)
	if msg == "" {
		msg = line(stdout, 400)
	}
	if msg == "" {
		msg = err.Error()
	}
	low := strings.ToLower(stderr + "\n" + stdout)
	has := func(words ...string) bool {
		for _, w := range words {
			if strings.Contains(low, w) {
				return true
			}
		}
		return false
	}
	// The host's own phrases first: a repository's name in them may hold
	// the generic words (a "401" in "acme/web401").
	switch {
	case has("error connecting to", "dial tcp", "no such host", "connection refused", "i/o timeout",
		"network is unreachable", "tls handshake timeout", "could not resolve host", "temporary failure in name resolution"):
		return fmt.Errorf("%w: %s could not reach the host (%s); check your network and try again", ErrNoNetwork, f.bin, msg)
	case has("could not resolve to a repository", "project not found", "repository not found"):
		return fmt.Errorf("%w: the repository does not exist, or it is private and your %s login cannot see it (%s); check the name, or log in with an account that has access (%s)", ErrForbidden, f.bin, msg, f.login)
	case has("could not resolve to an issue"):
		return fmt.Errorf("%w: %s", ErrNoIssue, msg)
	case has("auth login", "401", "bad credentials", "unauthorized", "not logged in", "no token", "not authenticated", "authentication required"):
		return fmt.Errorf("%w: %s is not logged in (%s); run %s and try again", ErrNotLoggedIn, f.bin, msg, f.login)
	case has("403", "forbidden", "resource not accessible", "saml"):
		return fmt.Errorf("%w: your %s login may not read this repository's issues (%s); ask for access or log in with an account that has it (%s)", ErrForbidden, f.bin, msg, f.login)
	case has("404", "not found"):
		return fmt.Errorf("%w: %s", ErrNoIssue, msg)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return fmt.Errorf("%s failed (exit %d): %s", f.bin, ee.ExitCode(), msg)
	}
	return fmt.Errorf("%s: %s", f.bin, msg)
}
