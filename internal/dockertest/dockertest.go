// Package dockertest starts a docker daemon of a test's (or the bench's)
// own, offline: no bridge, no iptables, its data and exec roots in a
// directory of its own, and cleans up after it, including what a dockerd
// killed mid-run leaves (shims, mounts).
package dockertest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Answers reports whether a docker daemon answers at host (a DOCKER_HOST).
func Answers(host string) bool {
	cmd := exec.Command("docker", "version", "--format", "{{.Server.Version}}")
	cmd.Env = append(os.Environ(), "DOCKER_HOST="+host)
	return cmd.Run() == nil
}

// ErrUnavailable wraps why no dockerd can run here (not installed, not
// root, it exited at start): a test skips or fails on it by its rules.
var ErrUnavailable = errors.New("docker is unavailable")

// Daemon is a dockerd started by Start.
type Daemon struct {
	// Host is its DOCKER_HOST.
	Host   string
	dir    string
	cmd    *exec.Cmd
	log    *os.File
	exited chan struct{}
}

// Start starts a dockerd in a new directory under parent ("" for the
// system's temporary directory) and waits until it answers.
func Start(parent string) (*Daemon, error) {
	if _, err := exec.LookPath("dockerd"); err != nil || os.Geteuid() != 0 {
		return nil, fmt.Errorf("%w: no docker daemon answers, and none can be started here (dockerd missing or not root)", ErrUnavailable)
	}
	dir, err := os.MkdirTemp(parent, "kddk-")
	if err != nil {
		return nil, err
	}
	d := &Daemon{Host: "unix://" + filepath.Join(dir, "sock"), dir: dir, exited: make(chan struct{})}
	if d.log, err = os.Create(filepath.Join(dir, "log")); err != nil {
		return nil, err
	}
	d.cmd = exec.Command("dockerd", "--bridge=none", "--iptables=false", "--ip6tables=false",
		"--data-root", filepath.Join(dir, "data"), "--exec-root", filepath.Join(dir, "x"),
		"--pidfile", filepath.Join(dir, "pid"), "-H", d.Host)
	d.cmd.Stdout, d.cmd.Stderr = d.log, d.log
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := d.cmd.Start(); err != nil {
		d.log.Close()
		os.RemoveAll(dir)
		return nil, fmt.Errorf("%w: dockerd: %v", ErrUnavailable, err)
	}
	go func() { _ = d.cmd.Wait(); close(d.exited) }()
	deadline := time.Now().Add(60 * time.Second)
	for !Answers(d.Host) {
		select {
		case <-d.exited:
			err := fmt.Errorf("%w: dockerd exited: %s", ErrUnavailable, d.logTail())
			d.Stop()
			return nil, err
		default:
		}
		if time.Now().After(deadline) {
			err := fmt.Errorf("dockerd did not answer in 60s: %s", d.logTail())
			d.Stop()
			return nil, err
		}
		time.Sleep(100 * time.Millisecond)
	}
	return d, nil
}

func (d *Daemon) logTail() string {
	b, _ := os.ReadFile(filepath.Join(d.dir, "log"))
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// Kill kills the dockerd at once (SIGKILL: the engine dying) and waits
// for it; Stop still cleans up after it.
func (d *Daemon) Kill() {
	_ = d.cmd.Process.Kill()
	<-d.exited
}

// Stop ends the dockerd (SIGTERM, SIGKILL of its group after 30 s), kills
// what it left running, unmounts what it left mounted and removes its
// directory.
func (d *Daemon) Stop() {
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
		<-d.exited
	}
	d.log.Close()
	KillUnder(d.dir)
	// Its data root and, of a dockerd killed mid-run, a network namespace
	// under the exec root stay mounted.
	UnmountUnder(d.dir)
	os.RemoveAll(d.dir)
}

// UnmountUnder unmounts what is mounted under dir, deepest first
// (podman's overlay storage and dockerd's data root mount their own
// directories; dockerd leaves network namespaces mounted).
func UnmountUnder(dir string) {
	b, _ := os.ReadFile("/proc/self/mountinfo")
	var points []string
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 && strings.HasPrefix(f[4], dir+"/") {
			points = append(points, f[4])
		}
	}
	for i := len(points) - 1; i >= 0; i-- {
		_ = syscall.Unmount(points[i], syscall.MNT_DETACH)
	}
}

// KillUnder kills what an engine left running from its directories (a
// containerd shim outlives a dockerd killed mid-run).
func KillUnder(dir string) {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && bytes.Contains(b, []byte(dir)) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}
