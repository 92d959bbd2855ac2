// Package kube runs an agent in a pod of its own on a Kubernetes cluster
// (issue 42, ADR 0053's design): a cluster is a kind of host, reached with
// client-go through a kubeconfig context, and each session is one pod,
// labelled with it, confined by the pod's security context, whose agent
// speaks ACP over the pod's attach stream.
package kube

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Labels every pod kandev makes carries: `kubectl get pods -l
// app.kubernetes.io/managed-by=kandev` is the operator's view, and the
// startup sweep finds a home's pods by LabelHome.
const (
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedBy      = "kandev"
	LabelSession   = "kandev.dev/session"
	LabelTask      = "kandev.dev/task"
	LabelHome      = "kandev.dev/home"
)

// Paths inside the pod. The root file system is read-only; these are
// emptyDir volumes of the pod.
const (
	// KandevDir holds kandev's binary (carried in over an exec stream,
	// as on SSH hosts) and the ready mark the agent's container waits for.
	KandevDir = "/kandev"
	// BinaryPath is where kandev's binary lands in the pod.
	BinaryPath = KandevDir + "/bin/kandev"
	readyPath  = KandevDir + "/ready"
	// MCPSocket is where the agent's `kandev mcp` dials (KANDEV_SOCKET)
	// when the pod carries MCP; kube-relay listens there.
	MCPSocket = KandevDir + "/run/mcp.sock"
	// relaySocket is kube-relay's control socket, where spares wait.
	relaySocket = KandevDir + "/run/relay.sock"
	// WorkDir is the agent's working directory (its worktree).
	WorkDir = "/work"
	// homeDir is the agent's HOME: apart from the worktree, so nothing
	// the agent keeps there is part of its diff.
	homeDir = KandevDir + "/home"
	tmpDir  = "/tmp"
	// container is the agent's container's name.
	container = "agent"
	// keeper is the container that keeps the worktree reachable: it runs
	// nothing but a wait, so the worktree can be fetched back after the
	// agent has ended (a terminated container takes no exec).
	keeper = "worktree"
)

// DefaultUID is the user the agent runs as when the profile names none:
// never root.
const DefaultUID = 65534

// PodSpec is what one session's pod is made from.
type PodSpec struct {
	// SessionID, TaskID and HomeID label the pod (SessionID also names it).
	SessionID string
	TaskID    string
	HomeID    string
	// Image is the profile's image (the agent and what it needs in it).
	Image string
	// Command and Args are the agent's; they run once kandev's binary is
	// in place (the container's shell waits for the ready mark).
	Command string
	Args    []string
	// Env is KEY=VALUE, as agent.Spec's.
	Env []string
	// UID is the agent's user (0 = DefaultUID). Root is refused.
	UID int64
	// CPU and Memory are the container's requests and limits ("" = none),
	// in Kubernetes' quantities ("500m", "1Gi").
	CPU    string
	Memory string
	// Grace is the pod's termination grace in seconds (the agent's time
	// between SIGTERM and SIGKILL on a delete).
	Grace int64
	// MCP says the agent's `kandev mcp` reaches the daemon: the pod runs
	// kube-relay at MCPSocket (KANDEV_SOCKET in its environment), and the
	// daemon carries its connections with Session.ForwardMCP. Needs
	// kandev's binary carried in.
	MCP bool
	// PullNever says the image is on the node already (imported, never
	// pulled): imagePullPolicy Never. Otherwise IfNotPresent.
	PullNever bool
}

var nameUnsafe = regexp.MustCompile(`[^a-z0-9-]+`)

// PodName is the pod's name for a session: "kandev-" and the session id,
// lowercased, anything a DNS label refuses turned into '-'.
func PodName(session string) string {
	n := "kandev-" + strings.Trim(nameUnsafe.ReplaceAllString(strings.ToLower(session), "-"), "-")
	if len(n) > validation.DNS1123LabelMaxLength {
		n = strings.TrimRight(n[:validation.DNS1123LabelMaxLength], "-")
	}
	return n
}

// labelValue makes v a valid label value, or says why it cannot.
func labelValue(what, v string) (string, error) {
	if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
		return "", fmt.Errorf("kube: %s %q is not a label value: %s", what, v, strings.Join(errs, "; "))
	}
	return v, nil
}

// SessionSelector selects the pods of one session of a home.
func SessionSelector(home, session string) string {
	return LabelManagedBy + "=" + ManagedBy + "," + LabelHome + "=" + home + "," + LabelSession + "=" + session
}

// HomeSelector selects every pod a home's daemons made.
func HomeSelector(home string) string {
	return LabelManagedBy + "=" + ManagedBy + "," + LabelHome + "=" + home
}

