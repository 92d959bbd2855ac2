package engine

import "context"

// IntegrityCheck runs SQLite's integrity check on the daemon's own
// connection, so `kandev doctor` needs no second handle on a database the
// daemon holds.
func (e *Engine) IntegrityCheck(ctx context.Context) ([]string, error) {
	return e.db.IntegrityCheck(ctx)
}
