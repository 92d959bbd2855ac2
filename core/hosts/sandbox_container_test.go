package hosts

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kandev/kandev/core/sandbox"
)

// TestPrepareEngine: a container sandbox on a host needs the host's
// engine answering the remote account and the profile's image there
// (never pulled); each lack is a SandboxError saying which, and the
// container runs as the remote account.
func TestPrepareEngine(t *testing.T) {
	for _, c := range []struct {
		name, docker, image, want string
	}{
		{"no image in the profile", "", "", "sandbox docker on host fake: the profile has no image"},
		{"no engine", "", "img:1", "sandbox docker on host fake: docker is not installed there"},
		{"engine refuses the account", "case $1 in info) echo 'permission denied while trying to connect to the Docker daemon socket' >&2; exit 1;; esac; exit 0",
			"img:1", "docker info fails as the remote account (give that account the engine: its group, or DOCKER_HOST/CONTAINER_HOST or a docker context there; docs/hosts.md): permission denied while trying to connect"},
		{"image missing", "case $1 in image) echo 'Error: No such image: img:1' >&2; exit 1;; esac; exit 0",
			"img:1", "image img:1 is not on the host (build or load it there; kandev never pulls): Error: No such image: img:1"},
		{"ready", "exit 0", "img:1", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := fakeHost(t, "sh", "tail", "id")
			if c.docker != "" {
				sh, _ := os.Readlink(filepath.Join(p.Dir, "bin", "sh"))
				if err := os.WriteFile(filepath.Join(p.Dir, "bin", "docker"), []byte("#!"+sh+"\n"+c.docker+"\n"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			r := &Remote{Pool: p, Target: Target{Name: "fake", Dest: Dest{Host: "fake"}}, Sandbox: &Sandbox{Mode: "docker", TaskID: "t1", Image: c.image}}
			user, err := r.prepareEngine(context.Background())
			if c.want == "" {
				if want := strconv.Itoa(os.Getuid()) + ":" + strconv.Itoa(os.Getgid()); err != nil || user != want {
					t.Fatalf("prepareEngine: %q %v, want %s", user, err, want)
				}
				return
			}
			var se *SandboxError
			if !errors.As(err, &se) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("prepareEngine: %v, want a SandboxError saying %q", err, c.want)
			}
		})
	}
}

// TestRemoveContainersLabel: the host's removal finds containers by the
// label every kandev container carries.
func TestRemoveContainersLabel(t *testing.T) {
	if !strings.Contains(removeContainersLoop, `"label=`+sandbox.LabelSession+`=$sid"`) {
		t.Fatalf("the host's container removal filters by another label than %s:\n%s", sandbox.LabelSession, removeContainersLoop)
	}
}
