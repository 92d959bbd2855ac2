package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/streaming/pkg/httpstream"

	"github.com/kandev/kandev/core/agent"
	"github.com/kandev/kandev/core/kube/relay"
)

// Session is one session's pod.
type Session struct {
	c    *Client
	Name string

	cancel context.CancelFunc
	done   chan struct{}
	// streamEnded closes when the attach stream has ended (before done,
	// which waits for the kubelet's word on the agent's end).
	streamEnded chan struct{}
	mu          sync.Mutex
	err         error
	lost        bool
}

// Start creates s's pod, waits until its container runs, carries kandev's
// binary in (binary, if not ""; as on SSH hosts, kandev's own binary
// travels, so the image needs only the agent and a /bin/sh), lets the
// agent start, and attaches to it: the returned Peer is the agent's ACP
// stream (stdin and stdout of the attach), for agent.Attach. The agent's
// stderr goes to stderr. A pod that cannot start (an image not there, a
// rule the cluster refuses) is deleted and its reason returned.
func (c *Client) Start(ctx context.Context, s PodSpec, binary string, stderr io.Writer) (*Session, agent.Peer, error) {
	pod, err := BuildPod(s)
	if err != nil {
		return nil, agent.Peer{}, err
	}
	created, err := c.cs.CoreV1().Pods(c.namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return nil, agent.Peer{}, fmt.Errorf("kube: create pod %s in %s: %w", pod.Name, c.namespace, err)
	}
	sess := &Session{c: c, Name: created.Name, done: make(chan struct{}), streamEnded: make(chan struct{})}
	fail := func(err error) (*Session, agent.Peer, error) {
		dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = sess.Delete(dctx, 0)
		return nil, agent.Peer{}, err
	}
	if err := c.waitPod(ctx, created.Name, running); err != nil {
		return fail(err)
	}
	var in io.Reader = nil
	script := "mkdir -p " + homeDir + " && : > " + readyPath
	if binary != "" {
		f, err := os.Open(binary)
		if err != nil {
			return fail(fmt.Errorf("kube: kandev's binary: %w", err))
		}
		defer f.Close()
		in = f
		script = "mkdir -p " + KandevDir + "/bin && cat > " + BinaryPath + ".part && chmod 0755 " + BinaryPath +
			".part && mv " + BinaryPath + ".part " + BinaryPath + " && " + script
	}
	if out, err := c.execIn(ctx, created.Name, container, in, "/bin/sh", "-c", script); err != nil {
		return fail(fmt.Errorf("kube: carrying kandev into pod %s: %w: %s", created.Name, err, out))
	}

	stdinR, stdinW := io.Pipe()
	stdoutR, stdoutW := io.Pipe()
	if stderr == nil {
		stderr = io.Discard
	}
	actx, cancel := context.WithCancel(context.Background())
	sess.cancel = cancel
	exec, err := c.executor("attach", created.Name, &corev1.PodAttachOptions{
		Container: container, Stdin: true, Stdout: true, Stderr: true,
	})
	if err != nil {
		cancel()
		return fail(err)
	}
	go func() {
		serr := exec.StreamWithContext(actx, remotecommand.StreamOptions{Stdin: stdinR, Stdout: stdoutW, Stderr: stderr})
		close(sess.streamEnded)
		stdoutW.Close()
		// The writer's end: client-go's stdin copier sees EOF, and the
		// agent's next write fails (its input is gone).
		stdinW.Close()
		err := c.exitOf(created.Name, serr)
		sess.mu.Lock()
		sess.err = err
		// A stream cut that kandev did not ask for: the API server or the
		// connection to it went. The agent then reads EOF (stdinOnce), so
		// its session can only resume in a new pod.
		sess.lost = serr != nil && actx.Err() == nil
		sess.mu.Unlock()
		close(sess.done)
	}()
	peer := agent.Peer{
		Stdin:  stdinW,
		Stdout: stdoutR,
		Done:   sess.done,
		Err: func() error {
			sess.mu.Lock()
			defer sess.mu.Unlock()
			return sess.err
		},
		Kill: func() {
			dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_ = sess.Delete(dctx, 0)
		},
	}
	return sess, peer, nil
}

// exitOf says how the agent in pod name ended once its stream did: nil
// for status 0, else its status or why the pod is gone. It waits (a
// bounded time) for the kubelet to report the container's end.
func (c *Client) exitOf(name string, streamErr error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var term *corev1.ContainerStateTerminated
	err := c.waitPod(ctx, name, func(p *corev1.Pod) (bool, error) {
		if t := agentState(p).Terminated; t != nil {
			term = t
			return true, nil
		}
		return false, nil
	})
	switch {
	case term != nil && term.ExitCode == 0:
		return nil
	case term != nil:
		return fmt.Errorf("agent in pod %s exited with status %d (%s)", name, term.ExitCode, term.Reason)
	case errors.Is(err, errGone):
		return fmt.Errorf("pod %s was deleted", name)
	case streamErr != nil:
		return fmt.Errorf("attach to pod %s: %w", name, streamErr)
	default:
		return fmt.Errorf("pod %s: %v", name, err)
	}
}

