package hosts_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kandev/kandev/core/agent"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemon/daemontest"
	"github.com/kandev/kandev/core/hosts"
	"github.com/kandev/kandev/internal/sshtest"
)

func TestMain(m *testing.M) { daemontest.Main(m) }

const wait = 30 * time.Second

func TestParseDest(t *testing.T) {
	for in, want := range map[string]hosts.Dest{
		"box":                {Host: "box"},
		"me@box":             {User: "me", Host: "box"},
		"me@box:2222":        {User: "me", Host: "box", Port: 2222},
		"127.0.0.1:22":       {Host: "127.0.0.1", Port: 22},
		"me@[10.0.0.1]:2200": {User: "me", Host: "10.0.0.1", Port: 2200},
	} {
		got, err := hosts.ParseDest(in)
		if err != nil || got != want {
			t.Errorf("ParseDest(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	// Anything ssh would read as an option, or that no host has, is refused.
	for _, in := range []string{"", "-oProxyCommand=x", "me@-box", "-me@box", "box:0", "box:x", "a b", "x/y", "me@", "a\nb"} {
		if _, err := hosts.ParseDest(in); err == nil {
			t.Errorf("ParseDest(%q) accepted", in)
		}
	}
}

func loopback(t *testing.T) (*sshtest.Host, *hosts.Pool, hosts.Target) {
	h := sshtest.Start(t)
	dir, err := os.MkdirTemp("", "kh-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	p := &hosts.Pool{Dir: filepath.Join(dir, "ssh"), Config: h.Config}
	t.Cleanup(p.Close)
	return h, p, hosts.Target{Name: "lb", Dest: hosts.Dest{Host: h.Alias}}
}

// masters lists the ssh processes serving the pool's control socket.
func masters(t *testing.T, p *hosts.Pool) []string {
	out, _ := exec.Command("pgrep", "-f", "ControlPath="+p.ControlPath("lb")).Output()
	return strings.Fields(string(out))
}

// TestCheckAndEnsureBinary: a fresh host has git but no kandev; the binary
// is copied once (by hash), then runs there and is current; every command
// shares one master, which Close ends.
func TestCheckAndEnsureBinary(t *testing.T) {
	h, p, tgt := loopback(t)
	ctx := context.Background()
	bin := daemontest.Binary(t)
	hash, err := hosts.FileSHA256(bin)
	if err != nil {
		t.Fatal(err)
	}
	dir := h.RemoteDir + "/kandev"
	cmds := []api.HostCommand{{Profile: "mock", Command: "sh"}, {Profile: "gone", Command: "no-such-agent-cli"}}
	c := hosts.Check(ctx, p, tgt, dir, cmds, hash)
	if !c.Reachable || c.Error != "" {
		t.Fatalf("check: %+v", c)
	}
	if c.Kandev.Present || c.Kandev.Current || c.Kandev.Path != dir+"/bin/kandev" {
		t.Fatalf("kandev before copy: %+v", c.Kandev)
	}
	if !strings.HasPrefix(c.Git, "git version") {
		t.Fatalf("git = %q", c.Git)
	}
	if c.Agents[0].Path == "" || c.Agents[1].Path != "" {
		t.Fatalf("agents = %+v", c.Agents)
	}
	copied, err := hosts.EnsureBinary(ctx, p, tgt, dir, bin, hash)
	if err != nil || !copied {
		t.Fatalf("EnsureBinary = %v, %v", copied, err)
	}
	copied, err = hosts.EnsureBinary(ctx, p, tgt, dir, bin, hash)
	if err != nil || copied {
		t.Fatalf("second EnsureBinary = %v, %v; want no copy", copied, err)
	}
	c = hosts.Check(ctx, p, tgt, dir, nil, hash)
	if !c.Kandev.Present || !c.Kandev.Current || !strings.HasPrefix(c.Kandev.Version, "kandev ") {
		t.Fatalf("kandev after copy: %+v", c.Kandev)
	}
	// The copy is the remote account's, and of another build it is stale.
	if st, err := os.Stat(dir + "/bin/kandev"); err != nil || st.Mode().Perm() != 0o755 {
		t.Fatalf("remote binary: %v %v", st, err)
	}
	if c := hosts.Check(ctx, p, tgt, dir, nil, strings.Repeat("0", 64)); c.Kandev.Current {
		t.Fatal("a binary of another hash counted as current")
	}
	if n := len(masters(t, p)); n != 1 {
		t.Fatalf("%d master connections, want 1", n)
	}
	p.Close()
	// Close returns once the master has ended, not once it was asked to.
	if m := masters(t, p); len(m) != 0 {
		t.Fatalf("masters left after Close: %v", m)
	}
}

// TestUnreachable: a stopped sshd and an unknown host key are both
// UnreachableError carrying ssh's own words.
func TestUnreachable(t *testing.T) {
	h, p, tgt := loopback(t)
	ctx := context.Background()
	h.Stop()
	err := p.Connect(ctx, tgt)
	var ue *hosts.UnreachableError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "Connection refused") {
		t.Fatalf("stopped sshd: %v", err)
	}
	h.Start()
	if err := p.Connect(ctx, tgt); err != nil {
		t.Fatalf("after restart: %v", err)
	}
	p.Close()

	// The same host, its key no longer known: verification fails closed.
	if err := os.WriteFile(h.KnownHosts, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	err = p.Connect(ctx, tgt)
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "Host key verification failed") {
		t.Fatalf("unknown host key: %v", err)
	}
}

// TestKillSessionOnHost: the teardown on a host ends every process that
// carries the session's marker, one that left the ssh session (setsid,
// stdin closed, ignoring SIGTERM and SIGHUP) included, and leaves the
// processes of another session alone.
func TestKillSessionOnHost(t *testing.T) {
	h, p, target := loopback(t)
	ctx := context.Background()
	start := func(sid string) {
		t.Helper()
		// The shell sets the marker, then the sleeper detaches from the
		// ssh session entirely.
		out, err := p.Script(ctx, target, "KANDEV_SESSION_ID="+hosts.Quote(sid)+" setsid sh -c 'trap \"\" TERM HUP; exec sleep 300' </dev/null >/dev/null 2>&1 &\necho started\n")
		if err != nil || strings.TrimSpace(out) != "started" {
			t.Fatalf("start a marked process on the host: %q %v", out, err)
		}
	}
	start("s-kill")
	start("s-keep")
	daemontest.Eventually(t, wait, "the marked processes to run as the remote user", func() bool {
		return len(agent.SessionProcs("s-kill")) == 1 && len(agent.SessionProcs("s-keep")) == 1
	})
	for _, pid := range agent.SessionProcs("s-kill") {
		var st syscall.Stat_t
		if err := syscall.Stat("/proc/"+strconv.Itoa(pid), &st); err != nil || int(st.Uid) != h.RemoteUID {
			t.Fatalf("process %d is not the remote user's: %+v %v", pid, st, err)
		}
	}
	sock := h.RemoteDir + "/s-kill.sock"
	if err := os.WriteFile(sock, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	r := &hosts.Remote{Pool: p, Target: target, Dir: h.RemoteDir + "/kandev"}
	if err := r.KillSession(ctx, "s-kill", sock); err != nil {
		t.Fatalf("KillSession: %v", err)
	}
	// KillSession returns once they are gone; nothing to wait for.
	if left := agent.SessionProcs("s-kill"); len(left) != 0 {
		t.Fatalf("processes of the session left on the host: %v", left)
	}
	if _, err := os.Stat(sock); err == nil {
		t.Fatal("the session's socket is left")
	}
	if keep := agent.SessionProcs("s-keep"); len(keep) != 1 {
		t.Fatalf("another session's process: %v, want it alive", keep)
	}
	if err := r.KillSession(ctx, "s-keep", h.RemoteDir+"/none.sock"); err != nil || len(agent.SessionProcs("s-keep")) != 0 {
		t.Fatalf("KillSession s-keep: %v, left %v", err, agent.SessionProcs("s-keep"))
	}
}

// TestSweepSessionsOnHost: the host's part of the startup sweep ends every
// detached process of the sessions named, removes their sockets, says how
// many it killed, and leaves other sessions alone.
func TestSweepSessionsOnHost(t *testing.T) {
	h, p, target := loopback(t)
	ctx := context.Background()
	dir := h.RemoteDir + "/kandev"
	for _, sid := range []string{"s-a", "s-a", "s-b", "s-keep"} {
		out, err := p.Script(ctx, target, "KANDEV_SESSION_ID="+hosts.Quote(sid)+" setsid sh -c 'trap \"\" TERM HUP; exec sleep 300' </dev/null >/dev/null 2>&1 &\necho started\n")
		if err != nil || strings.TrimSpace(out) != "started" {
			t.Fatalf("start a marked process on the host: %q %v", out, err)
		}
	}
	daemontest.Eventually(t, wait, "the marked processes to run", func() bool {
		return len(agent.SessionProcs("s-a")) == 2 && len(agent.SessionProcs("s-b")) == 1 && len(agent.SessionProcs("s-keep")) == 1
	})
	if out, err := p.Script(ctx, target, "mkdir -p "+hosts.Quote(dir+"/run")+" && : > "+hosts.Quote(dir+"/run/s-a.sock")+"\n"); err != nil {
		t.Fatalf("make a socket file: %q %v", out, err)
	}
	n, err := hosts.SweepSessions(ctx, p, target, dir, []string{"s-a", "s-b", "s-none"})
	if err != nil || n != 3 {
		t.Fatalf("SweepSessions: %d %v, want 3 killed", n, err)
	}
	if left := append(agent.SessionProcs("s-a"), agent.SessionProcs("s-b")...); len(left) != 0 {
		t.Fatalf("processes of the swept sessions left: %v", left)
	}
	if _, err := os.Stat(dir + "/run/s-a.sock"); err == nil {
		t.Fatal("the swept session's socket is left")
	}
	if keep := agent.SessionProcs("s-keep"); len(keep) != 1 {
		t.Fatalf("another session's process: %v, want it alive", keep)
	}
	if n, err := hosts.SweepSessions(ctx, p, target, dir, []string{"s-keep"}); err != nil || n != 1 || len(agent.SessionProcs("s-keep")) != 0 {
		t.Fatalf("SweepSessions s-keep: %d %v, left %v", n, err, agent.SessionProcs("s-keep"))
	}
}

// Uploads of one file at once (sessions starting together on a fresh host
// each copy kandev there) all succeed, leave the whole file and no
// temporary one behind (issue 39's soak: a shared "$f.part" had each copy
// delete or rename the others').
func TestConcurrentUploadsOfOneFile(t *testing.T) {
	h, p, target := loopback(t)
	ctx := context.Background()
	if err := p.Connect(ctx, target); err != nil {
		t.Fatal(err)
	}
	body := strings.Repeat("kandev binary\n", 1<<16) // ~900 KB: copies overlap
	path := filepath.Join(h.RemoteDir, "bin", "kandev")
	errs := make(chan error, 8)
	for range 8 {
		go func() { errs <- p.UploadExpr(ctx, target, strings.NewReader(body), path) }()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Errorf("an upload failed: %v", err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil || string(b) != body {
		t.Fatalf("the file after the uploads: %d bytes, err %v", len(b), err)
	}
	if left, _ := filepath.Glob(path + ".part*"); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}
