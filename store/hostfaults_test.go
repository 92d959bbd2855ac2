package store

import (
	"context"
	"errors"
	"testing"
)

// TestHostOutageAndSweeps: a host's outage and the sessions left to sweep
// on it are kept across opens of the database (a daemon's restart), a
// session is recorded once, and removing the host forgets its sweeps.
func TestHostOutageAndSweeps(t *testing.T) {
	ctx := context.Background()
	db := openFreshDB(t)
	if err := db.InsertHost(ctx, Host{Name: "lb", SSH: "lb", CreatedAt: i2Time}); err != nil {
		t.Fatal(err)
	}
	if h, _ := db.GetHost(ctx, "lb"); !h.UnreachableSince.IsZero() {
		t.Fatalf("a new host unreachable since %v", h.UnreachableSince)
	}
	if err := db.SetHostUnreachable(ctx, "lb", i2Time); err != nil {
		t.Fatal(err)
	}
	if err := db.SetHostUnreachable(ctx, "nosuch", i2Time); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown host: %v", err)
	}
	for _, id := range []string{"s1", "s2", "s1"} {
		if err := db.AddHostSweep(ctx, "lb", id, i2Time); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.AddHostSweep(ctx, "nosuch", "s3", i2Time); err == nil {
		t.Fatal("a sweep on an unknown host was recorded")
	}
	path := db.path
	db.Close()
	db, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if h, _ := db.GetHost(ctx, "lb"); !h.UnreachableSince.Equal(i2Time) {
		t.Fatalf("unreachable since %v after reopening, want %v", h.UnreachableSince, i2Time)
	}
	sw, err := db.HostSweeps(ctx)
	if err != nil || len(sw) != 2 || sw[0] != (HostSweep{SessionID: "s1", Host: "lb"}) || sw[1].SessionID != "s2" {
		t.Fatalf("sweeps %+v %v", sw, err)
	}
	if err := db.DoneHostSweeps(ctx, []string{"s1"}); err != nil {
		t.Fatal(err)
	}
	if err := db.SetHostUnreachable(ctx, "lb", Host{}.UnreachableSince); err != nil {
		t.Fatal(err)
	}
	if h, _ := db.GetHost(ctx, "lb"); !h.UnreachableSince.IsZero() {
		t.Fatalf("reachable again: since %v", h.UnreachableSince)
	}
	if err := db.DeleteHost(ctx, "lb"); err != nil {
		t.Fatal(err)
	}
	if sw, err := db.HostSweeps(ctx); err != nil || len(sw) != 0 {
		t.Fatalf("sweeps after the host's removal: %+v %v", sw, err)
	}
}
