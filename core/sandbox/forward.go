package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Forward is one port of the host's loopback a confined agent reaches at
// the same port of its own: inside, a listener on 127.0.0.1:Port (kandev
// sandbox-forward, the agent's parent) passes each connection through
// Socket, a unix socket the run's host side listens on and that dials the
// host's 127.0.0.1:Port. Only declared ports pass, and the sandbox's
// network stays as it was (none, the engine's, or the host's): a model
// server or proxy on the host is reachable without the host's network
// (ADR 0074).
type Forward struct {
	Port   int
	Socket string
}

// ForwardCommand is the hidden kandev command that serves forwards inside.
const ForwardCommand = "sandbox-forward"

// forwardSocket is where a session's socket for port lives: beside
// kandev's sockets, short, since a unix socket's path is at most 107
// bytes.
func forwardSocket(dir, sessionID string, port int) string {
	return filepath.Join(dir, "fwd-"+sessionID+"-"+strconv.Itoa(port)+".sock")
}

// ownLoopback: the sandbox has a loopback of its own, so a forward is
// what reaches the host's. bwrap shares the host's network unless cut; a
// container has its own unless it runs on the host's.
func (v View) ownLoopback() bool {
	switch v.Mode {
	case "docker", "podman":
		return v.NetworkMode != NetworkHost
	}
	return !v.Network
}

// activeForwards are the view's forwards that are needed.
func (v View) activeForwards() []Forward {
	if !v.ownLoopback() || v.Forwarder == "" {
		return nil
	}
	return v.Forwards
}

// forwardArgs wraps the agent's command in the forwarder, where one is
// needed: kandev sandbox-forward [--signals] --port P=SOCK… -- CMD ARGS.
// In a container the forwarder is the container's first process, which
// the engine's signals reach alone, so it passes them on (--signals);
// under bwrap the agent is in kandev's process group and gets them itself.
func (v View) forwardArgs(cmd string, args []string) (string, []string) {
	fs := v.activeForwards()
	if len(fs) == 0 {
		return cmd, args
	}
	out := []string{ForwardCommand}
	if v.Mode == "docker" || v.Mode == "podman" {
		out = append(out, "--signals")
	}
	for _, f := range fs {
		out = append(out, "--port", strconv.Itoa(f.Port)+"="+f.Socket)
	}
	out = append(append(out, "--", cmd), args...)
	return v.Forwarder, out
}

// OpenForwards starts the host side of the view's forwards: a listener on
// each socket that dials the host's loopback port for every connection.
// The returned close stops them and waits for their connections to end.
// A view without forwards (or whose loopback is the host's) opens none.
func OpenForwards(v View) (func(), error) {
	fs := v.activeForwards()
	if len(fs) == 0 {
		return func() {}, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var lns []net.Listener
	stop := func() {
		cancel()
		for _, ln := range lns {
			ln.Close()
		}
		wg.Wait()
		for _, f := range fs {
			os.Remove(f.Socket)
		}
	}
	for _, f := range fs {
		if err := os.MkdirAll(filepath.Dir(f.Socket), 0o700); err != nil {
			stop()
			return nil, fmt.Errorf("sandbox: forward %d: %w", f.Port, err)
		}
		os.Remove(f.Socket) // a session's own, left by a daemon that died
		ln, err := net.Listen("unix", f.Socket)
		if err != nil {
			stop()
			return nil, fmt.Errorf("sandbox: forward %d: %w", f.Port, err)
		}
		lns = append(lns, ln)
		target := net.JoinHostPort("127.0.0.1", strconv.Itoa(f.Port))
		wg.Go(func() {
			serve(ctx, &wg, ln, func(ctx context.Context) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "tcp", target)
			})
		})
	}
	return stop, nil
}

// serve accepts on ln until it is closed and joins each connection to one
// dial opens, until either side ends or ctx does.
func serve(ctx context.Context, wg *sync.WaitGroup, ln net.Listener, dial func(context.Context) (net.Conn, error)) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		wg.Go(func() { join(ctx, c, dial) })
	}
}

// dialTimeout bounds reaching the far side of one forwarded connection.
const dialTimeout = 10 * time.Second

func join(ctx context.Context, c net.Conn, dial func(context.Context) (net.Conn, error)) {
	defer c.Close()
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	far, err := dial(dctx)
	cancel()
	if err != nil {
		return // the client sees its connection closed, as a refused port
	}
	defer far.Close()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(far, c)
	go pipe(c, far)
	for n := 0; n < 2; {
		select {
		case <-done:
			n++
		case <-ctx.Done():
			// Closing both ends ends both copies.
			c.Close()
			far.Close()
			for ; n < 2; n++ {
				<-done
			}
		}
	}
}

// ServeInside is kandev sandbox-forward: it listens on 127.0.0.1 (and ::1
// where the sandbox has it) at each port, passing connections through its
// socket, runs the agent's command with this process's standard streams,
// and exits as the command does. With signals it passes SIGINT, SIGTERM
// and SIGHUP on to the command.
func ServeInside(ports []string, signals bool, command []string) int {
	if len(command) == 0 {
		fmt.Fprintln(os.Stderr, "kandev sandbox-forward: no command after --")
		return 2
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	var lns []net.Listener
	for _, p := range ports {
		port, sock, ok := strings.Cut(p, "=")
		if n, err := strconv.Atoi(port); !ok || err != nil || n < 1 || n > 65535 || sock == "" {
			fmt.Fprintf(os.Stderr, "kandev sandbox-forward: --port %q: want PORT=SOCKET\n", p)
			return 2
		}
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", port))
		if err != nil {
			fmt.Fprintf(os.Stderr, "kandev sandbox-forward: %v\n", err)
			return 1
		}
		lns = append(lns, ln)
		if ln6, err := net.Listen("tcp", net.JoinHostPort("::1", port)); err == nil {
			lns = append(lns, ln6)
		}
	}
	for i := range lns {
		sock := socketOf(ports, lns[i])
		wg.Go(func() {
			serve(ctx, &wg, lns[i], func(ctx context.Context) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "unix", sock)
			})
		})
	}
	// Caught, not ignored: an ignored signal would stay ignored in the
	// command; a caught one is reset for it.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	cmd := exec.Command(command[0], command[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "kandev sandbox-forward: %v\n", err)
		return 127
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var err error
wait:
	for {
		select {
		case s := <-sigs:
			if signals {
				cmd.Process.Signal(s)
			}
		case err = <-exited:
			break wait
		}
	}
	cancel()
	for _, ln := range lns {
		ln.Close()
	}
	wg.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if st, ok := ee.Sys().(syscall.WaitStatus); ok && st.Signaled() {
			return 128 + int(st.Signal())
		}
		return ee.ExitCode()
	}
	if err != nil {
		return 1
	}
	return 0
}

// socketOf is the socket of the --port a listener serves.
func socketOf(ports []string, ln net.Listener) string {
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	for _, p := range ports {
		if pp, sock, _ := strings.Cut(p, "="); pp == port {
			return sock
		}
	}
	return ""
}
