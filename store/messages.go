package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Message is one conversation entry.
type Message struct {
	Seq       int64
	TaskID    string
	SessionID string
	Kind      string
	Author    string
	Text      string
	Meta      string // JSON object
	Ref       string
	CreatedAt time.Time
	UpdatedAt time.Time
	// Chunks is 1 when batches were appended to the entry since it was
	// last written whole; a read returns them joined in (ADR 0050).
	Chunks int
}

// ChunkOutput is the chunk field that appends to a tool call's $.output;
// the empty field appends to the text.
const ChunkOutput = "output"

const messageColumns = `seq, task_id, COALESCE(session_id, ''), kind, author, text, meta, ref, created_at, updated_at, chunks`

func scanMessage(s scanner) (Message, error) {
	var m Message
	var created, updated int64
	if err := s.Scan(&m.Seq, &m.TaskID, &m.SessionID, &m.Kind, &m.Author, &m.Text, &m.Meta, &m.Ref,
		&created, &updated, &m.Chunks); err != nil {
		return Message{}, err
	}
	m.CreatedAt, m.UpdatedAt = fromNanos(created), fromNanos(updated)
	return m, nil
}

// InsertMessage appends to a task's conversation and returns the entry
// with its sequence number.
func (q Queries) InsertMessage(ctx context.Context, m Message) (Message, error) {
	if m.Meta == "" {
		m.Meta = "{}"
	}
	res, err := q.q.ExecContext(ctx, `INSERT INTO messages (task_id, session_id, kind, author, text, meta, ref, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		m.TaskID, nullable(m.SessionID), m.Kind, m.Author, m.Text, m.Meta, m.Ref, nanos(m.CreatedAt), nanos(m.UpdatedAt))
	if err != nil {
		return Message{}, fmt.Errorf("append message to %s: %w", m.TaskID, mapErr(err))
	}
	m.Seq, err = res.LastInsertId()
	return m, err
}

// GetMessage reads one entry.
func (q Queries) GetMessage(ctx context.Context, seq int64) (Message, error) {
	m, err := scanMessage(q.q.QueryRowContext(ctx, `SELECT `+messageColumns+` FROM messages WHERE seq = ?`, seq))
	if err != nil {
		return Message{}, fmt.Errorf("message %d: %w", seq, mapErr(err))
	}
	return q.joinOne(ctx, m)
}

// MessageByRef finds the entry a tool call id or question id names.
func (q Queries) MessageByRef(ctx context.Context, ref string) (Message, error) {
	m, err := scanMessage(q.q.QueryRowContext(ctx, `SELECT `+messageColumns+` FROM messages WHERE ref = ? ORDER BY seq DESC LIMIT 1`, ref))
	if err != nil {
		return Message{}, fmt.Errorf("message %s: %w", ref, mapErr(err))
	}
	return q.joinOne(ctx, m)
}

// UpdateMessage rewrites an entry's text and meta whole: chunks appended
// to it before are dropped in the same statement (a trigger).
func (q Queries) UpdateMessage(ctx context.Context, seq int64, text, meta string, now time.Time) error {
	return q.execOne(ctx, fmt.Sprintf("update message %d", seq),
		`UPDATE messages SET text = ?, meta = ?, updated_at = ?, chunks = 0 WHERE seq = ?`, text, meta, nanos(now), seq)
}

// AppendMessageChunk appends text to an entry's text (field "") or to a
// tool call's output (ChunkOutput) without rewriting what it holds: one
// row whose size is the text's, written at now (the entry's updated_at
// from then on); the first marks the entry, by a trigger in the same
// statement (ADR 0050).
func (q Queries) AppendMessageChunk(ctx context.Context, seq int64, field, text string, now time.Time) error {
	if _, err := q.q.ExecContext(ctx, appendChunk, seq, field, text, nanos(now)); err != nil {
		return fmt.Errorf("append to message %d: %w", seq, mapErr(err))
	}
	return nil
}

// Chunk is one append: text for field Field of entry Seq.
type Chunk struct {
	Seq   int64
	Field string
	Text  string
	At    time.Time
}

// AppendMessageChunks appends to several entries in one transaction (the
// streamed output of every agent at once, ADR 0050).
// The statement is prepared once for the database (appendChunkStmt):
// parsing it for each of fifty entries was most of the write's cost, and
// again for each transaction a tenth of the flush's.
func (db *DB) AppendMessageChunks(ctx context.Context, cs []Chunk) error {
	prepared, err := db.appendChunkStmt(ctx)
	if err != nil {
		return fmt.Errorf("append to messages: %w", mapErr(err))
	}
	return db.tx(ctx, func(tx *sql.Tx) error {
		st := tx.StmtContext(ctx, prepared)
		defer st.Close()
		for _, c := range cs {
			if _, err := st.ExecContext(ctx, c.Seq, c.Field, c.Text, nanos(c.At)); err != nil {
				return fmt.Errorf("append to message %d: %w", c.Seq, mapErr(err))
			}
		}
		return nil
	})
}

const appendChunk = `INSERT INTO message_chunks (seq, field, text, at) VALUES (?, ?, ?, ?)`

// joinOne joins an entry's chunks in.
func (q Queries) joinOne(ctx context.Context, m Message) (Message, error) {
	if m.Chunks == 0 {
		return m, nil
	}
	ms := []Message{m}
	err := q.joinChunks(ctx, ms)
	return ms[0], err
}

// joinChunks assembles the entries that have chunks: their text, or
// their meta's output, followed by their chunks in order. A read returns
// what the entry would hold had every chunk rewritten it.
func (q Queries) joinChunks(ctx context.Context, ms []Message) error {
	for i := range ms {
		m := &ms[i]
		if m.Chunks == 0 {
			continue
		}
		rows, err := q.q.QueryContext(ctx, `SELECT field, text, at FROM message_chunks WHERE seq = ? ORDER BY id`, m.Seq)
		if err != nil {
			return fmt.Errorf("chunks of message %d: %w", m.Seq, mapErr(err))
		}
		var text, output strings.Builder
		text.WriteString(m.Text)
		outputs := false
		for rows.Next() {
			var field, t string
			var at int64
			if err := rows.Scan(&field, &t, &at); err != nil {
				rows.Close()
				return fmt.Errorf("chunks of message %d: %w", m.Seq, mapErr(err))
			}
			if ts := fromNanos(at); ts.After(m.UpdatedAt) {
				m.UpdatedAt = ts
			}
			if field == ChunkOutput {
				outputs = true
				output.WriteString(t)
			} else {
				text.WriteString(t)
			}
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return fmt.Errorf("chunks of message %d: %w", m.Seq, mapErr(err))
		}
		m.Text = text.String()
		if outputs {
			m.Meta = AppendMetaString(m.Meta, ChunkOutput, output.String())
		}
	}
	return nil
}

// AppendMetaString appends s to the string at key of a JSON object (set
// when absent), keeping every other member's bytes as they are.
func AppendMetaString(meta, key, s string) string {
	var obj map[string]json.RawMessage
	if json.Unmarshal([]byte(meta), &obj) != nil || obj == nil {
		obj = map[string]json.RawMessage{}
	}
	var cur string
	if raw, ok := obj[key]; ok {
		_ = json.Unmarshal(raw, &cur)
	}
	b, _ := json.Marshal(cur + s)
	obj[key] = b
	out, _ := json.Marshal(obj)
	return string(out)
}

// CompareAndSetMeta rewrites meta only while the JSON value at path still
// equals want, and reports whether it did: the atomic claim that makes a
// question's pending → answered transition happen exactly once.
func (q Queries) CompareAndSetMeta(ctx context.Context, seq int64, path, want, meta string, now time.Time) (bool, error) {
	res, err := q.q.ExecContext(ctx, `UPDATE messages SET meta = ?, updated_at = ?
		WHERE seq = ? AND json_extract(meta, ?) = ?`, meta, nanos(now), seq, path, want)
	if err != nil {
		return false, fmt.Errorf("update message %d: %w", seq, mapErr(err))
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// Messages pages a task's conversation after a sequence number.
func (q Queries) Messages(ctx context.Context, taskID string, after int64, limit int) ([]Message, error) {
	rows, err := q.q.QueryContext(ctx, `SELECT `+messageColumns+` FROM messages WHERE task_id = ? AND seq > ? ORDER BY seq LIMIT ?`,
		taskID, after, limit)
	out, err := collect(rows, err, "conversation of "+taskID, scanMessage)
	if err != nil {
		return nil, err
	}
	return out, q.joinChunks(ctx, out)
}

// MessagesBefore returns the newest limit entries of a task before a
// sequence number, in order.
func (q Queries) MessagesBefore(ctx context.Context, taskID string, before int64, limit int) ([]Message, error) {
	rows, err := q.q.QueryContext(ctx, `SELECT `+messageColumns+` FROM messages WHERE task_id = ? AND seq < ? ORDER BY seq DESC LIMIT ?`,
		taskID, before, limit)
	out, err := collect(rows, err, "conversation of "+taskID, scanMessage)
	if err != nil {
		return nil, err
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, q.joinChunks(ctx, out)
}

// LastMessageOfKind returns a task's newest entry of a kind.
func (q Queries) LastMessageOfKind(ctx context.Context, taskID, kind string) (Message, error) {
	m, err := scanMessage(q.q.QueryRowContext(ctx, `SELECT `+messageColumns+` FROM messages
		WHERE task_id = ? AND kind = ? ORDER BY seq DESC LIMIT 1`, taskID, kind))
	if err != nil {
		return Message{}, mapErr(err)
	}
	return q.joinOne(ctx, m)
}

// LastMessageWithMeta returns a task's newest entry of a kind whose meta
// has a value at the JSON path (such as "$.merge").
func (q Queries) LastMessageWithMeta(ctx context.Context, taskID, kind, path string) (Message, error) {
	m, err := scanMessage(q.q.QueryRowContext(ctx, `SELECT `+messageColumns+` FROM messages
		WHERE task_id = ? AND kind = ? AND json_extract(meta, ?) IS NOT NULL ORDER BY seq DESC LIMIT 1`, taskID, kind, path))
	if err != nil {
		return Message{}, mapErr(err)
	}
	return m, nil
}

// PermissionRemembered reports whether the task's conversation records an
// "allow always" for this tool key (a permission entry whose
// $.remember is key).
func (q Queries) PermissionRemembered(ctx context.Context, taskID, key string) (bool, error) {
	var n int
	err := q.q.QueryRowContext(ctx, `SELECT count(*) FROM messages
		WHERE task_id = ? AND kind = 'permission' AND json_extract(meta, '$.remember') = ?`, taskID, key).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("remembered permission of %s: %w", taskID, mapErr(err))
	}
	return n > 0, nil
}

// PendingQuestion returns the task's pending question entry.
func (q Queries) PendingQuestion(ctx context.Context, taskID string) (Message, error) {
	m, err := scanMessage(q.q.QueryRowContext(ctx, `SELECT `+messageColumns+` FROM messages
		WHERE task_id = ? AND kind = 'question' AND json_extract(meta, '$.status') = 'pending'
		ORDER BY seq DESC LIMIT 1`, taskID))
	if err != nil {
		return Message{}, mapErr(err)
	}
	return m, nil
}

// PendingQuestions lists every pending question, oldest first.
func (q Queries) PendingQuestions(ctx context.Context) ([]Message, error) {
	rows, err := q.q.QueryContext(ctx, `SELECT `+messageColumns+` FROM messages
		WHERE kind = 'question' AND json_extract(meta, '$.status') = 'pending' ORDER BY seq`)
	return collect(rows, err, "pending questions", scanMessage)
}
