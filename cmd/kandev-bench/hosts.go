//go:build linux

package main

// Hosts (docs/hosts.md): what running an agent on an SSH host costs, side
// by side with the same agent on this machine, in one run of one daemon.
//
//   - session start: from `task start` to the mock agent's first reply
//     (`mock: say ready`): the launch (on the host: the ssh session over
//     the shared master, the forward of mcp.sock, the worktree there),
//     ACP initialize and session/new, and the first prompt's answer.
//   - the same on the host with --sandbox bwrap (ADR 0062): the probe of
//     the host for the sandbox's view and bubblewrap's start added.
//   - MCP call: `mock: calltime N get_task_kandev`, each call timed by
//     the agent itself: its kandev mcp, on the host over the forwarded
//     unix socket, to the daemon and back. Each session's first call
//     (which starts that kandev mcp) is shown apart.
//
// The host is internal/sshtest's loopback sshd (root and /usr/sbin/sshd
// needed); without it the host column says why and is skipped.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemonclient"
	"github.com/kandev/kandev/internal/sshtest"
)

// benchTB lets sshtest run outside a test: Fatal and Skip end the rig's
// start with an error (recovered in startRig), Cleanup runs at close.
type benchTB struct {
	testing.TB
	cleanups []func()
}

type rigStop struct{ msg string }

func (b *benchTB) Helper()                      {}
func (b *benchTB) Cleanup(f func())             { b.cleanups = append(b.cleanups, f) }
func (b *benchTB) Fatal(args ...any)            { panic(rigStop{fmt.Sprint(args...)}) }
func (b *benchTB) Fatalf(f string, args ...any) { panic(rigStop{fmt.Sprintf(f, args...)}) }
func (b *benchTB) Skipf(f string, args ...any)  { panic(rigStop{fmt.Sprintf(f, args...)}) }
func (b *benchTB) Logf(string, ...any)          {}
func (b *benchTB) Errorf(f string, args ...any) { panic(rigStop{fmt.Sprintf(f, args...)}) }
func (b *benchTB) Name() string                 { return "kandev-bench" }
func (b *benchTB) TempDir() string              { d, _ := os.MkdirTemp("", "kb-rig-"); return d }
func (b *benchTB) Setenv(string, string)        {}
func (b *benchTB) Failed() bool                 { return false }
func (b *benchTB) Skipped() bool                { return false }
func (b *benchTB) Log(...any)                   {}
func (b *benchTB) Error(args ...any)            { panic(rigStop{fmt.Sprint(args...)}) }
func (b *benchTB) Skip(args ...any)             { panic(rigStop{fmt.Sprint(args...)}) }
func (b *benchTB) SkipNow()                     { panic(rigStop{"skipped"}) }
func (b *benchTB) FailNow()                     { panic(rigStop{"failed"}) }
func (b *benchTB) Fail()                        {}
func (b *benchTB) Chdir(string)                 {}
func (b *benchTB) Context() context.Context     { return context.Background() }
func (b *benchTB) Attr(string, string)          {}
func (b *benchTB) close() {
	for i := len(b.cleanups) - 1; i >= 0; i-- {
		b.cleanups[i]()
	}
}

// startRig starts the loopback sshd, or says why it cannot.
func startRig() (h *sshtest.Host, tb *benchTB, err error) {
	tb = &benchTB{}
	defer func() {
		if r := recover(); r != nil {
			s, ok := r.(rigStop)
			if !ok {
				panic(r)
			}
			tb.close()
			h, err = nil, errors.New(s.msg)
		}
	}()
	return sshtest.Start(tb), tb, nil
}

func benchHosts(work string, binaries []binary, runs, calls int) error {
	fmt.Printf("\n## a task on this machine and on an SSH host (the loopback sshd): session start (`task start` to the agent's first reply) and MCP call (get_task_kandev as the agent times it) p50/p99 ms\n")
	rig, tb, rigErr := startRig()
	if rigErr != nil {
		fmt.Printf("host column skipped: no loopback sshd: %v\n", rigErr)
	} else {
		defer tb.close()
	}
	fmt.Printf("| %-10s | %-24s | %-24s | %-24s | %-24s | %-24s |\n", "binary", "local: session start", "local: MCP call", "host: session start", "host: MCP call", "host bwrap: session start")
	fmt.Printf("|%s|%s|%s|%s|%s|%s|\n", strings.Repeat("-", 12), strings.Repeat("-", 26), strings.Repeat("-", 26), strings.Repeat("-", 26), strings.Repeat("-", 26), strings.Repeat("-", 26))
	for _, b := range binaries {
		r, err := hostsOnce(work, b, rig, runs, calls)
		if err != nil {
			return fmt.Errorf("%s hosts: %w", b.name, err)
		}
		pp := func(ds []time.Duration) string {
			if len(ds) == 0 {
				return "skipped"
			}
			return fmt.Sprintf("%s / %s (n=%d)", msStr(pct(ds, 0.5)), msStr(pct(ds, 0.99)), len(ds))
		}
		fmt.Printf("| %-10s | %-24s | %-24s | %-24s | %-24s | %-24s |\n", b.name, pp(r.localStart), pp(r.localMCP), pp(r.hostStart), pp(r.hostMCP), pp(r.hostBwrapStart))
		fmt.Printf("(%s: a session's first MCP call, which starts its kandev mcp, apart: p50 %s ms here", b.name, msStr(pct(r.localFirst, 0.5)))
		if r.firstHost > 0 {
			fmt.Printf(", %s ms on the host; the host's first session, with the copy of kandev's binary there: %s ms", msStr(pct(r.hostFirst, 0.5)), msStr(r.firstHost))
		}
		fmt.Println(")")
	}
	return nil
}

