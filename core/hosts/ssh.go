// Package hosts reaches the machines agents run on over the system ssh: the
// user's own ssh_config, known_hosts and agent apply, host keys are always
// verified (BatchMode, never StrictHostKeyChecking=no), and every command to
// a host shares one ControlMaster connection whose socket lives under the
// kandev home (docs/hosts.md).
package hosts

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode"

	"github.com/kandev/kandev/core/workspace"
)

// Dest is a parsed [user@]host[:port]. Host may be an ssh_config alias.
type Dest struct {
	User string
	Host string
	Port int // 0: ssh's own default (the config's, else 22)
}

// ParseDest parses [user@]host[:port]. It refuses what ssh would read as an
// option (a leading '-') or what no host name has (spaces, controls), so a
// destination can never smuggle flags onto ssh's command line.
func ParseDest(s string) (Dest, error) {
	var d Dest
	if s == "" {
		return d, errors.New("empty ssh destination")
	}
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsControl(r) || r == '/' || r == '\'' || r == '"' || r == '\\' {
			return d, fmt.Errorf("ssh destination %q: character %q is not allowed", s, r)
		}
	}
	rest := s
	if i := strings.LastIndexByte(rest, '@'); i >= 0 {
		d.User, rest = rest[:i], rest[i+1:]
		if d.User == "" || strings.HasPrefix(d.User, "-") {
			return Dest{}, fmt.Errorf("ssh destination %q: bad user", s)
		}
	}
	if i := strings.LastIndexByte(rest, ':'); i >= 0 && !strings.Contains(rest[:i], ":") {
		p, err := strconv.Atoi(rest[i+1:])
		if err != nil || p < 1 || p > 65535 {
			return Dest{}, fmt.Errorf("ssh destination %q: bad port %q", s, rest[i+1:])
		}
		d.Port, rest = p, rest[:i]
	}
	rest = strings.TrimSuffix(strings.TrimPrefix(rest, "["), "]")
	if rest == "" || strings.HasPrefix(rest, "-") {
		return Dest{}, fmt.Errorf("ssh destination %q: bad host", s)
	}
	d.Host = rest
	return d, nil
}

// String is the [user@]host part ssh takes as its destination.
func (d Dest) String() string {
	if d.User != "" {
		return d.User + "@" + d.Host
	}
	return d.Host
}

// Target is one host as ssh reaches it.
type Target struct {
	Name     string
	Dest     Dest
	Identity string
}

// Pool holds one ControlMaster connection per host. The masters are ssh
// processes of their own (ssh -f detaches them once logged in); Close, and a
// host's removal, end them with `ssh -O exit`.
type Pool struct {
	// Dir holds the control sockets (the kandev home's ssh/ directory).
	Dir string
	// Config, when set, is passed as `ssh -F`: an ssh_config used instead
	// of the user's own (tests; KANDEV_SSH_CONFIG).
	Config string
	// SSH is the ssh binary (default "ssh" on PATH).
	SSH string

	mu      sync.Mutex
	masters map[string]*sync.Mutex // by host name: one master start at a time
	started map[string]Target      // hosts whose master this pool started
}

// ControlPath is the host's control socket.
func (p *Pool) ControlPath(name string) string { return filepath.Join(p.Dir, name+".sock") }

func (p *Pool) ssh() string {
	if p.SSH != "" {
		return p.SSH
	}
	return "ssh"
}

// Args is ssh's command line for t (before the remote command): the
// optional -F, the control socket, batch mode, identity and port, then
// the destination.
func (p *Pool) Args(t Target, opts ...string) []string {
	var a []string
	if p.Config != "" {
		a = append(a, "-F", p.Config)
	}
	a = append(a, "-o", "ControlPath="+p.ControlPath(t.Name), "-o", "BatchMode=yes")
	if t.Identity != "" {
		a = append(a, "-i", t.Identity, "-o", "IdentitiesOnly=yes")
	}
	if t.Dest.Port != 0 {
		a = append(a, "-p", strconv.Itoa(t.Dest.Port))
	}
	a = append(a, opts...)
	return append(a, "--", t.Dest.String())
}

