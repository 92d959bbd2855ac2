// Package sshtest runs a private sshd on the loopback interface for tests of
// kandev's SSH hosts: its own host key, config and port, a second local user
// as the remote account with key authentication, and an ssh_config plus a
// known_hosts file the test wrote, so the client verifies the host key as it
// would for a real host (never StrictHostKeyChecking=no).
//
// Outside CI a machine without root or /usr/sbin/sshd skips these tests; in
// CI (CI set) that is a failure, because .ci/run installs openssh-server.
package sshtest

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// RemoteUser is the local account that plays the remote side. One account
// serves every test: each test's files live in a directory of its own in
// the account's home and its processes are told apart by session marker.
const RemoteUser = "kandevremote"

// SSHD is the sshd binary Debian's openssh-server installs.
var SSHD = "/usr/sbin/sshd"

// Host is a running sshd and what a client needs to reach it.
type Host struct {
	t testing.TB
	// Alias is the Host entry in Config that names this sshd.
	Alias string
	Addr  string // 127.0.0.1
	Port  int
	User  string
	// Config is an ssh_config for `ssh -F`: Alias with its port, user,
	// identity and the test's known_hosts, StrictHostKeyChecking yes.
	Config     string
	Identity   string
	KnownHosts string
	// RemoteDir is a directory of this test's own in the remote account's
	// home, owned by that account: a host's --dir for the test.
	RemoteDir string
	// RemoteUID is the remote account's uid.
	RemoteUID int

	dir     string
	cfgPath string
	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{}
}

func skipOrFail(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("sshtest: "+format+" (CI installs openssh-server and runs as root)", args...)
	}
	t.Skipf("sshtest: "+format, args...)
}