type hostsResult struct {
	localStart, localMCP, hostStart, hostMCP []time.Duration
	// hostBwrapStart: session starts on the host under bubblewrap there.
	hostBwrapStart []time.Duration
	// localFirst, hostFirst: each session's first MCP call, which starts
	// the agent's kandev mcp (on the host: over the forward), apart.
	localFirst, hostFirst []time.Duration
	firstHost             time.Duration
}

func hostsOnce(work string, b binary, rig *sshtest.Host, runs, calls int) (hostsResult, error) {
	var res hostsResult
	dir, err := os.MkdirTemp(work, "hosts-")
	if err != nil {
		return res, err
	}
	env := append(cleanEnv(), "KANDEV_HOME="+dir, "KANDEV_CONFIG="+filepath.Join(dir, "config.toml"),
		"KANDEV_PROFILE=mock", "KANDEV_QUESTION_TURN_GRACE=300ms")
	if rig != nil {
		env = append(env, "KANDEV_SSH_CONFIG="+rig.Config)
	}
	h := &home{bin: b, dir: dir, env: env}
	if _, err := h.start(); err != nil {
		return res, err
	}
	defer h.stop()
	c := daemonclient.Dial(core.Home{Dir: dir}.Socket())
	defer c.Close()
	ctx := context.Background()
	if rig != nil {
		if _, err := c.AddHost(ctx, api.HostInput{Name: "lb", SSH: rig.Alias, Dir: rig.RemoteDir + "/kandev"}); err != nil {
			return res, fmt.Errorf("add the loopback host: %w", err)
		}
		// The first session on the host copies kandev there: timed apart.
		s, _, err := sessionOnce(ctx, c, api.CreateTaskInput{CWD: dir, Host: "lb"}, 2)
		if err != nil {
			return res, fmt.Errorf("first session on the host: %w", err)
		}
		res.firstHost = s
	}
	// Interleaved rounds: the machine's noise falls on both alike.
	for range runs {
		for _, host := range []string{"", "lb", "lb+bwrap"} {
			if host != "" && rig == nil {
				continue
			}
			h, box := strings.CutSuffix(host, "+bwrap")
			sb := ""
			if box {
				sb = core.SandboxBwrap
			}
			s, m, err := sessionOnce(ctx, c, api.CreateTaskInput{CWD: dir, Host: h, Sandbox: sb}, calls)
			if err != nil {
				return res, fmt.Errorf("session %s (sandbox %q): %w", hostOrHere(h), sb, err)
			}
			if box {
				res.hostBwrapStart = append(res.hostBwrapStart, s)
			} else if host == "" {
				res.localStart, res.localFirst, res.localMCP = append(res.localStart, s), append(res.localFirst, m[0]), append(res.localMCP, m[1:]...)
			} else {
				res.hostStart, res.hostFirst, res.hostMCP = append(res.hostStart, s), append(res.hostFirst, m[0]), append(res.hostMCP, m[1:]...)
			}
		}
	}
	return res, nil
}

func hostOrHere(h string) string {
	if h == "" {
		return "here"
	}
	return "on host " + h
}

// sessionOnce starts a task made of in (its host "" for here) and times
// its start to the agent's first reply, then reads the agent's own MCP
// call times.
func sessionOnce(ctx context.Context, c *daemonclient.Client, in api.CreateTaskInput, calls int) (time.Duration, []time.Duration, error) {
	in.Title = "bench " + hostOrHere(in.Host)
	t, err := c.CreateTask(ctx, in)
	if err != nil {
		return 0, nil, err
	}
	ectx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	evs, err := c.Events(ectx, api.EventsInput{TaskID: t.ID})
	if err != nil {
		return 0, nil, err
	}
	start := time.Now()
	if _, err := c.StartTask(ctx, t.ID, api.StartTaskInput{Prompt: "mock: say ready\nmock: calltime " + strconv.Itoa(calls) + " get_task_kandev"}); err != nil {
		return 0, nil, err
	}
	var took time.Duration
	var mcp []time.Duration
	for ev := range evs {
		text := ""
		if m := ev.Message; m != nil && m.Kind == core.MsgAgent {
			text = m.Text
		} else if a := ev.Append; a != nil && a.Kind == core.MsgAgent {
			text = a.Text
		}
		if took == 0 && strings.Contains(text, "ready") {
			took = time.Since(start)
		}
		if i := strings.Index(text, "calltime get_task_kandev: "); i >= 0 {
			for _, f := range strings.Fields(text[i+len("calltime get_task_kandev: "):]) {
				us, err := strconv.Atoi(f)
				if err != nil {
					break
				}
				mcp = append(mcp, time.Duration(us)*time.Microsecond)
			}
			break
		}
		if strings.Contains(text, "error ") {
			return 0, nil, fmt.Errorf("the agent said %q", text)
		}
	}
	if took == 0 || len(mcp) < 2 {
		got, _ := c.GetTask(ctx, t.ID)
		return 0, nil, fmt.Errorf("no reply from the agent (task %s waiting %q session %+v)", t.ID, got.Waiting, got.Session)
	}
	if _, err := c.StopTask(ctx, t.ID, api.StopTaskInput{}); err != nil {
		return 0, nil, err
	}
	if _, err := c.ArchiveTask(ctx, t.ID, api.ArchiveTaskInput{}); err != nil {
		return 0, nil, err
	}
	return took, mcp, nil
}
