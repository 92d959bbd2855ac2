package store

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// A read-only open creates nothing, migrates nothing, refuses writes, and
// still runs the integrity check.
func TestOpenReadOnly(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "kandev.db")
	if _, err := OpenReadOnly(ctx, path); err == nil {
		t.Fatal("opened a database that does not exist")
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("the read-only open created %s: %v", path, err)
	}
	db, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	ro, err := OpenReadOnly(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	res, err := ro.IntegrityCheck(ctx)
	if err != nil || len(res) != 1 || res[0] != "ok" {
		t.Fatalf("integrity: %v, %v", res, err)
	}
	if _, err := ro.ListProfiles(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ro.UpsertProfile(ctx, Profile{Name: "x", Command: "y"}); err == nil {
		t.Fatal("a read-only handle wrote")
	}
}