// Connect makes sure the host's master connection is up, starting it if
// needed. Its error is ssh's own message (host key mismatch, refused,
// unknown host, permission denied).
func (p *Pool) Connect(ctx context.Context, t Target) error {
	lock := p.lock(t.Name)
	lock.Lock()
	defer lock.Unlock()
	if p.check(ctx, t) == nil {
		return nil
	}
	if err := os.MkdirAll(p.Dir, 0o700); err != nil {
		return fmt.Errorf("host %s: control socket directory: %w", t.Name, err)
	}
	// A socket left by a master that died (the daemon killed, the host
	// gone) would make the new master give up multiplexing.
	_ = os.Remove(p.ControlPath(t.Name))
	cmd := exec.CommandContext(ctx, p.ssh(), p.Args(t, "-f", "-N", "-o", "ControlMaster=yes", "-o", "ControlPersist=no")...)
	// A file, not a pipe: nothing the detached master keeps open can then
	// hold Run until the master ends.
	errFile, err := os.CreateTemp(p.Dir, "connect-*.err")
	if err != nil {
		return fmt.Errorf("host %s: %w", t.Name, err)
	}
	defer os.Remove(errFile.Name())
	defer errFile.Close()
	cmd.Stderr = errFile
	// -f: ssh forks once logged in and the parent exits, so its exit
	// status is the login's result, without waiting on the socket.
	if err := cmd.Run(); err != nil {
		msg, _ := os.ReadFile(errFile.Name())
		err := sshError(t.Name, err, string(msg))
		var ue *UnreachableError
		if errors.As(err, &ue) {
			ue.Hint = loginHint(t, ue.Msg)
		}
		return err
	}
	p.mu.Lock()
	if p.started == nil {
		p.started = map[string]Target{}
	}
	p.started[t.Name] = t
	p.mu.Unlock()
	return nil
}

func (p *Pool) lock(name string) *sync.Mutex {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.masters == nil {
		p.masters = map[string]*sync.Mutex{}
	}
	m := p.masters[name]
	if m == nil {
		m = &sync.Mutex{}
		p.masters[name] = m
	}
	return m
}

func (p *Pool) check(ctx context.Context, t Target) error {
	if _, err := os.Stat(p.ControlPath(t.Name)); err != nil {
		return err
	}
	return exec.CommandContext(ctx, p.ssh(), p.Args(t, "-O", "check")...).Run()
}

// Command is ssh running command on the host over its master (Connect it
// first). command is one string the remote shell reads: quote its parts
// with Quote.
func (p *Pool) Command(ctx context.Context, t Target, command string, opts ...string) *exec.Cmd {
	return exec.CommandContext(ctx, p.ssh(), append(p.Args(t, append([]string{"-o", "ControlMaster=no"}, opts...)...), command)...)
}

// Script runs a POSIX sh script on the host (fed on stdin, so nothing in
// it is subject to a second round of quoting) and returns its stdout.
func (p *Pool) Script(ctx context.Context, t Target, script string) (string, error) {
	if err := p.Connect(ctx, t); err != nil {
		return "", err
	}
	cmd := p.Command(ctx, t, "sh -s")
	// Every git in the script goes through kandev's runner (ADR 0065).
	cmd.Stdin = strings.NewReader(workspace.ShellPrelude() + script)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), sshError(t.Name, err, stderr.String())
	}
	return stdout.String(), nil
}

// UploadExpr writes r to the file the shell expression path names on the
// host (mode 0755), through a temporary file renamed into place so a
// half-copied binary is never run. The temporary file is the upload's own
// (the remote shell's pid in its name): sessions starting at once on a
// fresh host each copy kandev there, and a shared one had each copy
// delete or rename the others' (found by the soak, issue 39).
func (p *Pool) UploadExpr(ctx context.Context, t Target, r io.Reader, path string) error {
	if err := p.Connect(ctx, t); err != nil {
		return err
	}
	cmd := p.Command(ctx, t, fmt.Sprintf(`f=%s; part="$f.part.$$"; mkdir -p "$(dirname "$f")" && cat > "$part" && chmod 0755 "$part" && mv -f "$part" "$f" || { rm -f "$part"; exit 1; }`, path))
	cmd.Stdin = r
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return sshError(t.Name, err, stderr.String())
	}
	return nil
}

// Disconnect ends the host's master connection, if any.
func (p *Pool) Disconnect(t Target) {
	path := p.ControlPath(t.Name)
	pid := p.masterPID(t)
	_ = exec.Command(p.ssh(), p.Args(t, "-O", "exit")...).Run()
	// -O exit only asks: the master ends a moment later. A daemon stop that
	// returned before it did would leave an ssh running behind it.
	if pid > 0 {
		waitMasterGone(pid, path, 5*time.Second)
	}
	_ = os.Remove(path)
	p.mu.Lock()
	delete(p.started, t.Name)
	p.mu.Unlock()
}

