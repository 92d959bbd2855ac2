package engine

import "context"

// IntegrityCheck runs SQLite's integrity check on the daemon's own
// connection, so `kandev doctor` needs no second handle on a database the
// daemon holds.
func (ts *Tasks) IntegrityCheck(ctx context.Context) ([]string, error) {
	return ts.k.db.IntegrityCheck(ctx)
}
