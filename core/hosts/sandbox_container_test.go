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
			user, keepID, err := r.prepareEngine(context.Background())
			if c.want == "" {
				if want := strconv.Itoa(os.Getuid()) + ":" + strconv.Itoa(os.Getgid()); err != nil || user != want || keepID {
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

// fakeDocker is a docker on the fake host that logs its arguments and
// lists container c1 for any ps.
func fakeDocker(t *testing.T, p *Pool) string {
	t.Helper()
	sh, _ := os.Readlink(filepath.Join(p.Dir, "bin", "sh"))
	log := filepath.Join(p.Dir, "docker.log")
	script := "#!" + sh + "\necho \"$*\" >> " + log + "\ncase $1 in ps) echo c1;; esac\n"
	if err := os.WriteFile(filepath.Join(p.Dir, "bin", "docker"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return log
}

// TestSweepRemovesContainers: the host sweep after a kill -9, and a stop,
// remove a session's container through the engine its marker names (by
// the session's label), and ask no engine of a session without one.
func TestSweepRemovesContainers(t *testing.T) {
	p := fakeHost(t, "sh", "tr", "grep", "rm", "sleep", "cat")
	log := fakeDocker(t, p)
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "run"), 0o700); err != nil {
		t.Fatal(err)
	}
	marker := containerMarker(dir, "s1", "docker")
	if err := os.WriteFile(marker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	target := Target{Name: "fake", Dest: Dest{Host: "fake"}}
	if _, err := SweepSessions(context.Background(), p, target, dir, []string{"s1", "s2"}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(log)
	if want := "ps --all --quiet --filter label=kandev.session=s1\nrm --force c1\n"; string(b) != want {
		t.Fatalf("the sweep asked docker:\n%s\nwant:\n%s", b, want)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatalf("the container marker is left: %v", err)
	}

	// A stop does the same for its session.
	os.Remove(log)
	if err := os.WriteFile(containerMarker(dir, "s3", "docker"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	r := &Remote{Pool: p, Target: target, dir: dir}
	if err := r.KillSession(context.Background(), "s3", filepath.Join(dir, "run", "s3.sock")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(log); string(b) != "ps --all --quiet --filter label=kandev.session=s3\nrm --force c1\n" {
		t.Fatalf("the stop asked docker:\n%s", b)
	}
}

// TestPrepareEngineRootlessPodman: a rootless podman's container runs
// with keep-id, so --user is the remote account itself.
func TestPrepareEngineRootlessPodman(t *testing.T) {
	p := fakeHost(t, "sh", "tail", "id")
	sh, _ := os.Readlink(filepath.Join(p.Dir, "bin", "sh"))
	script := "#!" + sh + "\ncase \"$*\" in *Rootless*) echo true;; esac\nexit 0\n"
	if err := os.WriteFile(filepath.Join(p.Dir, "bin", "podman"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	r := &Remote{Pool: p, Target: Target{Name: "fake", Dest: Dest{Host: "fake"}}, Sandbox: &Sandbox{Mode: "podman", TaskID: "t1", Image: "img:1"}}
	if _, keepID, err := r.prepareEngine(context.Background()); err != nil || !keepID {
		t.Fatalf("prepareEngine of a rootless podman: keep-id %v, %v", keepID, err)
	}
}
