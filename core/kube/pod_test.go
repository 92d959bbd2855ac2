package kube

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestBuildPodConfines(t *testing.T) {
	p, err := BuildPod(PodSpec{SessionID: "S01ABC", TaskID: "t1", HomeID: "h1", Image: "img:1",
		Command: "claude", Args: []string{"--x"}, Env: []string{"A=b=c"}, CPU: "500m", Memory: "1Gi", PullNever: true})
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "kandev-s01abc" {
		t.Errorf("name %q", p.Name)
	}
	for k, v := range map[string]string{LabelManagedBy: "kandev", LabelSession: "S01ABC", LabelTask: "t1", LabelHome: "h1"} {
		if p.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, p.Labels[k], v)
		}
	}
	s := p.Spec
	if s.RestartPolicy != corev1.RestartPolicyNever || *s.AutomountServiceAccountToken || *s.EnableServiceLinks {
		t.Errorf("restart %s, token %v, service links %v", s.RestartPolicy, *s.AutomountServiceAccountToken, *s.EnableServiceLinks)
	}
	if !*s.SecurityContext.RunAsNonRoot || *s.SecurityContext.RunAsUser != DefaultUID ||
		s.SecurityContext.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod security context %+v", s.SecurityContext)
	}
	c := s.Containers[0]
	sc := c.SecurityContext
	if *sc.Privileged || *sc.AllowPrivilegeEscalation || !*sc.ReadOnlyRootFilesystem || !*sc.RunAsNonRoot ||
		len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" || len(sc.Capabilities.Add) != 0 {
		t.Errorf("container security context %+v", sc)
	}
	if !c.Stdin || !c.StdinOnce || c.TTY {
		t.Errorf("stdin %v once %v tty %v: ACP needs the attach stream's stdin, once, without a tty", c.Stdin, c.StdinOnce, c.TTY)
	}
	if c.ImagePullPolicy != corev1.PullNever {
		t.Errorf("pull policy %s", c.ImagePullPolicy)
	}
	if got := c.Resources.Limits.Cpu().String(); got != "500m" {
		t.Errorf("cpu limit %s", got)
	}
	if got := c.Resources.Requests.Memory().String(); got != "1Gi" {
		t.Errorf("memory request %s", got)
	}
	if n := len(c.Command); n < 2 || c.Command[n-2] != "claude" || c.Command[n-1] != "--x" {
		t.Errorf("command %q does not end in the agent's", c.Command)
	}
	if c.Env[0].Name != "A" || c.Env[0].Value != "b=c" {
		t.Errorf("env %+v", c.Env)
	}
	if len(s.Containers) != 2 || s.Containers[1].Name != keeper || s.Containers[1].Stdin ||
		!*s.Containers[1].SecurityContext.ReadOnlyRootFilesystem || s.Containers[1].SecurityContext.Capabilities.Drop[0] != "ALL" {
		t.Errorf("the worktree's container: %+v", s.Containers[1:])
	}
	mounts := map[string]bool{}
	for _, m := range c.VolumeMounts {
		mounts[m.MountPath] = true
	}
	for _, want := range []string{KandevDir, WorkDir, "/tmp"} {
		if !mounts[want] {
			t.Errorf("no writable volume at %s (the root file system is read-only)", want)
		}
	}
}

func TestBuildPodRefuses(t *testing.T) {
	ok := PodSpec{SessionID: "s", Image: "i", Command: "a"}
	for _, c := range []struct {
		name string
		edit func(*PodSpec)
		want string
	}{
		{"no session", func(s *PodSpec) { s.SessionID = "" }, "session"},
		{"no image", func(s *PodSpec) { s.Image = "" }, "image"},
		{"no command", func(s *PodSpec) { s.Command = "" }, "command"},
		{"negative uid", func(s *PodSpec) { s.UID = -1 }, "uid"},
		{"bad env", func(s *PodSpec) { s.Env = []string{"NOEQUALS"} }, "KEY=VALUE"},
		{"bad cpu", func(s *PodSpec) { s.CPU = "lots" }, "cpu"},
		{"bad label", func(s *PodSpec) { s.TaskID = "has space" }, "label value"},
	} {
		s := ok
		c.edit(&s)
		if _, err := BuildPod(s); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want one saying %q", c.name, err, c.want)
		}
	}
	if _, err := BuildPod(ok); err != nil {
		t.Fatalf("the good spec: %v", err)
	}
}

func TestPodName(t *testing.T) {
	for in, want := range map[string]string{
		"01JABC":                 "kandev-01jabc",
		"a_b.c":                  "kandev-a-b-c",
		strings.Repeat("x", 100): "kandev-" + strings.Repeat("x", 56),
	} {
		if got := PodName(in); got != want {
			t.Errorf("PodName(%q) = %q, want %q", in, got, want)
		}
	}
}
