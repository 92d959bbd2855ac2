package store

import (
	"context"
	"errors"
	"testing"
)

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
