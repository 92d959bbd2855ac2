package config

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// readSoon reads the config at path and fails the test if the read does
// not come back: a FIFO or a device must be refused, not waited on.
func readSoon(t *testing.T, path string) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := Read(path)
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(30 * time.Second): // a hang detector, not a timing claim
		t.Fatalf("reading %s hangs", path)
		return nil
	}
}

// Issue 20: a config path that is a FIFO or a link to /dev/zero is an
// error at once; a file too large is refused.
func TestReadRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.toml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero.toml")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.toml")
	if err := os.WriteFile(big, []byte("# "+strings.Repeat("x", MaxFileSize)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for path, says := range map[string]string{fifo: "not a regular file", zero: "not a regular file", big: "larger than"} {
		err := readSoon(t, path)
		if err == nil || !strings.Contains(err.Error(), says) || !strings.Contains(err.Error(), path) {
			t.Fatalf("%s: err %v; want %q naming the file", path, err, says)
		}
		if _, err := Load(func(k string) string {
			if k == PathEnv {
				return path
			}
			return ""
		}); err == nil {
			t.Fatalf("%s: Load succeeded", path)
		}
	}
}

// A file that does not parse names the file and the line, whatever the
// mistake is.
func TestReadErrorsNameTheLine(t *testing.T) {
	dir := t.TempDir()
	for body, line := range map[string]string{
		"permission = \"ask\"\n\nbogus = \"x\"\n":               ":3:",
		"permission = \"ask\"\nautopilot_permission = \"no\"\n": ":2:",
		"permission = \"ask\"\nidle_timeout = \n":               ":2",
		"[notifications]\nx = 1\n":                              ":1:",
	} {
		p := filepath.Join(dir, "config.toml")
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Read(p)
		if err == nil || !strings.Contains(err.Error(), p+line) {
			t.Fatalf("%q: err %v; want it to name %s%s", body, err, p, line)
		}
	}
}

// `config set` on a linked config writes the link's target and keeps the
// link.
func TestSetWritesThroughALink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "dotfiles", "kandev.toml")
	if err := os.MkdirAll(filepath.Dir(target), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(target, []byte("permission = \"ask\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "config.toml")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if _, err := Set(link, "autopilot_permission", "deny"); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link was replaced: %v %v", fi.Mode(), err)
	}
	f, err := Read(target)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := f.Get("autopilot_permission"); v != "deny" {
		t.Fatalf("target has autopilot_permission %q", v)
	}
	if v, _ := f.Get("permission"); v != "ask" {
		t.Fatalf("target lost permission: %q", v)
	}
}
