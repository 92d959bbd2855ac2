// Package store keeps kandev's durable state in SQLite: tasks, profiles,
// sessions, the conversation, the delivery queue and tokens. It knows nothing
// of the rules that govern them; core does.
package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Typed errors: every SQLite failure a caller can act on is mapped to one of
// these once, here, so no caller inspects driver error codes.
var (
	ErrNotFound = errors.New("not found")
	// ErrConflict: a uniqueness constraint (the row already exists).
	ErrConflict = errors.New("already exists")
	// ErrConstraint: a foreign key, check or trigger refused the write.
	ErrConstraint = errors.New("constraint violated")
	// ErrSchemaTooNew: the database was written by a newer kandev.
	ErrSchemaTooNew = errors.New("database schema is newer than this kandev")
)

// Queries holds every typed query. DB runs them on the pool, Tx inside one
// write transaction, so each query is written once.
type Queries struct{ q querier }

// DB is the handle every query hangs off.
type DB struct {
	Queries
	sql  *sql.DB
	path string
	// appendChunk is prepared once, on first use: the streamed output of
	// every agent is appended through it many times a second, and
	// preparing it in each transaction parsed it (and its trigger) again
	// each time.
	stmtMu      sync.Mutex
	appendChunk *sql.Stmt
}

// appendChunkStmt is appendChunk, prepared when first asked for.
func (db *DB) appendChunkStmt(ctx context.Context) (*sql.Stmt, error) {
	db.stmtMu.Lock()
	defer db.stmtMu.Unlock()
	if db.appendChunk == nil {
		st, err := db.sql.PrepareContext(ctx, appendChunk)
		if err != nil {
			return nil, err
		}
		db.appendChunk = st
	}
	return db.appendChunk, nil
}

// Open opens (creating if needed) the database at path and applies every
// embedded migration it has not seen. Every connection in the pool gets WAL,
// busy_timeout and foreign_keys through the DSN, so no connection can miss
// them.
func Open(ctx context.Context, path string) (*DB, error) {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	// Write transactions take the lock up front so two writers never deadlock
	// upgrading a read lock; busy_timeout then queues them.
	q.Set("_txlock", "immediate")
	dsn := "file:" + path + "?" + q.Encode()
	if err := privateFiles(path); err != nil {
		return nil, err
	}
	sdb, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	sdb.SetMaxOpenConns(8)
	sdb.SetMaxIdleConns(8)
	db := &DB{Queries: Queries{q: sdb}, sql: sdb, path: path}
	// A connection's first pragmas (switching to WAL) need the database to
	// themselves and do not wait on busy_timeout: when several processes
	// open a new database at once, retry for as long as busy_timeout would.
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := db.migrate(ctx)
		if err == nil {
			return db, nil
		}
		if !isBusy(err) || time.Now().After(deadline) || ctx.Err() != nil {
			sdb.Close()
			return nil, err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// privateFiles makes the database owner-only before SQLite opens it: the
// file is created 0600 (whatever the umask), and SQLite gives the -wal and
// -shm files it creates the database file's mode. Files an older kandev
// left readable are tightened.
func privateFiles(path string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	f.Close()
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if err := os.Chmod(p, 0o600); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("secure %s: %w", p, err)
		}
	}
	return nil
}

func isBusy(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code()&0xff == sqlite3.SQLITE_BUSY || se.Code()&0xff == sqlite3.SQLITE_LOCKED
	}
	return false
}

// Close releases the pool.
func (db *DB) Close() error {
	db.stmtMu.Lock()
	if db.appendChunk != nil {
		db.appendChunk.Close()
	}
	db.stmtMu.Unlock()
	return db.sql.Close()
}

// Path is the file the database lives in.
func (db *DB) Path() string { return db.path }

type migration struct {
	version int
	name    string
	sql     string
}

func loadMigrations() ([]migration, error) {
	entries, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		if !ok {
			return nil, fmt.Errorf("migration %s: name must be NNNN_what.sql", e.Name())
		}
		v, err := strconv.Atoi(num)
		if err != nil {
			return nil, fmt.Errorf("migration %s: %w", e.Name(), err)
		}
		body, err := fs.ReadFile(migrationFiles, "migrations/"+e.Name())
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: e.Name(), sql: string(body)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i, m := range ms {
		if m.version != i+1 {
			return nil, fmt.Errorf("migration %s: expected version %d", m.name, i+1)
		}
	}
	return ms, nil
}