// masterPID is the pid of the host's master (`ssh -O check` says it on
// stderr), 0 when there is none.
func (p *Pool) masterPID(t Target) int {
	var stderr bytes.Buffer
	cmd := exec.Command(p.ssh(), p.Args(t, "-O", "check")...)
	cmd.Stderr = &stderr
	if cmd.Run() != nil {
		return 0
	}
	_, rest, ok := strings.Cut(stderr.String(), "(pid=")
	if !ok {
		return 0
	}
	num, _, _ := strings.Cut(rest, ")")
	pid, err := strconv.Atoi(num)
	if err != nil {
		return 0
	}
	return pid
}

// waitMasterGone waits until process pid is no longer the master of the
// control socket path (gone, a zombie, or a recycled pid: its command line
// no longer names the socket), and after limit kills it. Where there is no
// /proc (macOS) it returns at once.
func waitMasterGone(pid int, path string, limit time.Duration) {
	isMaster := func() bool {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		return err == nil && bytes.Contains(b, []byte(path))
	}
	deadline := time.Now().Add(limit)
	for isMaster() {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Sweep ends the masters an earlier daemon of this home left (killed
// before its Close ran): every control socket in Dir is told to exit and
// removed. Call it before the pool starts masters of its own.
func (p *Pool) Sweep() int {
	ents, err := os.ReadDir(p.Dir)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".sock")
		if !ok {
			continue
		}
		// The destination only names the socket's host for ssh; with
		// ControlPath given, -O exit talks to the socket alone.
		if exec.Command(p.ssh(), "-o", "ControlPath="+p.ControlPath(name), "-O", "exit", "--", "kandev-sweep").Run() == nil {
			n++
		}
		_ = os.Remove(p.ControlPath(name))
	}
	return n
}

// Close ends every master this pool started.
func (p *Pool) Close() {
	p.mu.Lock()
	var ts []Target
	for _, t := range p.started {
		ts = append(ts, t)
	}
	p.mu.Unlock()
	for _, t := range ts {
		p.Disconnect(t)
	}
}

// sshError words a failed ssh run with ssh's own last words: exit status
// 255 is ssh's (connection, authentication, host key), anything else the
// remote command's.
func sshError(name string, err error, stderr string) error {
	msg := strings.TrimSpace(stderr)
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 255 {
		if msg == "" {
			msg = err.Error()
		}
		return &UnreachableError{Host: name, Msg: msg}
	}
	if msg != "" {
		return fmt.Errorf("host %s: %w: %s", name, err, msg)
	}
	return fmt.Errorf("host %s: %w", name, err)
}

// UnreachableError is ssh failing to reach or log in to a host.
type UnreachableError struct {
	Host string
	Msg  string
	// Hint is the next step, when ssh's message has a known one.
	Hint string
}

func (e *UnreachableError) Error() string {
	s := "host " + e.Host + " unreachable: " + e.Msg
	if e.Hint != "" {
		s += "; " + e.Hint
	}
	return s
}

// loginHint is the next step after a failed login whose cause ssh named:
// a host key it does not know, or one that changed. kandev never turns host
// key checking off; the person checks and adds the key.
func loginHint(t Target, msg string) string {
	if !strings.Contains(msg, "Host key verification failed") {
		return ""
	}
	port, known := "", t.Dest.Host
	if t.Dest.Port != 0 && t.Dest.Port != 22 {
		port = "-p " + strconv.Itoa(t.Dest.Port) + " "
		known = "[" + t.Dest.Host + "]:" + strconv.Itoa(t.Dest.Port)
	}
	hint := fmt.Sprintf("ssh does not know this host's key, or it changed: check its fingerprint with whoever runs the host, then accept it by connecting once with ssh %s%s, or add it with ssh-keyscan %s%s >> ~/.ssh/known_hosts",
		port, t.Dest.String(), port, t.Dest.Host)
	if strings.Contains(msg, "IDENTIFICATION HAS CHANGED") || strings.Contains(msg, "Offending") {
		hint = fmt.Sprintf("the host's key changed since ssh last saw it: check the new fingerprint with whoever runs the host, remove the old key with ssh-keygen -R %s, then connect once with ssh %s%s to accept the new one",
			known, port, t.Dest.String())
	}
	return hint + "; then run kandev host check " + t.Name + " again"
}

// Quote quotes s for a POSIX shell.
func Quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