// Start runs an sshd for the test and stops it when the test ends.
func Start(t testing.TB) *Host {
	t.Helper()
	if os.Geteuid() != 0 {
		skipOrFail(t, "not root: cannot run sshd or add the remote account")
	}
	if _, err := os.Stat(SSHD); err != nil {
		skipOrFail(t, "no %s: %v", SSHD, err)
	}
	for _, tool := range []string{"ssh", "ssh-keygen"} {
		if _, err := exec.LookPath(tool); err != nil {
			skipOrFail(t, "no %s: %v", tool, err)
		}
	}
	u := ensureUser(t)
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)

	// Short: the ControlMaster sockets kandev makes live under KANDEV_HOME,
	// not here, but sshd's own paths are kept short too.
	dir, err := os.MkdirTemp("", "sshd-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })

	h := &Host{t: t, Addr: "127.0.0.1", User: RemoteUser, RemoteUID: uid, dir: dir}
	h.Alias = "kandev-loopback-" + randHex(4)
	hostKey := filepath.Join(dir, "host_ed25519")
	h.Identity = filepath.Join(dir, "id_ed25519")
	for _, k := range []string{hostKey, h.Identity} {
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "kandev-test", "-f", k).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen: %v\n%s", err, out)
		}
	}

	// authorized_keys in the account's home, under a directory of this
	// test's own, so sshd's StrictModes checks (owner, no group or world
	// write on every component up to the home) hold as on a real host.
	h.RemoteDir = filepath.Join(u.HomeDir, "kt-"+randHex(6))
	if err := os.Mkdir(h.RemoteDir, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(h.RemoteDir) })
	pub, err := os.ReadFile(h.Identity + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	authKeys := filepath.Join(h.RemoteDir, "authorized_keys")
	if err := os.WriteFile(authKeys, pub, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{h.RemoteDir, authKeys} {
		if err := os.Chown(p, uid, gid); err != nil {
			t.Fatal(err)
		}
	}

	// sshd's privilege separation directory (Debian's package makes it at
	// boot; a container may not have it).
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		t.Fatal(err)
	}

	h.Port = freePort(t)
	h.cfgPath = filepath.Join(dir, "sshd_config")
	// AllowTcpForwarding remote: sshd applies that option's remote half to
	// unix-socket forwards too ("no" refuses kandev's -R of mcp.sock even
	// with AllowStreamLocalForwarding yes); kandev itself forwards no TCP.
	sshdCfg := fmt.Sprintf(`ListenAddress 127.0.0.1:%d
HostKey %s
PidFile %s
AuthorizedKeysFile %s
AllowUsers %s
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin no
UsePAM no
StrictModes yes
AllowTcpForwarding remote
AllowStreamLocalForwarding yes
StreamLocalBindUnlink yes
X11Forwarding no
PrintMotd no
LogLevel VERBOSE
`, h.Port, hostKey, filepath.Join(dir, "sshd.pid"), authKeys, RemoteUser)
	if err := os.WriteFile(h.cfgPath, []byte(sshdCfg), 0o600); err != nil {
		t.Fatal(err)
	}

	hostPub, err := os.ReadFile(hostKey + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(string(hostPub))
	h.KnownHosts = filepath.Join(dir, "known_hosts")
	known := fmt.Sprintf("[127.0.0.1]:%d %s %s\n", h.Port, fields[0], fields[1])
	if err := os.WriteFile(h.KnownHosts, []byte(known), 0o600); err != nil {
		t.Fatal(err)
	}
	h.Config = filepath.Join(dir, "ssh_config")
	clientCfg := fmt.Sprintf(`Host %s
  HostName 127.0.0.1
  Port %d
  User %s
  IdentityFile %s
  IdentitiesOnly yes
  UserKnownHostsFile %s
  GlobalKnownHostsFile /dev/null
  StrictHostKeyChecking yes
  BatchMode yes
  ConnectTimeout 10
`, h.Alias, h.Port, RemoteUser, h.Identity, h.KnownHosts)
	if err := os.WriteFile(h.Config, []byte(clientCfg), 0o600); err != nil {
		t.Fatal(err)
	}

	h.Start()
	t.Cleanup(h.Stop)
	return h
}

// Start (re)starts the sshd on its port and waits until it accepts a login.
func (h *Host) Start() {
	h.t.Helper()
	h.mu.Lock()
	if h.cmd != nil {
		h.mu.Unlock()
		return
	}
	// -D: stay in the foreground, so the test owns (and ends) the process;
	// -e: log to stderr, a file: the per-connection children sshd forks
	// (in sessions of their own) would hold a pipe open past its exit.
	logFile, err := os.OpenFile(filepath.Join(h.dir, "sshd.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		h.mu.Unlock()
		h.t.Fatal(err)
	}
	defer logFile.Close()
	cmd := exec.Command(SSHD, "-D", "-e", "-f", h.cfgPath)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		h.mu.Unlock()
		h.t.Fatalf("start sshd: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	h.cmd, h.done = cmd, done
	h.mu.Unlock()

	// Ready once a real login works: a listening port alone does not show
	// that the key, the account and StrictModes are right.
	var last error
	for i := 0; i < 200; i++ {
		select {
		case <-done:
			h.t.Fatalf("sshd exited during start:\n%s", h.Log())
		default:
		}
		out, err := h.Command("true").CombinedOutput()
		if err == nil {
			return
		}
		last = fmt.Errorf("%v: %s", err, out)
		time.Sleep(50 * time.Millisecond)
	}
	h.t.Fatalf("sshd did not accept a login: %v\n%s", last, h.Log())
}

// Stop ends the sshd this test started (its listener and, being its own
// process group, the per-connection children) and waits for it.
func (h *Host) Stop() { h.stop(true) }

// Cut ends the sshd and its connections but nothing the connections
// started: the network to a host that stays up is cut, and what runs
// there keeps running (an agent on its input's end, a helper it
// detached), as after a lost link rather than a machine gone.
func (h *Host) Cut() { h.stop(false) }

func (h *Host) stop(all bool) {
	h.mu.Lock()
	cmd, done := h.cmd, h.done
	h.cmd = nil
	h.mu.Unlock()
	if cmd == nil {
		return
	}
	// Its connections run in sessions of their own, out of the
	// listener's group: found as its descendants before it exits (they
	// are reparented then), and ended too, as when the machine goes away
	// (or, cut, only the sshd processes that carry them).
	conns := descendants(cmd.Process.Pid)
	if !all {
		conns = slices.DeleteFunc(conns, func(pid int) bool {
			exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
			return err != nil || exe != SSHD
		})
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
	for _, pid := range conns {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// descendants lists the live descendants of pid, from /proc.
func descendants(root int) []int {
	ents, _ := os.ReadDir("/proc")
	children := map[int][]int{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so cut at
		// the last ')'.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 2 {
			continue
		}
		if ppid, err := strconv.Atoi(f[1]); err == nil {
			children[ppid] = append(children[ppid], pid)
		}
	}
	var out []int
	queue := []int{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// Log is what sshd wrote so far.
func (h *Host) Log() string {
	b, _ := os.ReadFile(filepath.Join(h.dir, "sshd.log"))
	return string(b)
}

// Command is `ssh -F Config Alias args...`: a command on the host, with
// host key verification against the test's known_hosts.
func (h *Host) Command(args ...string) *exec.Cmd {
	return exec.Command("ssh", append([]string{"-F", h.Config, h.Alias, "--"}, args...)...)
}

func ensureUser(t testing.TB) *user.User {
	t.Helper()
	if u, err := user.Lookup(RemoteUser); err == nil {
		unlock(t)
		return u
	}
	out, err := exec.Command("useradd", "--create-home", "--shell", "/bin/sh", RemoteUser).CombinedOutput()
	if err != nil {
		// Another test process may have added it in between.
		if u, lerr := user.Lookup(RemoteUser); lerr == nil {
			unlock(t)
			return u
		}
		t.Fatalf("useradd %s: %v\n%s", RemoteUser, err, out)
	}
	unlock(t)
	u, err := user.Lookup(RemoteUser)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// unlock gives the account the password "*": no password matches it, but,
// unlike useradd's "!", sshd does not treat the account as locked and so
// lets key authentication in.
func unlock(t testing.TB) {
	t.Helper()
	if out, err := exec.Command("usermod", "-p", "*", RemoteUser).CombinedOutput(); err != nil {
		t.Fatalf("usermod: %v\n%s", err, out)
	}
}

// freePort asks the kernel for a free high port on the loopback interface.
// Between closing it here and sshd binding it another process could take
// it; sshd then fails to start and the test says so.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