// SchemaVersion is the newest migration this binary carries.
func SchemaVersion() int {
	ms, err := loadMigrations()
	if err != nil {
		return 0
	}
	return len(ms)
}

func (db *DB) migrate(ctx context.Context) error {
	return db.MigrateTo(ctx, -1)
}

// MigrateTo applies migrations up to version (all of them when version < 0).
// Tests use it to build an old database and then upgrade it.
func (db *DB) MigrateTo(ctx context.Context, version int) error {
	ms, err := loadMigrations()
	if err != nil {
		return fmt.Errorf("load migrations: %w", err)
	}
	if version < 0 || version > len(ms) {
		version = len(ms)
	}
	for {
		// Each step reads the version inside its own write transaction, so
		// two processes opening a new database never apply a step twice.
		applied := false
		err := db.tx(ctx, func(tx *sql.Tx) error {
			var current int
			if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&current); err != nil {
				return fmt.Errorf("read schema version of %s: %w", db.path, err)
			}
			if current > len(ms) {
				return fmt.Errorf("%w: %s is at schema version %d, this kandev knows up to %d; upgrade kandev",
					ErrSchemaTooNew, db.path, current, len(ms))
			}
			if current >= version {
				return nil
			}
			m := ms[current]
			if _, err := tx.ExecContext(ctx, m.sql); err != nil {
				return fmt.Errorf("apply migration %s: %w", m.name, err)
			}
			if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", m.version)); err != nil {
				return fmt.Errorf("apply migration %s: %w", m.name, err)
			}
			applied = true
			return nil
		})
		if err != nil {
			return err
		}
		if !applied {
			return nil
		}
	}
}

// Tx runs fn in one write transaction: all of it lands or none of it.
func (db *DB) Tx(ctx context.Context, fn func(*Tx) error) error {
	return db.tx(ctx, func(tx *sql.Tx) error { return fn(&Tx{Queries: Queries{q: tx}}) })
}

func (db *DB) tx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return mapErr(err)
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return mapErr(err)
	}
	return mapErr(tx.Commit())
}

// Tx is a write transaction. Queries on it see its own writes.
type Tx struct{ Queries }

// querier is what both *sql.DB and *sql.Tx offer; reads are written once
// against it and exposed on DB and Tx alike.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// mapErr turns driver errors into the package's typed errors, keeping the
// driver's text for the message.
func mapErr(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, sql.ErrNoRows) {
		return ErrNotFound
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return fmt.Errorf("%w: %s", ErrConflict, se.Error())
		case sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY, sqlite3.SQLITE_CONSTRAINT_CHECK,
			sqlite3.SQLITE_CONSTRAINT_NOTNULL, sqlite3.SQLITE_CONSTRAINT_TRIGGER,
			sqlite3.SQLITE_CONSTRAINT:
			return fmt.Errorf("%w: %s", ErrConstraint, se.Error())
		}
	}
	return err
}

// collect scans every row of a query with scan, closing the rows. what
// names the query in errors.
func collect[T any](rows *sql.Rows, err error, what string, scan func(scanner) (T, error)) ([]T, error) {
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, mapErr(err))
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, mapErr(err))
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, mapErr(err))
	}
	return out, nil
}

// OpenReadOnly opens an existing database for reading only, applying no
// migration and creating nothing: what a diagnosis may do beside (or
// without) the daemon that owns the file.
func OpenReadOnly(ctx context.Context, path string) (*DB, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(5000)")
	q.Set("mode", "ro")
	sdb, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if err := sdb.PingContext(ctx); err != nil {
		sdb.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return &DB{Queries: Queries{q: sdb}, sql: sdb, path: path}, nil
}

// IntegrityCheck runs PRAGMA integrity_check: ["ok"] for a sound database,
// else SQLite's list of problems.
func (db *DB) IntegrityCheck(ctx context.Context) ([]string, error) {
	rows, err := db.sql.QueryContext(ctx, "PRAGMA integrity_check")
	if err != nil {
		return nil, fmt.Errorf("integrity check: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, fmt.Errorf("integrity check: %w", err)
		}
		out = append(out, s)
	}
	return out, rows.Err()
}
