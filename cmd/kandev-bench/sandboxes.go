//go:build linux

package main

// Sandboxes (issue 36, docs/sandbox.md): what confining an agent costs at
// its start, side by side in one run of one daemon: a task of the mock
// agent with no sandbox, under bubblewrap, and in a docker container
// whose image `kandev image build` made from this machine's install in
// the same run (no registry). Each figure is from `task start` to the
// agent's first reply (`mock: say ready`): the launch, ACP initialize
// and session/new, and the first prompt's answer; then the agent's own
// MCP call times (get_task_kandev through its kandev mcp, confined with
// it). Rounds interleave the three, so the machine's noise falls on all
// alike. The targets (the bar) are printed beside the gaps:
// bubblewrap within 20 ms of none, docker within 1 s.
//
// Docker is the caller's (DOCKER_HOST, the system's socket) or, as root
// with dockerd installed, one started here as the tests start theirs
// (no bridge, no iptables, its own roots), stopped at the end.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemonclient"
	"github.com/kandev/kandev/internal/dockertest"
)

// sbName is the name -only matches against for this section.
const sbName = "sandbox: session start"

// Targets of the gaps to none (issue 36).
const (
	bwrapTarget  = 20 * time.Millisecond
	dockerTarget = time.Second
)

func benchSandboxes(work string, binaries []binary, runs, calls int) error {
	fmt.Printf("\n## %s by sandbox (`task start` to the mock agent's first reply) and its MCP call (get_task_kandev as the agent times it), p50 / p99 ms; load %s\n", sbName, loadAvg())
	boxes := []string{core.SandboxNone, core.SandboxBwrap, core.SandboxDocker}
	why := map[string]string{}
	if err := bwrapUsable(); err != nil {
		why[core.SandboxBwrap] = err.Error()
	}
	dockerHost, stopDocker, err := dockerHere(work)
	if err != nil {
		why[core.SandboxDocker] = err.Error()
	} else if stopDocker != nil {
		defer stopDocker()
	}
	for _, box := range boxes {
		if w := why[box]; w != "" {
			fmt.Printf("%s skipped: %s\n", box, w)
		}
	}
	fmt.Printf("| %-10s | %-8s | %-26s | %-26s | %-30s |\n", "binary", "sandbox", "session start", "MCP call", "start's p50 beside none's")
	fmt.Printf("|%s|%s|%s|%s|%s|\n", strings.Repeat("-", 12), strings.Repeat("-", 10), strings.Repeat("-", 28), strings.Repeat("-", 28), strings.Repeat("-", 32))
	for _, b := range binaries {
		starts, mcps, err := sandboxesOnce(work, b, boxes, why, dockerHost, runs, calls)
		if err != nil {
			return fmt.Errorf("%s sandboxes: %w", b.name, err)
		}
		none := pct(starts[core.SandboxNone], 0.5)
		for _, box := range boxes {
			if why[box] != "" {
				continue
			}
			gap := "—"
			if box != core.SandboxNone {
				d := pct(starts[box], 0.5) - none
				target := bwrapTarget
				if box == core.SandboxDocker {
					target = dockerTarget
				}
				verdict := "within"
				if d > target {
					verdict = "OVER"
				}
				gap = fmt.Sprintf("%+.1f (%s %s)", float64(d)/float64(time.Millisecond), verdict, target)
			}
			pp := func(ds []time.Duration) string {
				return fmt.Sprintf("%s / %s (n=%d)", msStr(pct(ds, 0.5)), msStr(pct(ds, 0.99)), len(ds))
			}
			fmt.Printf("| %-10s | %-8s | %-26s | %-26s | %-30s |\n", b.name, box, pp(starts[box]), pp(mcps[box]), gap)
		}
	}
	return nil
}

// sandboxesOnce runs rounds of one session per sandbox on one daemon of
// binary b, and returns each sandbox's start times and MCP call times
// (each session's first call, which starts its kandev mcp, left out).
func sandboxesOnce(work string, b binary, boxes []string, skip map[string]string, dockerHost string, runs, calls int) (map[string][]time.Duration, map[string][]time.Duration, error) {
	starts, mcps := map[string][]time.Duration{}, map[string][]time.Duration{}
	dir, err := os.MkdirTemp(work, "sandboxes-")
	if err != nil {
		return nil, nil, err
	}
	env := append(cleanEnv(), "KANDEV_HOME="+dir, "KANDEV_CONFIG="+filepath.Join(dir, "config.toml"),
		"KANDEV_PROFILE=mock", "KANDEV_PERMISSION=allow")
	if dockerHost != "" {
		env = append(env, "DOCKER_HOST="+dockerHost)
	}
	h := &home{bin: b, dir: dir, env: env}
	if _, err := h.start(); err != nil {
		return nil, nil, err
	}
	defer h.stop()
	profileOf := map[string]string{core.SandboxNone: "mock", core.SandboxBwrap: "mock"}
	if skip[core.SandboxDocker] == "" {
		// The agent in a container: the mock agent (this binary) in an
		// image built from this machine's files, offline.
		tag := fmt.Sprintf("kandev-bench-boxed:%d", time.Now().UnixNano())
		for _, args := range [][]string{
			{"profile", "add", "boxed", "--command", b.path, "--arg", "mock-agent", "--sandbox", core.SandboxDocker, "--no-network"},
			{"image", "build", "boxed", "--engine", core.SandboxDocker, "--tag", tag},
		} {
			cmd := exec.Command(b.path, args...)
			cmd.Env, cmd.Dir = env, dir
			if out, err := cmd.CombinedOutput(); err != nil {
				return nil, nil, fmt.Errorf("kandev %s: %v\n%s", strings.Join(args, " "), err, out)
			}
		}
		defer func() {
			cmd := exec.Command("docker", "rmi", "--force", tag)
			cmd.Env = env
			_ = cmd.Run()
		}()
		profileOf[core.SandboxDocker] = "boxed"
	}
	c := daemonclient.Dial(core.Home{Dir: dir}.Socket())
	defer c.Close()
	ctx := context.Background()
	// One session of each first, untimed: the first docker run of a new
	// image, bwrap's first probe of the install and the page cache are
	// not what every later start pays.
	for round := -1; round < runs; round++ {
		for _, box := range boxes {
			if skip[box] != "" {
				continue
			}
			in := api.CreateTaskInput{CWD: dir, Profile: profileOf[box]}
			if box != core.SandboxNone {
				in.Sandbox = box
			}
			s, m, err := sessionOnce(ctx, c, in, calls)
			if err != nil {
				return nil, nil, fmt.Errorf("session under %s: %w", box, err)
			}
			if round >= 0 {
				starts[box], mcps[box] = append(starts[box], s), append(mcps[box], m[1:]...)
			}
		}
	}
	return starts, mcps, nil
}

// dockerHere returns a DOCKER_HOST that answers and, when it started
// that dockerd, how to stop it; or why there is none.
func dockerHere(work string) (string, func(), error) {
	if _, err := exec.LookPath("docker"); err != nil {
		return "", nil, errors.New("docker is not installed")
	}
	for _, h := range []string{os.Getenv("DOCKER_HOST"), "unix:///var/run/docker.sock"} {
		if h != "" && dockertest.Answers(h) {
			return h, nil, nil
		}
	}
	d, err := dockertest.Start(work)
	if err != nil {
		return "", nil, err
	}
	return d.Host, d.Stop, nil
}
