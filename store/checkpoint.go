package store

import (
	"context"
	"time"
)

// checkpointEvery is how often the write-ahead log is copied back into
// the database file.
//
// SQLite's own checkpoint runs inside the commit that takes the log past
// 1,000 pages, and syncs the log and the database file there: while
// fifty agents stream, one commit in a second or so (the stream flusher's,
// holding every streaming recorder) took 40–90 ms more on this machine's
// disk, and every follower saw it. The connections therefore never
// checkpoint when they commit (wal_autocheckpoint 0, in Open's DSN); this
// loop does, passively (it waits for no reader or writer and none waits
// for it), off every write's path. A log with nothing new to copy costs
// nothing but the wake.
const checkpointEvery = time.Second

// startCheckpoints runs the checkpoint loop until Close.
func (db *DB) startCheckpoints() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	db.stopCheckpoints = func() {
		cancel()
		<-done
	}
	go func() {
		defer close(done)
		t := time.NewTicker(checkpointEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				// A checkpoint that fails (the database closing, a disk
				// error) leaves the log to the next one, as SQLite's own
				// would; the writes themselves report their errors.
				_ = db.checkpoint(ctx)
			}
		}
	}()
}

// checkpoint copies what it can of the log into the database without
// waiting on any lock.
func (db *DB) checkpoint(ctx context.Context) error {
	var busy, log, done int
	return db.sql.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &log, &done)
}
