package store

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

// Commits never checkpoint (TestPragmasOnEveryPooledConnection: every
// connection has wal_autocheckpoint 0); the checkpoint loop copies the
// log into the database file by itself.
func TestCheckpointLoopCopiesTheLog(t *testing.T) {
	db := openFreshDB(t)
	ctx := context.Background()
	fi, err := os.Stat(db.Path())
	if err != nil {
		t.Fatal(err)
	}
	before := fi.Size()
	if _, err := db.sql.ExecContext(ctx, "CREATE TABLE fill (b BLOB)"); err != nil {
		t.Fatal(err)
	}
	blob := []byte(strings.Repeat("x", 64<<10))
	for range 80 { // 5 MB, past SQLite's own 1,000-page checkpoint
		if _, err := db.sql.ExecContext(ctx, "INSERT INTO fill (b) VALUES (?)", blob); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		fi, err := os.Stat(db.Path())
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() >= before+80*int64(len(blob)) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the database file is %d bytes 30 s after 5 MB were committed (%d before): nothing checkpointed", fi.Size(), before)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A read on the pool goes on while a write transaction holds the write
// lock: WAL readers have their own connections and wait for no writer.
func TestReadWhileWriteTransactionOpen(t *testing.T) {
	db := openFreshDB(t)
	ctx := context.Background()
	if err := db.InsertTask(ctx, i2Task("aaaaaa", "")); err != nil {
		t.Fatal(err)
	}
	read := make(chan error, 1)
	err := db.Tx(ctx, func(tx *Tx) error {
		if err := tx.InsertTask(ctx, i2Task("bbbbbb", "")); err != nil {
			return err
		}
		// The transaction stays open until the read outside it is done:
		// a read that waited for the writer would never end.
		go func() {
			_, err := db.GetTask(ctx, "aaaaaa")
			if err == nil {
				_, err = db.GetTask(ctx, "bbbbbb")
				switch {
				case errors.Is(err, ErrNotFound):
					err = nil
				case err == nil:
					err = errors.New("a read outside the transaction saw its uncommitted row")
				}
			}
			read <- err
		}()
		return <-read
	})
	if err != nil {
		t.Fatal(err)
	}
}
