package store

import (
	"context"
	"fmt"
	"time"
)

// Token is a hashed per-session MCP token.
type Token struct {
	Hash      string
	SessionID string
	TaskID    string
	CreatedAt time.Time
	RevokedAt time.Time
}

// InsertToken stores a token hash for a session.
func (q Queries) InsertToken(ctx context.Context, t Token) error {
	_, err := q.q.ExecContext(ctx, `INSERT INTO tokens (hash, session_id, task_id, created_at) VALUES (?, ?, ?, ?)`,
		t.Hash, t.SessionID, t.TaskID, nanos(t.CreatedAt))
	if err != nil {
		return fmt.Errorf("store token: %w", mapErr(err))
	}
	return nil
}

// GetToken finds a token by hash, revoked or not.
func (q Queries) GetToken(ctx context.Context, hash string) (Token, error) {
	var t Token
	var created, revoked int64
	err := q.q.QueryRowContext(ctx, `SELECT hash, session_id, task_id, created_at, COALESCE(revoked_at, 0)
		FROM tokens WHERE hash = ?`, hash).Scan(&t.Hash, &t.SessionID, &t.TaskID, &created, &revoked)
	if err != nil {
		return Token{}, mapErr(err)
	}
	t.CreatedAt, t.RevokedAt = fromNanos(created), fromNanos(revoked)
	return t, nil
}

// RevokeSessionTokens revokes every token of a session.
func (q Queries) RevokeSessionTokens(ctx context.Context, sessionID string, now time.Time) error {
	_, err := q.q.ExecContext(ctx, `UPDATE tokens SET revoked_at = ? WHERE session_id = ? AND revoked_at IS NULL`,
		nanos(now), sessionID)
	return mapErr(err)
}
