package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
)

// FS is what Describe asks of the machine the agent runs on: whether a
// path is there, where its symlinks lead, an executable's first line (its
// #!), a command on PATH, the directories it makes and lists. OS is this
// machine; a host answers the same questions over ssh (core/hosts), so
// one description serves both.
type FS interface {
	// Exists is Lstat succeeding: a dangling symlink exists.
	Exists(p string) bool
	EvalSymlinks(p string) (string, error)
	// FirstLine is the file's first line, "" when it cannot be read.
	FirstLine(p string) string
	LookPath(name string) (string, error)
	MkdirAll(p string, perm os.FileMode) error
	// ReadDir lists the names in a directory.
	ReadDir(p string) ([]string, error)
	ReadFile(p string) ([]byte, error)
}

// OS is this machine's file system.
type OS struct{}

func (OS) Exists(p string) bool                      { _, err := os.Lstat(p); return err == nil }
func (OS) EvalSymlinks(p string) (string, error)     { return filepath.EvalSymlinks(p) }
func (OS) LookPath(name string) (string, error)      { return exec.LookPath(name) }
func (OS) MkdirAll(p string, perm os.FileMode) error { return os.MkdirAll(p, perm) }
func (OS) ReadFile(p string) ([]byte, error)         { return os.ReadFile(p) }

func (OS) FirstLine(p string) string {
	f, err := os.Open(p)
	if err != nil {
		return ""
	}
	defer f.Close()
	buf := make([]byte, 256)
	n, _ := f.Read(buf)
	for i, c := range buf[:n] {
		if c == '\n' {
			return string(buf[:i])
		}
	}
	return string(buf[:n])
}

func (OS) ReadDir(p string) ([]string, error) {
	ents, err := os.ReadDir(p)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(ents))
	for i, e := range ents {
		out[i] = e.Name()
	}
	return out, nil
}
