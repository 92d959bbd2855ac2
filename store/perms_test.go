package store

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// The database and its -wal and -shm files are owner-only whatever the
// umask, and files left readable by an older kandev are tightened at open.
func TestDatabaseFilesArePrivate(t *testing.T) {
	old := syscall.Umask(0o002)
	defer syscall.Umask(old)
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "kandev.db")
	check := func() {
		t.Helper()
		for _, p := range []string{path, path + "-wal", path + "-shm"} {
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			if fi.Mode().Perm() != 0o600 {
				t.Errorf("%s has mode %o, want 600", filepath.Base(p), fi.Mode().Perm())
			}
		}
	}
	db, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	check() // the open migrated (wrote), so -wal and -shm exist
	db.Close()

	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if err := os.Chmod(p, 0o644); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if _, err := os.Stat(p); os.IsNotExist(err) {
			if err := os.WriteFile(p, nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	db, err = Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	check()
}
