package daemon_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The docker rows of the trust tests (trust_test.go): the attacking
// agent needs git and a few file tools inside its container, which the
// image of docker_test.go does not carry. trustImage imports, offline, a
// root file system holding them (each with the libraries it links, which
// also serve the kandev binary the daemon mounts in), never pulled.

// trustTools are the programs the planting scripts run in a container.
var trustTools = []string{"sh", "git", "cat", "ls", "echo", "rm", "touch", "chmod", "mkdir", "cp", "mv", "ln",
	"mkfifo", "base64", "truncate", "head", "tail", "tr", "yes", "env", "true", "false", "sleep", "id", "kill", "printf", "test"}

// trustImage imports an image with trustTools and the libraries kandev
// links, and removes it when the test ends.
func trustImage(t testing.TB, e engine, kandev string) string {
	t.Helper()
	root := t.TempDir()
	// The system's top-level links (/bin -> usr/bin on a merged /usr), as
	// they are, so every path a tool or library is found at resolves.
	for _, top := range []string{"bin", "sbin", "lib", "lib32", "lib64", "libx32"} {
		if target, err := os.Readlink("/" + top); err == nil && !filepath.IsAbs(target) {
			if err := os.MkdirAll(filepath.Join(root, target), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, filepath.Join(root, top)); err != nil {
				t.Fatal(err)
			}
		}
	}
	copied := map[string]bool{}
	place := func(path string) {
		real, err := filepath.EvalSymlinks(path)
		if err != nil {
			return
		}
		if !copied[real] {
			copied[real] = true
			b, err := os.ReadFile(real)
			if err != nil {
				t.Fatal(err)
			}
			dst := filepath.Join(root, real)
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(dst, b, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if real != path {
			link := filepath.Join(root, path)
			if _, err := os.Lstat(link); err != nil {
				_ = os.MkdirAll(filepath.Dir(link), 0o755)
				_ = os.Symlink(real, link)
			}
		}
	}
	libs := func(bin string) {
		out, _ := exec.Command("ldd", bin).Output()
		for _, f := range strings.Fields(string(out)) {
			if strings.HasPrefix(f, "/") {
				place(f)
			}
		}
	}
	for _, tool := range trustTools {
		p, err := exec.LookPath(tool)
		if err != nil {
			continue // a shell builtin (printf, test) without a binary
		}
		place(p)
		libs(p)
	}
	if _, err := os.Stat(filepath.Join(root, "usr/bin/git")); err != nil {
		t.Fatalf("git is not on PATH, or not copied into the image: %v", err)
	}
	libs(kandev)
	for _, d := range []string{"tmp", "proc", "dev", "etc", "usr/share/git-core/templates"} {
		_ = os.MkdirAll(filepath.Join(root, d), 0o755)
	}
	image := fmt.Sprintf("kandev-trust-agent:%d", time.Now().UnixNano())
	tarCmd := exec.Command("tar", "-C", root, "-c", ".")
	imp := e.command("import", "-", image)
	pipe, err := tarCmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	imp.Stdin = pipe
	var stderr bytes.Buffer
	imp.Stderr = &stderr
	if err := tarCmd.Start(); err != nil {
		t.Fatal(err)
	}
	if err := imp.Run(); err != nil {
		t.Fatalf("%s import: %v %s", e.name, err, stderr.String())
	}
	_ = tarCmd.Wait()
	t.Cleanup(func() { _ = e.command("rmi", "--force", image).Run() })
	return image
}