// ForwardMCP carries the pod's MCP connections (its kube-relay, PodSpec.MCP)
// to daemonSock, the daemon's mcp.sock: it keeps one spare exec stream
// open into the pod and opens the next as soon as one is taken, until
// ctx ends or the session does. Errors go to logf (nil: dropped).
func (s *Session) ForwardMCP(ctx context.Context, daemonSock string, logf func(string, ...any)) {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		// The agent's stream ended: no connection of its is to come.
		select {
		case <-s.streamEnded:
		case <-ctx.Done():
		}
		cancel()
	}()
	go func() {
		for ctx.Err() == nil {
			taken := make(chan struct{})
			ended := make(chan struct{})
			toPodR, toPodW := io.Pipe()
			fromPodR, fromPodW := io.Pipe()
			go func() {
				defer close(ended)
				exec, err := s.c.executor("exec", s.Name, &corev1.PodExecOptions{
					Container: container, Command: []string{BinaryPath, "kube-relay", "spare", relaySocket},
					Stdin: true, Stdout: true, Stderr: true,
				})
				if err == nil {
					err = exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: toPodR, Stdout: fromPodW, Stderr: io.Discard})
				}
				if err != nil && ctx.Err() == nil {
					logf("kube: MCP spare in pod %s: %v", s.Name, err)
				}
				fromPodW.Close()
				// The writer's end, so client-go's stdin copier sees EOF
				// (not an error it would log) and a write still pending
				// from the daemon's socket returns.
				toPodW.Close()
			}()
			go func() {
				err := relay.Daemon(fromPodR, toPodW, daemonSock, taken)
				// A spare that ended untaken ends here with EOF: no news.
				if err != nil && ctx.Err() == nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
					logf("kube: MCP connection from pod %s: %v", s.Name, err)
				}
			}()
			select {
			case <-taken:
			case <-ended:
				// A spare that ended untaken (the relay not up yet, a
				// stream cut): the next one after a pause, not at once.
				select {
				case <-time.After(500 * time.Millisecond):
				case <-ctx.Done():
				}
			case <-ctx.Done():
			}
		}
	}()
}

// Lost says the session's attach stream was cut by a fault (an API server
// outage, a lost connection), not ended by the agent or by kandev; known
// once Done has closed.
func (s *Session) Lost() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lost
}

// Done closes once the attach stream has ended and the agent's end is known.
func (s *Session) Done() <-chan struct{} { return s.done }

// Delete deletes the pod with grace seconds for the agent (0: at once) and
// waits until it is gone, so nothing of the session is left.
func (s *Session) Delete(ctx context.Context, grace int64) error {
	if s.cancel != nil && grace == 0 {
		defer s.cancel()
	}
	return s.c.DeletePod(ctx, s.Name, grace)
}

// DeletePod deletes pod name and waits until the API server no longer
// has it.
func (c *Client) DeletePod(ctx context.Context, name string, grace int64) error {
	err := c.cs.CoreV1().Pods(c.namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &grace})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("kube: delete pod %s: %w", name, err)
	}
	err = c.waitPod(ctx, name, func(*corev1.Pod) (bool, error) { return false, nil })
	if errors.Is(err, errGone) {
		return nil
	}
	return err
}

// Pods lists the pods matching the label selector in the namespace.
func (c *Client) Pods(ctx context.Context, selector string) ([]corev1.Pod, error) {
	l, err := c.cs.CoreV1().Pods(c.namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("kube: list pods: %w", err)
	}
	return l.Items, nil
}

// Sweep deletes the pods of home whose session live does not know (left
// by a daemon killed with -9), at once, and returns their names.
func (c *Client) Sweep(ctx context.Context, home string, live func(session string) bool) ([]string, error) {
	pods, err := c.Pods(ctx, HomeSelector(home))
	if err != nil {
		return nil, err
	}
	var swept []string
	for _, p := range pods {
		if live != nil && live(p.Labels[LabelSession]) {
			continue
		}
		if err := c.DeletePod(ctx, p.Name, 0); err != nil {
			return swept, err
		}
		swept = append(swept, p.Name)
	}
	return swept, nil
}

// Exec runs argv in the worktree's container of pod name (its files are
// the agent's; it runs as long as the pod), stdin from in (nil: none), and
// returns its combined output.
func (c *Client) Exec(ctx context.Context, name string, in io.Reader, argv ...string) (string, error) {
	return c.execIn(ctx, name, keeper, in, argv...)
}