// waitScript is the agent container's shell: it waits until kandev has
// put its binary in place (the ready mark), starts the MCP relay when the
// pod carries MCP (and waits until it listens), then becomes the agent,
// in the work directory, so the agent is the container's main process and
// its stdin is the attach stream. (A background job of a non-interactive
// shell reads /dev/null, so the relay never takes the agent's stdin.)
const waitScript = `while [ ! -e ` + readyPath + ` ]; do sleep 0.1; done
if [ -n "$KANDEV_KUBE_RELAY" ]; then
  mkdir -p ` + KandevDir + `/run
  ` + BinaryPath + ` kube-relay serve ` + MCPSocket + ` ` + relaySocket + ` &
  while [ ! -S ` + MCPSocket + ` ]; do kill -0 $! || exit 111; sleep 0.05; done
fi
cd ` + WorkDir + ` && exec "$@"`

// keeperScript waits, ending at once on SIGTERM (a shell that is PID 1
// ignores it otherwise).
const keeperScript = `trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done`

// BuildPod makes the pod for s, or says what in s is wrong.
func BuildPod(s PodSpec) (*corev1.Pod, error) {
	if s.SessionID == "" {
		return nil, errors.New("kube: a pod needs its session's id")
	}
	if s.Image == "" {
		return nil, errors.New("kube: a pod needs an image (the profile's --image)")
	}
	if s.Command == "" {
		return nil, errors.New("kube: a pod needs the agent's command")
	}
	if s.UID < 0 {
		return nil, fmt.Errorf("kube: uid %d is not a user", s.UID)
	}
	if s.UID == 0 {
		s.UID = DefaultUID
	}
	labels := map[string]string{LabelManagedBy: ManagedBy}
	for _, l := range []struct{ key, what, v string }{
		{LabelSession, "session id", s.SessionID},
		{LabelTask, "task id", s.TaskID},
		{LabelHome, "home id", s.HomeID},
	} {
		if l.v == "" {
			continue
		}
		v, err := labelValue(l.what, l.v)
		if err != nil {
			return nil, err
		}
		labels[l.key] = v
	}
	var env []corev1.EnvVar
	for _, kv := range s.Env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("kube: environment entry %q is not KEY=VALUE", kv)
		}
		env = append(env, corev1.EnvVar{Name: k, Value: v})
	}
	env = append(env, corev1.EnvVar{Name: "HOME", Value: homeDir}, corev1.EnvVar{Name: "TMPDIR", Value: tmpDir})
	if s.MCP {
		env = append(env, corev1.EnvVar{Name: "KANDEV_KUBE_RELAY", Value: "1"}, corev1.EnvVar{Name: "KANDEV_SOCKET", Value: MCPSocket})
	}
	res := corev1.ResourceRequirements{}
	for _, q := range []struct {
		name corev1.ResourceName
		v    string
	}{{corev1.ResourceCPU, s.CPU}, {corev1.ResourceMemory, s.Memory}} {
		if q.v == "" {
			continue
		}
		qty, err := resource.ParseQuantity(q.v)
		if err != nil {
			return nil, fmt.Errorf("kube: %s %q: %v", q.name, q.v, err)
		}
		if res.Limits == nil {
			res.Limits, res.Requests = corev1.ResourceList{}, corev1.ResourceList{}
		}
		res.Limits[q.name], res.Requests[q.name] = qty, qty
	}
	grace := s.Grace
	if grace <= 0 {
		grace = 5
	}
	pull := corev1.PullIfNotPresent
	if s.PullNever {
		pull = corev1.PullNever
	}
	f, t := false, true
	uid := s.UID
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: PodName(s.SessionID), Labels: labels},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			AutomountServiceAccountToken:  &f,
			EnableServiceLinks:            &f,
			TerminationGracePeriodSeconds: &grace,
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   &t,
				RunAsUser:      &uid,
				RunAsGroup:     &uid,
				FSGroup:        &uid,
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Volumes: []corev1.Volume{
				{Name: "kandev", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			},
			Containers: []corev1.Container{{
				Name:            container,
				Image:           s.Image,
				ImagePullPolicy: pull,
				Command:         append([]string{"/bin/sh", "-c", waitScript, "kandev-agent", s.Command}, s.Args...),
				Env:             env,
				// ACP is the attach stream: the agent's stdin, once; no tty.
				Stdin:     true,
				StdinOnce: true,
				TTY:       false,
				Resources: res,
				SecurityContext: &corev1.SecurityContext{
					Privileged:               &f,
					AllowPrivilegeEscalation: &f,
					ReadOnlyRootFilesystem:   &t,
					RunAsNonRoot:             &t,
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
				VolumeMounts: []corev1.VolumeMount{
					{Name: "kandev", MountPath: KandevDir},
					{Name: "work", MountPath: WorkDir},
					{Name: "tmp", MountPath: tmpDir},
				},
			}},
		},
	}
	k := pod.Spec.Containers[0]
	k.Name, k.Stdin, k.StdinOnce = keeper, false, false
	k.Command = []string{"/bin/sh", "-c", keeperScript}
	k.Env = []corev1.EnvVar{{Name: "HOME", Value: homeDir}, {Name: "TMPDIR", Value: tmpDir}}
	k.Resources = corev1.ResourceRequirements{}
	pod.Spec.Containers = append(pod.Spec.Containers, k)
	return pod, nil
}
