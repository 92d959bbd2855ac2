package store

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// The sandbox is fixed at creation and a child is never less confined
// than its parent, below the engine too: every write path is refused.
func TestSandboxTriggers(t *testing.T) {
	db := openFreshDB(t)
	ctx := context.Background()
	root := i2Task("sbroot", "")
	root.Sandbox = "bwrap"
	mustInsert(t, db, root)
	if _, err := db.sql.ExecContext(ctx, `UPDATE tasks SET sandbox = 'none' WHERE id = 'sbroot'`); err == nil ||
		!strings.Contains(err.Error(), "sandbox is fixed at creation") {
		t.Fatalf("update of sandbox: %v", err)
	}
	weak := i2Task("sbweak", "sbroot")
	weak.Sandbox = "none"
	if err := db.InsertTask(ctx, weak); !errors.Is(err, ErrConstraint) || !strings.Contains(err.Error(), "less confined") {
		t.Fatalf("a child less confined than its parent: %v", err)
	}
	for _, mode := range []string{"bwrap", "docker", "podman"} {
		c := i2Task("sb"+mode[:4], "sbroot")
		c.Sandbox = mode
		mustInsert(t, db, c)
	}
	box := i2Task("sbbox", "sbdock")
	box.Sandbox = "bwrap"
	if err := db.InsertTask(ctx, box); !errors.Is(err, ErrConstraint) {
		t.Fatalf("bwrap under docker: %v", err)
	}
	bad := i2Task("sbbad", "")
	bad.Sandbox = "chroot"
	if err := db.InsertTask(ctx, bad); !errors.Is(err, ErrConstraint) {
		t.Fatalf("unknown mode: %v", err)
	}
	// A task written without one ran on the host.
	mustInsert(t, db, i2Task("sbold", ""))
	got, err := db.GetTask(ctx, "sbold")
	if err != nil || got.Sandbox != "none" {
		t.Fatalf("default sandbox %q, %v", got.Sandbox, err)
	}
	got, err = db.GetTask(ctx, "sbroot")
	if err != nil || got.Sandbox != "bwrap" {
		t.Fatalf("read back %q, %v", got.Sandbox, err)
	}
	views, err := db.TaskViews(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range views {
		if v.ID == "sbdock" && v.Sandbox != "docker" {
			t.Fatalf("view of sbdock: sandbox %q", v.Sandbox)
		}
	}
}

func TestProfileSandboxFields(t *testing.T) {
	db := openFreshDB(t)
	ctx := context.Background()
	p := Profile{Name: "boxed", Command: "agent", Sandbox: "docker", Image: "img:1", Paths: []string{"~/.a", "ro:/etc/x"}, NoNetwork: true}
	if err := db.UpsertProfile(ctx, p); err != nil {
		t.Fatal(err)
	}
	got, err := db.GetProfile(ctx, "boxed")
	if err != nil {
		t.Fatal(err)
	}
	if got.Sandbox != "docker" || got.Image != "img:1" || strings.Join(got.Paths, ",") != "~/.a,ro:/etc/x" || !got.NoNetwork {
		t.Fatalf("read back %+v", got)
	}
}