func (c *Client) execIn(ctx context.Context, name, ctr string, in io.Reader, argv ...string) (string, error) {
	exec, err := c.executor("exec", name, &corev1.PodExecOptions{
		Container: ctr, Command: argv, Stdin: in != nil, Stdout: true, Stderr: true,
	})
	if err != nil {
		return "", err
	}
	var out lockedBuffer
	err = exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: in, Stdout: &out, Stderr: &out})
	return out.String(), err
}

// executor streams a pod's attach or exec subresource over WebSocket,
// falling back to SPDY for servers that refuse the upgrade (as kubectl).
func (c *Client) executor(sub, name string, opts any) (remotecommand.Executor, error) {
	req := c.cs.CoreV1().RESTClient().Post().Namespace(c.namespace).Resource("pods").Name(name).SubResource(sub)
	switch o := opts.(type) {
	case *corev1.PodAttachOptions:
		req = req.VersionedParams(o, scheme.ParameterCodec)
	case *corev1.PodExecOptions:
		req = req.VersionedParams(o, scheme.ParameterCodec)
	}
	u := req.URL()
	ws, err := remotecommand.NewWebSocketExecutor(c.cfg, http.MethodGet, u.String())
	if err != nil {
		return nil, fmt.Errorf("kube: %s: %w", sub, err)
	}
	spdy, err := remotecommand.NewSPDYExecutor(c.cfg, http.MethodPost, u)
	if err != nil {
		return nil, fmt.Errorf("kube: %s: %w", sub, err)
	}
	return remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
}

var errGone = errors.New("pod is gone")

// waitPod waits until cond holds for pod name (errGone once it is
// deleted), over a watch from the pod's current version, re-watching when
// the server ends one.
func (c *Client) waitPod(ctx context.Context, name string, cond func(*corev1.Pod) (bool, error)) error {
	pods := c.cs.CoreV1().Pods(c.namespace)
	for {
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return errGone
		}
		if err != nil {
			return fmt.Errorf("kube: pod %s: %w", name, err)
		}
		if ok, err := cond(p); ok || err != nil {
			return err
		}
		w, err := pods.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name, ResourceVersion: p.ResourceVersion})
		if err != nil {
			return fmt.Errorf("kube: watch pod %s: %w", name, err)
		}
		err = func() error {
			defer w.Stop()
			for {
				select {
				case <-ctx.Done():
					return ctx.Err()
				case ev, ok := <-w.ResultChan():
					if !ok {
						return nil // re-watch
					}
					switch ev.Type {
					case watch.Deleted:
						return errGone
					case watch.Error:
						return nil // re-list, then watch again
					}
					if p, ok := ev.Object.(*corev1.Pod); ok {
						if ok, err := cond(p); ok || err != nil {
							if err == nil {
								return errDone
							}
							return err
						}
					}
				}
			}
		}()
		if errors.Is(err, errDone) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

var errDone = errors.New("done")

// agentState is the agent container's state in p.
func agentState(p *corev1.Pod) corev1.ContainerState { return stateOf(p, container) }

func stateOf(p *corev1.Pod, name string) corev1.ContainerState {
	for _, s := range p.Status.ContainerStatuses {
		if s.Name == name {
			return s.State
		}
	}
	return corev1.ContainerState{}
}

// running holds once the agent's container and the worktree's run; a pod
// that cannot get there is an error saying why.
func running(p *corev1.Pod) (bool, error) {
	up := 0
	for _, name := range []string{container, keeper} {
		st := stateOf(p, name)
		switch {
		case st.Running != nil:
			up++
		case st.Terminated != nil:
			return false, fmt.Errorf("kube: pod %s ended before its agent started: %s (status %d) %s",
				p.Name, st.Terminated.Reason, st.Terminated.ExitCode, st.Terminated.Message)
		case st.Waiting != nil && fatalWaiting[st.Waiting.Reason]:
			return false, fmt.Errorf("kube: pod %s cannot start: %s: %s", p.Name, st.Waiting.Reason, st.Waiting.Message)
		}
	}
	if p.Status.Phase == corev1.PodFailed {
		return false, fmt.Errorf("kube: pod %s failed: %s %s", p.Name, p.Status.Reason, p.Status.Message)
	}
	return up == 2, nil
}

// fatalWaiting are the reasons a container waits that no wait will end.
var fatalWaiting = map[string]bool{
	"ErrImageNeverPull":          true,
	"InvalidImageName":           true,
	"CreateContainerConfigError": true,
	"CreateContainerError":       true,
	"ImagePullBackOff":           true,
	"ErrImagePull":               true,
	"RunContainerError":          true,
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	return len(p), nil
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}
